//! The environment's proxy rules over HTTP: a URL that `HTTP_PROXY` covers goes
//! through the proxy (which alone can reach its host), one that `NO_PROXY` exempts goes
//! straight to its server. The rules are read once per process, so this file is a
//! test binary of its own, with one test that sets them before any client exists.

use capable_test_support::http_peer;

use std::time::Duration;

use capable::{ClientOptions, HttpConfig, Session};
use http_peer::{initialize_result, result, Peer, Reply, Seen};
use serde_json::{json, Value};

/// A legacy (2025-11-25) server without sessions: the handshake, and `ping`.
fn server(s: &Seen) -> Reply {
    let id = s.rpc_id().cloned().unwrap_or(Value::Null);
    match (s.method.as_str(), s.rpc_method()) {
        ("POST", Some("server/discover")) => Reply::Status(400, vec![]),
        ("POST", Some("initialize")) => Reply::Json(
            200,
            vec![],
            initialize_result(&id, "2025-11-25", json!({"tools": {}})),
        ),
        ("POST", Some(m)) if m.starts_with("notifications/") => Reply::Status(202, vec![]),
        ("POST", Some("ping")) => Reply::Json(200, vec![], result(&id, json!({}))),
        ("GET", _) => Reply::Status(405, vec![]),
        _ => Reply::Status(200, vec![]),
    }
}

async fn connect(url: &str) -> Session {
    let options = ClientOptions::default().with_request_timeout(Duration::from_secs(10));
    tokio::time::timeout(
        Duration::from_secs(15),
        capable::connect_http(HttpConfig::new(url.parse().unwrap()), options),
    )
    .await
    .expect("connected in time")
    .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

#[tokio::test]
async fn a_proxied_url_goes_through_the_proxy_and_an_exempt_one_goes_straight() {
    // The "proxy" is an MCP server that takes requests in a proxy's form
    // (`POST http://host/path`): the only way to reach `mcp.invalid`, a name that
    // never resolves.
    let proxy = Peer::start("/mcp", server).await;
    let direct = Peer::start("/mcp", server).await;
    // SAFETY of the environment: set before this process builds any HTTP client, in
    // the only test of this binary.
    std::env::set_var("HTTP_PROXY", format!("http://127.0.0.1:{}", proxy.port));
    std::env::set_var("NO_PROXY", "127.0.0.1");
    for name in ["http_proxy", "no_proxy", "ALL_PROXY", "all_proxy"] {
        std::env::remove_var(name);
    }

    let session = connect("http://mcp.invalid/mcp").await;
    session.ping().await.expect("a ping through the proxy");
    session.close().await;
    let through = proxy.seen();
    assert!(
        through
            .iter()
            .any(|s| s.path == "http://mcp.invalid/mcp" && s.rpc_method() == Some("ping")),
        "the ping went to the proxy, in the proxy's form: {:?}",
        through.iter().map(|s| &s.path).collect::<Vec<_>>()
    );
    assert!(through
        .iter()
        .all(|s| s.header("host") == Some("mcp.invalid")));

    let session = connect(&direct.url).await;
    session.ping().await.expect("a ping straight to the server");
    session.close().await;
    assert!(direct
        .posts("ping")
        .iter()
        .all(|s| s.path == "/mcp" && s.header("host").is_some()));
    assert_eq!(direct.posts("ping").len(), 1);
    assert!(
        proxy.seen().iter().all(|s| s.path.contains("mcp.invalid")),
        "nothing for 127.0.0.1 went through the proxy"
    );
}
