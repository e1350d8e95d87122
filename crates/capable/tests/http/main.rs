//! The HTTP transports against a scripted peer: sessions, their expiry, the negotiated
//! `MCP-Protocol-Version`, resumption with `Last-Event-ID` and `retry`, bounded
//! reconnects, DELETE on close, the modern headers, era detection over HTTP,
//! redirects, and the 2024-11-05 HTTP+SSE fallback.

mod answers;
mod modern;
mod related;

use capable_test_support::http_peer;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::{ClientOptions, Era, Error, HttpConfig, Reconnect, RequestOptions, Session};
use http_peer::{event, initialize_result, priming, result, Peer, Reply, Seen};
use serde_json::{json, Value};

fn options() -> ClientOptions {
    ClientOptions::default().with_request_timeout(Duration::from_secs(10))
}

fn config(url: &str) -> HttpConfig {
    let mut c = HttpConfig::new(url.parse().unwrap());
    c.reconnect = Reconnect {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(50),
        attempts: 3,
        reissues: 2,
        ..Reconnect::default()
    };
    c
}

async fn connect(url: &str) -> Session {
    tokio::time::timeout(
        Duration::from_secs(15),
        capable::connect_http(config(url), options()),
    )
    .await
    .expect("connect in time")
    .expect("connected")
}

fn id(s: &Seen) -> Value {
    s.rpc_id().cloned().unwrap_or(Value::Null)
}

/// Answers like a legacy Streamable HTTP server with the given extra behaviour.
fn legacy(s: &Seen, version: &str, session: Option<&str>) -> Option<Reply> {
    let sid: Vec<(String, String)> = session
        .map(|v| vec![("mcp-session-id".to_owned(), v.to_owned())])
        .unwrap_or_default();
    match (s.method.as_str(), s.rpc_method()) {
        ("POST", Some("server/discover")) => Some(Reply::Status(400, vec![])),
        ("POST", Some("initialize")) => Some(Reply::Json(
            200,
            sid,
            initialize_result(&id(s), version, json!({"tools": {}, "resources": {}})),
        )),
        ("POST", Some(m)) if m.starts_with("notifications/") => Some(Reply::Status(202, vec![])),
        ("GET", _) => Some(Reply::Status(405, vec![])),
        ("DELETE", _) => Some(Reply::Status(200, vec![])),
        _ => None,
    }
}

fn text_result(s: &Seen, text: &str) -> Reply {
    Reply::Json(
        200,
        vec![],
        result(&id(s), json!({"content": [{"type": "text", "text": text}]})),
    )
}

/// The tool a `tools/call` names.
fn tool_name(s: &Seen) -> Option<&str> {
    s.body
        .as_ref()
        .and_then(|b| b.pointer("/params/name"))
        .and_then(Value::as_str)
}

/// A legacy (2025-11-25) server with session `s`: the handshake and the rest of the
/// lifecycle answered by [`legacy`], every other request by `answer`.
async fn legacy_peer(answer: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Peer {
    Peer::start("/mcp", move |s| {
        legacy(s, "2025-11-25", Some("s")).unwrap_or_else(|| answer(s))
    })
    .await
}

/// The session still answers: a call of any other tool gets `fine`.
async fn still_fine(session: &Session) {
    let out = session
        .call_tool("other", None)
        .await
        .expect("still connected");
    assert_eq!(out.content[0]["text"], "fine");
}

/// A call of `tool` that the session gives up after 300 ms: its error.
async fn call_timing_out(session: &Session, tool: &str) -> Error {
    let options = RequestOptions {
        timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    session
        .call_tool_with(tool, None, options)
        .await
        .expect_err("no answer in time")
}

#[tokio::test]
async fn an_expired_session_is_renewed_and_the_request_retried_once_with_the_negotiated_version() {
    let sessions = Arc::new(Mutex::new(0u32));
    let peer = Peer::start("/mcp", {
        let sessions = sessions.clone();
        move |s| {
            if s.rpc_method() == Some("initialize") {
                let mut n = sessions.lock().unwrap();
                *n += 1;
                let sid = format!("s{n}");
                return legacy(s, "2025-06-18", Some(&sid)).unwrap();
            }
            if let Some(r) = legacy(s, "2025-06-18", None) {
                return r;
            }
            match s.header("mcp-session-id") {
                Some("s1") => Reply::Status(404, vec![]),
                _ => text_result(s, "ok"),
            }
        }
    })
    .await;
    let session = connect(&peer.url).await;
    assert_eq!(session.protocol_version().as_str(), "2025-06-18");
    let out = session
        .call_tool("echo", None)
        .await
        .expect("retried after a new session");
    assert_eq!(out.content[0]["text"], "ok");
    session.close().await;

    let inits = peer.posts("initialize");
    assert_eq!(inits.len(), 2, "one new session");
    assert_eq!(
        inits[1].header("mcp-session-id"),
        None,
        "a new session starts without an id"
    );
    let calls = peer.posts("tools/call");
    assert_eq!(calls.len(), 2, "retried exactly once");
    assert_eq!(calls[0].header("mcp-session-id"), Some("s1"));
    assert_eq!(calls[1].header("mcp-session-id"), Some("s2"));
    for post in peer
        .requests("POST")
        .iter()
        .filter(|p| !matches!(p.rpc_method(), Some("initialize" | "server/discover")))
    {
        assert_eq!(
            post.header("mcp-protocol-version"),
            Some("2025-06-18"),
            "the negotiated version, not the proposed one, on {:?}",
            post.rpc_method()
        );
    }
    let deletes = peer.requests("DELETE");
    assert_eq!(deletes.len(), 1, "the session is deleted on close");
    assert_eq!(deletes[0].header("mcp-session-id"), Some("s2"));
}

#[tokio::test]
async fn a_broken_response_stream_is_resumed_by_get_with_last_event_id_after_retry() {
    let call_id = Arc::new(Mutex::new(Value::Null));
    let peer = Peer::start("/mcp", {
        let call_id = call_id.clone();
        move |s| {
            if s.method == "GET" && s.header("last-event-id") == Some("e1") {
                let answer = result(
                    &call_id.lock().unwrap(),
                    json!({"content": [{"type": "text", "text": "resumed"}]}),
                );
                return Reply::Sse(
                    vec![],
                    vec![event(Some("e2"), &answer)],
                    Duration::from_secs(5),
                );
            }
            if let Some(r) = legacy(s, "2025-11-25", Some("abc")) {
                return r;
            }
            *call_id.lock().unwrap() = id(s);
            Reply::Sse(vec![], vec![priming("e1", 300)], Duration::ZERO)
        }
    })
    .await;
    let session = connect(&peer.url).await;
    let out = session
        .call_tool("slow", None)
        .await
        .expect("answer after resumption");
    assert_eq!(out.content[0]["text"], "resumed");
    let post = &peer.posts("tools/call")[0];
    let resume = peer
        .requests("GET")
        .into_iter()
        .find(|g| g.header("last-event-id").is_some())
        .expect("a GET with Last-Event-ID");
    assert_eq!(resume.header("last-event-id"), Some("e1"));
    assert_eq!(resume.header("mcp-session-id"), Some("abc"));
    let waited = resume.at.duration_since(post.at);
    assert!(
        waited >= Duration::from_millis(280),
        "waited only {waited:?}, the server asked for 300 ms"
    );
    session.close().await;
}

#[tokio::test]
async fn reconnects_of_the_standalone_stream_are_bounded_when_it_keeps_closing_empty() {
    let peer = Peer::start("/mcp", |s| {
        if s.method == "GET" {
            return Reply::Sse(vec![], vec![priming("p", 10)], Duration::ZERO);
        }
        legacy(s, "2025-11-25", Some("x")).unwrap_or_else(|| text_result(s, "ok"))
    })
    .await;
    let session = connect(&peer.url).await;
    // Wait for the transport to say it gave up (the notice log, then the event stream,
    // so that nothing is missed), then count: no wall-clock guess.
    let mut events = session.events();
    let gave_up = |n: &capable::internal::Notice| {
        matches!(n, capable::internal::Notice::StreamGivenUp { .. })
    };
    tokio::time::timeout(Duration::from_secs(10), async {
        if session.notices().iter().any(gave_up) {
            return;
        }
        loop {
            match events.recv().await {
                Ok(capable::SessionEvent::Notice(n)) if gave_up(&n) => return,
                Ok(_) => {}
                Err(e) => panic!("the session's events ended: {e}"),
            }
        }
    })
    .await
    .expect("the client gave the stream up");
    let gets = peer.requests("GET").len();
    assert_eq!(
        gets, 4,
        "one stream and 3 reconnects, then it gives up (saw {gets})"
    );
    let given_up: Vec<_> = session.notices().into_iter().filter(gave_up).collect();
    assert_eq!(given_up.len(), 1, "{given_up:?}");
    session.close().await;
}

#[tokio::test]
async fn a_redirect_to_another_origin_never_carries_authorization() {
    let target = Peer::start("/mcp", |s| {
        legacy(s, "2025-11-25", None).unwrap_or_else(|| text_result(s, "ok"))
    })
    .await;
    let target_url = target.url.clone();
    let origin = Peer::start("/mcp", move |_| {
        Reply::Status(307, vec![("location".into(), target_url.clone())])
    })
    .await;
    let mut c = config(&origin.url);
    c.headers
        .push(("Authorization".into(), "Bearer s3cret".into()));
    let session = capable::connect_http(c, options())
        .await
        .expect("connected through the redirect");
    session.call_tool("x", None).await.unwrap();
    session.close().await;
    assert!(origin
        .seen()
        .iter()
        .all(|s| s.header("authorization") == Some("Bearer s3cret")));
    assert!(!target.seen().is_empty());
    assert!(
        target
            .seen()
            .iter()
            .all(|s| s.header("authorization").is_none()),
        "the token reached another origin"
    );
}

#[tokio::test]
async fn a_2024_http_sse_server_is_reached_through_its_endpoint_event() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let rx = Arc::new(Mutex::new(Some(rx)));
    let tx = Arc::new(Mutex::new(Some(tx)));
    let peer = Peer::start("/sse", {
        let tx = tx.clone();
        move |s| match (s.method.as_str(), s.path.as_str()) {
            ("GET", "/sse") => {
                let events = rx.lock().unwrap().take().expect("one stream");
                if let Some(tx) = tx.lock().unwrap().as_ref() {
                    let _ = tx.send("event: endpoint\ndata: /message?sessionId=42\n\n".into());
                }
                Reply::Stream(events)
            }
            ("POST", p) if p.starts_with("/message") => {
                let answer = match s.rpc_method() {
                    Some("initialize") => Some(initialize_result(
                        &id(s),
                        "2024-11-05",
                        json!({"resources": {}}),
                    )),
                    Some("resources/read") => Some(result(
                        &id(s),
                        json!({"contents": [{"uri": "a://b", "text": "old but fine"}]}),
                    )),
                    Some(_) if s.rpc_id().is_some() => Some(result(&id(s), json!({}))),
                    _ => None,
                };
                if let (Some(a), Some(tx)) = (answer, tx.lock().unwrap().as_ref()) {
                    let _ = tx.send(event(None, &a));
                }
                Reply::Status(202, vec![])
            }
            _ => Reply::Status(405, vec![]),
        }
    })
    .await;
    let session = connect(&peer.url).await;
    assert_eq!(session.protocol_version().as_str(), "2024-11-05");
    let read = session.read_resource("a://b").await.unwrap();
    assert_eq!(read.text(), "old but fine");
    session.close().await;
    tx.lock().unwrap().take();
    let message_posts: Vec<Seen> = peer
        .requests("POST")
        .into_iter()
        .filter(|s| s.path.starts_with("/message"))
        .collect();
    assert!(message_posts
        .iter()
        .any(|s| s.rpc_method() == Some("initialize")));
    assert!(message_posts
        .iter()
        .all(|s| s.path == "/message?sessionId=42"));
}
