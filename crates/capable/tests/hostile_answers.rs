//! Hostile answers through the library, over a scripted in-process server: a message
//! dense with tiny values ends the session before it is decoded (memory stays a small
//! multiple of the size limit); an unreadable answer fails its request at once instead
//! of timing out; a 2025-03-26 batch is answered message by message; a server's absurd
//! `ttlMs` is capped, and said so.

mod common;

use std::time::Duration;

use capable::transport::TransportError;
use capable::{ClientOptions, Error, Method, ProtocolChoice};
use common::{within, Scripted, MANUAL};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// A legacy server speaking `version` that answers reads with `read(id)`.
fn server(version: &'static str, read: fn(&Value) -> Vec<Value>) -> Scripted {
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("initialize") => vec![capable_test_support::initialize_result(
                &id,
                version,
                json!({"resources": {}}),
            )],
            Some("resources/read") => read(&id),
            _ => Vec::new(),
        }
    }))
}

fn legacy() -> ClientOptions {
    ClientOptions::default()
        .with_protocol(ProtocolChoice::Legacy)
        .with_request_timeout(Duration::from_secs(30))
}

#[tokio::test]
async fn a_message_dense_with_tiny_values_ends_the_session_before_it_is_decoded() {
    within(LIMIT, async {
        let mut options = legacy();
        options.max_message_size = 4 << 20;
        let dense = |id: &Value| {
            // 3 MiB of zeros: well under the size limit, 1.5 million values.
            let zeros: Vec<u8> = vec![0; 1_500_000];
            vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                "contents": [], "_meta": {"pad": zeros}
            }})]
        };
        let session = capable::connect(server("2025-11-25", dense), options)
            .await
            .expect("connect");
        let err = session.read_resource(MANUAL).await.expect_err("refused");
        assert!(
            matches!(
                err,
                Error::Transport(TransportError::TooManyValues { values, limit })
                    if values > 1_400_000 && limit == 1 << 20
            ),
            "{err:?}"
        );
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn an_unreadable_answer_fails_its_request_at_once_not_by_timeout() {
    within(LIMIT, async {
        let truncated = |id: &Value| {
            vec![Value::String(format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"contents\":["
            ))]
        };
        let session = capable::connect(server("2025-11-25", truncated), legacy())
            .await
            .expect("connect");
        let started = tokio::time::Instant::now();
        let err = session.read_resource(MANUAL).await.expect_err("malformed");
        assert!(
            matches!(
                err,
                Error::MalformedResult {
                    method: Method::ReadResource,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "failed before its 30 s timeout"
        );
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn a_2025_03_26_batch_is_answered_message_by_message() {
    within(LIMIT, async {
        let batched = |id: &Value| {
            vec![json!([
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
                {"jsonrpc": "2.0", "id": id, "result": {"contents": [{"uri": MANUAL, "text": "batched"}]}}
            ])]
        };
        let session = capable::connect(server("2025-03-26", batched), legacy())
            .await
            .expect("connect");
        let read = session.read_resource(MANUAL).await.expect("read");
        assert_eq!(read.text(), "batched");
        session.close().await;
        // 2025-11-25 removed batching: the same answer is refused as it comes.
        let session = capable::connect(server("2025-11-25", batched), legacy())
            .await
            .expect("connect");
        let err = session.read_resource(MANUAL).await.expect_err("a batch");
        assert!(matches!(err, Error::MalformedResult { .. }), "{err:?}");
        session.close().await;
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn an_absurd_ttl_is_capped_and_said_so_and_a_watch_goes_on() {
    let modern = Scripted::new(Box::new(|msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("server/discover") => vec![capable_test_support::discover_result(
                &id,
                json!({"resources": {}}),
            )],
            Some("resources/read") => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "ttlMs": 1e30, "cacheScope": "public",
                "contents": [{"uri": MANUAL, "text": "fresh for ever, it says"}]
            }})],
            _ => Vec::new(),
        }
    }));
    let session = capable::connect(modern, ClientOptions::default())
        .await
        .expect("connect");
    let mut watch = session
        .watch(
            MANUAL,
            capable::WatchPolicy::poll(Duration::from_millis(100)),
        )
        .expect("a poll policy");
    let mut revisions = 0;
    while revisions == 0 {
        if let capable::WatchEvent::Revision(read) = watch.next().await.expect("no panic") {
            assert_eq!(read.ttl(), Some(capable::internal::time::MAX_TTL));
            revisions += 1;
        }
    }
    assert!(
        session.notices().iter().any(
            |n| matches!(n, capable::internal::Notice::TtlCapped { ttl_ms } if *ttl_ms == 1e30)
        ),
        "{:?}",
        session.notices()
    );
    watch.close().await.expect("close");
    session.close().await;
}

/// A legacy server with tools whose `tools/list` pages come from `page(n, id)`.
fn lister(page: fn(u64, &Value) -> Value) -> Scripted {
    let mut pages = 0u64;
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("initialize") => vec![capable_test_support::initialize_result(
                &id,
                "2025-11-25",
                json!({"tools": {}}),
            )],
            Some("tools/list") => {
                pages += 1;
                vec![page(pages, &id)]
            }
            _ => Vec::new(),
        }
    }))
}

fn tools(n: usize) -> Value {
    (0..n)
        .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
        .collect()
}

#[tokio::test]
async fn a_list_that_repeats_its_cursor_is_refused_at_once() {
    within(LIMIT, async {
        let session = capable::connect(
            lister(|_, id| json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools(1), "nextCursor": "again"}})),
            legacy(),
        )
        .await
        .expect("connect");
        let err = session.list_tools().await.expect_err("a loop");
        assert!(
            matches!(&err, Error::MalformedResult { method: Method::ListTools, detail } if detail.contains("\"again\"")),
            "{err:?}"
        );
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn an_endless_list_stops_at_its_bounds_never_fills_memory() {
    within(LIMIT, async {
        let endless = |n: u64, id: &Value| {
            json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools(100), "nextCursor": format!("p{n}")}})
        };
        let mut options = legacy();
        options.max_list_items = 1000;
        let session = capable::connect(lister(endless), options)
            .await
            .expect("connect");
        let err = session.list_tools().await.expect_err("endless");
        assert!(
            matches!(&err, Error::ListTooLong { reached, .. } if reached.contains("1000 items")),
            "{err:?}"
        );
        session.close().await;
        let mut options = legacy();
        options.max_pages = 5;
        let session = capable::connect(lister(endless), options)
            .await
            .expect("connect");
        let err = session.list_tools().await.expect_err("endless");
        assert!(
            matches!(&err, Error::ListTooLong { reached, .. } if reached.contains("5 pages")),
            "{err:?}"
        );
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn a_malformed_tool_costs_the_server_that_tool_not_its_list() {
    within(LIMIT, async {
        let session = capable::connect(
            lister(|n, id| {
                let tools = match n {
                    // The first page: a tool without a name, one whose name is no text.
                    1 => json!([{"name": "t0"}, {"description": "nameless"}, {"name": 7}]),
                    _ => tools(1),
                };
                let next = (n == 1).then_some("2");
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools, "nextCursor": next}})
            }),
            legacy(),
        )
        .await
        .expect("connect");
        let listed = session.list_tools().await.expect("the well-formed tools");
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t0", "t0"]);
        let dropped: Vec<String> = session
            .notices()
            .into_iter()
            .filter(|n| matches!(n, capable::internal::Notice::EntryDropped { .. }))
            .map(|n| n.to_string())
            .collect();
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert!(
            dropped[0].starts_with("dropped entry 1 of tools/list: missing field `name`"),
            "{dropped:?}"
        );
        session.close().await;
    })
    .await
}
