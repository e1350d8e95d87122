//! Response caching (SEP-2549) through a session, on tokio's paused clock over a
//! scripted modern server: a list is served without a request while fresh, asked
//! for again once its `ttlMs` passed or a `list_changed` said it changed; a host can
//! refresh or bypass; a read is dropped when the server says it was updated.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::internal::model::ListToolsResult;
use capable::{connect, CachePolicy, ClientOptions, ListenEvent, ListenFilter, Method};
use common::{Scripted, Wire};
use serde_json::{json, Value};

/// A modern server whose `tools/list` is fresh for 1 s and changes each time it is
/// asked (so a served-from-cache answer is told apart from a new one); after a
/// `subscriptions/listen` it sends `notifications/tools/list_changed` on the stream.
fn server(lists: Arc<Mutex<u32>>) -> Scripted {
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("server/discover") => vec![capable_test_support::discover_result(
                &id,
                json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}}),
            )],
            Some("tools/list") => {
                let mut n = lists.lock().unwrap();
                *n += 1;
                vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                    "resultType": "complete", "ttlMs": 1000, "cacheScope": "private",
                    "tools": [{"name": format!("tool-{n}"), "inputSchema": {"type": "object"}}]
                }})]
            }
            Some("resources/read") => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete", "ttlMs": 60000, "cacheScope": "public",
                "contents": [{"uri": msg["params"]["uri"], "text": "the manual"}]
            }})],
            Some("subscriptions/listen") => {
                let sub = json!({"io.modelcontextprotocol/subscriptionId": id});
                vec![
                    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                        "params": {"notifications": msg["params"]["notifications"], "_meta": sub}}),
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                        "params": {"_meta": sub}}),
                    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                        "params": {"uri": "docs://manual", "_meta": sub}}),
                ]
            }
            _ => vec![],
        }
    }))
}

fn names(tools: &[capable::internal::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_fresh_list_is_served_without_a_request_and_asked_for_again_once_stale() {
    let lists = Arc::new(Mutex::new(0));
    let wire = Wire::default();
    let session = connect(server(lists.clone()), wire.options())
        .await
        .unwrap();
    assert_eq!(names(&session.list_tools().await.unwrap()), ["tool-1"]);
    tokio::time::sleep(Duration::from_millis(999)).await;
    assert_eq!(
        names(&session.list_tools().await.unwrap()),
        ["tool-1"],
        "fresh: from the cache"
    );
    assert_eq!(
        wire.sent_requests("tools/list").len(),
        1,
        "no second request while fresh"
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        names(&session.list_tools().await.unwrap()),
        ["tool-2"],
        "stale at ttlMs"
    );
    assert_eq!(*lists.lock().unwrap(), 2);
    // discover is kept the same way (the handshake's own answer is not re-used).
    session.discover().await.unwrap();
    session.discover().await.unwrap();
    assert_eq!(
        wire.sent_requests("server/discover").len(),
        2,
        "the handshake's, then one"
    );
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn list_changed_drops_the_cached_list_and_updated_drops_the_cached_read() {
    let lists = Arc::new(Mutex::new(0));
    let wire = Wire::default();
    let session = connect(server(lists.clone()), wire.options())
        .await
        .unwrap();
    session.list_tools().await.unwrap();
    let first = session.read_resource("docs://manual").await.unwrap();
    let mut listener = session
        .listen(&ListenFilter {
            tools_list_changed: true,
            resource_subscriptions: vec!["docs://manual".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    // The acknowledgement, the list change, the update: each is routed through the
    // connection (which drops what it names) before it reaches the listener.
    for _ in 0..3 {
        match listener.recv().await.unwrap() {
            Some(ListenEvent::Acknowledged(_) | ListenEvent::Notification(_)) => {}
            None => panic!("the stream ended"),
        }
    }
    assert_eq!(
        names(&session.list_tools().await.unwrap()),
        ["tool-2"],
        "asked again"
    );
    let again = session.read_resource("docs://manual").await.unwrap();
    assert_eq!(
        wire.sent_requests("resources/read").len(),
        2,
        "the update dropped the read"
    );
    assert!(again.read_at >= first.read_at);
    listener.close();
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_host_can_refresh_or_bypass_the_cache_and_a_cached_read_keeps_its_read_time() {
    let lists = Arc::new(Mutex::new(0));
    let wire = Wire::default();
    let session = connect(
        server(lists.clone()),
        ClientOptions::default().with_tap(wire.tap()),
    )
    .await
    .unwrap();
    let first = session.read_resource("docs://manual").await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let cached = session.read_resource("docs://manual").await.unwrap();
    assert_eq!(
        cached.read_at, first.read_at,
        "served from the cache, read when it was"
    );
    assert_eq!(wire.sent_requests("resources/read").len(), 1);

    session.list_tools().await.unwrap();
    let refreshed: ListToolsResult = session
        .list_page_with(Method::ListTools, None, CachePolicy::Refresh)
        .await
        .unwrap();
    assert_eq!(names(&refreshed.tools), ["tool-2"]);
    assert_eq!(
        names(&session.list_tools().await.unwrap()),
        ["tool-2"],
        "the refresh was kept"
    );
    let bypassed: ListToolsResult = session
        .list_page_with(Method::ListTools, None, CachePolicy::Bypass)
        .await
        .unwrap();
    assert_eq!(names(&bypassed.tools), ["tool-3"]);
    assert_eq!(
        names(&session.list_tools().await.unwrap()),
        ["tool-2"],
        "a bypass keeps nothing"
    );
    session.invalidate_cache(Method::ListTools);
    assert_eq!(names(&session.list_tools().await.unwrap()), ["tool-4"]);
    session.close().await;
}

/// A legacy server that writes `ttlMs` and `cacheScope` on its results anyway (members
/// its schema does not define): nothing is kept, every call reaches the server.
#[tokio::test(start_paused = true)]
async fn a_legacy_session_keeps_nothing_whatever_its_results_carry() {
    let server = Scripted::new(Box::new(|msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("initialize") => vec![capable_test_support::initialize_result(
                &id,
                "2025-11-25",
                json!({"tools": {}, "resources": {}}),
            )],
            Some("tools/list") => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                "ttlMs": 60000, "cacheScope": "public",
                "tools": [{"name": "t", "inputSchema": {"type": "object"}}]
            }})],
            Some("resources/read") => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                "ttlMs": 60000, "cacheScope": "public",
                "contents": [{"uri": msg["params"]["uri"], "text": "the manual"}]
            }})],
            _ => vec![],
        }
    }));
    let wire = Wire::default();
    let session = connect(
        server,
        ClientOptions::default()
            .with_protocol(capable::ProtocolChoice::Legacy)
            .with_tap(wire.tap()),
    )
    .await
    .unwrap();
    for _ in 0..2 {
        assert_eq!(names(&session.list_tools().await.unwrap()), ["t"]);
        let read = session.read_resource("docs://manual").await.unwrap();
        assert_eq!(read.contents[0].text.as_deref(), Some("the manual"));
    }
    assert_eq!(wire.sent_requests("tools/list").len(), 2);
    assert_eq!(wire.sent_requests("resources/read").len(), 2);
    session.close().await;
}
