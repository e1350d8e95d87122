//! Routing by id through the library, over real stdio: concurrent requests, from one
//! task or from tasks spawned on a multi-thread runtime, each get their own answer and
//! their own id; lone and burst requests are each sent once, in id order; server
//! notifications reach the host; and roots the host changes reach the server.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use capable::connect_stdio;
use common::{fixture, join_all, real_peer, within, RealPeer, Wire, MANUAL};

const LIMIT: Duration = Duration::from_secs(20);
const ARCHIVE: &str = "docs://manual/archive";

fn uri_of(i: usize) -> &'static str {
    if i.is_multiple_of(2) {
        MANUAL
    } else {
        ARCHIVE
    }
}

#[track_caller]
fn assert_own_answer(i: usize, read: &capable::ResourceRead) {
    let uri = uri_of(i);
    assert_eq!(read.uri, uri, "request {i}");
    assert_eq!(
        read.contents[0].uri, uri,
        "request {i} got another request's answer"
    );
    let text = read.text();
    if uri == MANUAL {
        assert!(
            text.starts_with("Acceptance instructions"),
            "request {i}: {text}"
        );
    } else {
        assert_eq!(text, "Earlier instructions.", "request {i}");
    }
}

#[track_caller]
fn assert_distinct_ids(wire: &Wire, count: usize) {
    let ids: HashSet<String> = wire
        .sent_requests("resources/read")
        .iter()
        .map(|m| m["id"].to_string())
        .collect();
    assert_eq!(ids.len(), count, "every request has its own id");
}

#[tokio::test]
async fn sixty_four_concurrent_reads_on_one_task_each_get_their_own_answer() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("read-only")).await;
        let reads = join_all((0..64).map(|i| session.read_resource(uri_of(i))).collect()).await;
        for (i, read) in reads.iter().enumerate() {
            assert_own_answer(i, read.as_ref().expect("read"));
        }
        session.close().await;
        assert_distinct_ids(&wire, 64);
    })
    .await
}

/// Lone requests go out from their caller's task, bursts through the writer task in
/// one write: either way each request is sent once, whole, in the order of its id.
#[tokio::test]
async fn lone_and_burst_requests_are_each_sent_once_in_id_order() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("read-only")).await;
        let mut i = 0;
        for _ in 0..3 {
            assert_own_answer(i, &session.read_resource(uri_of(i)).await.expect("read"));
            i += 1;
        }
        let burst = join_all(
            (i..i + 16)
                .map(|j| session.read_resource(uri_of(j)))
                .collect(),
        )
        .await;
        for (j, read) in burst.iter().enumerate() {
            assert_own_answer(i + j, read.as_ref().expect("read"));
        }
        i += 16;
        for _ in 0..3 {
            assert_own_answer(i, &session.read_resource(uri_of(i)).await.expect("read"));
            i += 1;
        }
        session.close().await;
        let ids: Vec<i64> = wire
            .sent_requests("resources/read")
            .iter()
            .map(|m| m["id"].as_i64().expect("an integer id"))
            .collect();
        assert_eq!(ids.len(), 22, "each request sent once: {ids:?}");
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "sent in id order: {ids:?}"
        );
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_reads_from_spawned_tasks_on_a_multi_thread_runtime_each_get_their_own_answer() {
    within(LIMIT, async {
        let wire = Wire::default();
        let session = Arc::new(
            connect_stdio(&fixture("read-only"), wire.options())
                .await
                .expect("connect"),
        );
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let session = session.clone();
                tokio::spawn(async move { (i, session.read_resource(uri_of(i)).await) })
            })
            .collect();
        for task in tasks {
            let (i, read) = task.await.expect("the task did not panic");
            assert_own_answer(i, &read.expect("read"));
        }
        let session = Arc::into_inner(session).expect("every task is done");
        session.close().await;
        assert_distinct_ids(&wire, 64);
    })
    .await
}

#[tokio::test]
async fn the_notification_stream_delivers_server_everythings_tools_list_changed() {
    let Some(server) = real_peer(RealPeer::Everything) else {
        return;
    };
    within(LIMIT, async {
        let (session, _wire) = common::connect_wire(&server).await;
        let mut notifications = session.notifications().expect("the stream, taken once");
        assert!(
            session.notifications().is_none(),
            "the stream can be taken once"
        );
        let mut seen = Vec::new();
        let found = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(n) = notifications.recv().await {
                if n.method == "notifications/tools/list_changed" {
                    return true;
                }
                seen.push(n.method);
            }
            false
        })
        .await;
        assert_eq!(
            found,
            Ok(true),
            "no notifications/tools/list_changed; saw {seen:?}"
        );
        session.close().await;
    })
    .await
}

/// The roots the host changes mid-session reach server-everything: capable declares
/// `roots.listChanged`, sends `notifications/roots/list_changed` on the change, and the
/// server's next `roots/list` gets the new list (its `get-roots-list` tool says so).
#[tokio::test]
async fn changed_roots_reach_server_everything() {
    let Some(server) = real_peer(RealPeer::Everything) else {
        return;
    };
    within(LIMIT, async {
        let first = capable::Root {
            uri: "file:///tmp/first".into(),
            name: Some("first".into()),
        };
        let roots = capable::Roots::new(vec![first]);
        let wire = Wire::default();
        let mut options = wire.options();
        options.handlers.roots = Some(roots.clone());
        let session = connect_stdio(&server, options).await.expect("connect");
        let init = wire.sent_requests("initialize");
        assert_eq!(
            init[0]["params"]["capabilities"]["roots"],
            serde_json::json!({"listChanged": true})
        );
        assert!(roots_listed(&session).await.contains("file:///tmp/first"));
        roots.set(vec![capable::Root {
            uri: "file:///tmp/second".into(),
            name: Some("second".into()),
        }]);
        wire.until_sent("the change told", |sent| {
            sent.iter()
                .any(|m| m["method"] == "notifications/roots/list_changed")
        })
        .await;
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let now = roots_listed(&session).await;
            if now.contains("file:///tmp/second") {
                assert!(!now.contains("file:///tmp/first"), "{now}");
                break;
            }
            assert!(std::time::Instant::now() < until, "still {now}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        session.close().await;
    })
    .await
}

/// What server-everything's `get-roots-list` says.
async fn roots_listed(session: &capable::Session) -> String {
    let r = session.call_tool("get-roots-list", None).await.unwrap();
    serde_json::to_string(&r.content).unwrap()
}
