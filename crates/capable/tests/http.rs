//! The HTTP transports against a scripted peer: sessions, their expiry, the negotiated
//! `MCP-Protocol-Version`, resumption with `Last-Event-ID` and `retry`, bounded
//! reconnects, DELETE on close, the modern headers, era detection over HTTP,
//! redirects, and the 2024-11-05 HTTP+SSE fallback.

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
    let gave_up =
        |n: &capable::core::Notice| matches!(n, capable::core::Notice::StreamGivenUp { .. });
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
async fn modern_posts_carry_version_method_name_and_param_headers_and_bad_tools_are_dropped() {
    let peer = Peer::start("/mcp", |s| match s.rpc_method() {
        Some("server/discover") => Reply::Json(200, vec![], result(&id(s), json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "resources": {}}, "ttlMs": 0, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-peer", "version": "2"}}
        }))),
        Some("tools/list") => Reply::Json(200, vec![], result(&id(s), json!({
            "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
            "tools": [
                {"name": "deploy", "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}}},
                {"name": "broken", "inputSchema": {"type": "object", "properties": {
                    "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}}
            ]
        }))),
        Some("resources/read") => Reply::Json(200, vec![], result(&id(s), json!({
            "resultType": "complete", "ttlMs": 5000, "cacheScope": "private",
            "contents": [{"uri": "docs://ünï", "text": "x"}]
        }))),
        _ => Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "content": []}))),
    })
    .await;
    let session = connect(&peer.url).await;
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.server_info().name, "modern-peer");
    let tools = session.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["deploy"],
        "a tool with an invalid x-mcp-header is dropped"
    );
    let args = json!({"region": "eu-west", "dry": true})
        .as_object()
        .unwrap()
        .clone();
    session.call_tool("deploy", Some(&args)).await.unwrap();
    let read = session.read_resource("docs://ünï").await.unwrap();
    assert_eq!(read.ttl_ms, Some(5000.0));
    session.close().await;

    let call = &peer.posts("tools/call")[0];
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("deploy"));
    assert_eq!(call.header("mcp-param-region"), Some("eu-west"));
    assert_eq!(call.header("mcp-param-dry-run"), Some("true"));
    let read = &peer.posts("resources/read")[0];
    assert_eq!(read.header("mcp-name"), Some("=?base64?ZG9jczovL8O8bsOv?="));
    for post in peer.requests("POST") {
        assert_eq!(
            post.header("mcp-session-id"),
            None,
            "no sessions in 2026-07-28"
        );
        assert!(
            post.header("mcp-method").is_some(),
            "every modern POST names its method"
        );
    }
    assert!(
        peer.requests("GET").is_empty(),
        "no GET stream in 2026-07-28"
    );
    assert!(
        peer.requests("DELETE").is_empty(),
        "nothing to delete in 2026-07-28"
    );
}

#[tokio::test]
async fn an_unsupported_version_error_in_a_400_keeps_the_modern_era() {
    let tries = Arc::new(Mutex::new(0));
    let peer = Peer::start("/mcp", {
        let tries = tries.clone();
        move |s| {
            let mut n = tries.lock().unwrap();
            *n += 1;
            if *n == 1 {
                return Reply::Json(
                    400,
                    vec![],
                    json!({"jsonrpc": "2.0", "id": id(s), "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
                );
            }
            Reply::Json(
                200,
                vec![],
                result(
                    &id(s),
                    json!({
                "supportedVersions": ["2026-07-28"], "capabilities": {}, "resultType": "complete"}),
                ),
            )
        }
    })
    .await;
    let session = connect(&peer.url).await;
    assert_eq!(session.era(), Era::Modern);
    assert!(
        peer.posts("initialize").is_empty(),
        "a recognised modern error never falls back"
    );
    session.close().await;
}

#[tokio::test]
async fn a_modern_request_whose_stream_breaks_is_reissued_with_a_new_id() {
    let peer = Peer::start("/mcp", |s| match s.rpc_method() {
        Some("server/discover") => Reply::Json(200, vec![], result(&id(s), json!({
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}))),
        _ if id(s).is_number() => Reply::Sse(vec![], vec![], Duration::ZERO),
        _ => Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "content": [{"type": "text", "text": "again"}]}))),
    })
    .await;
    let session = connect(&peer.url).await;
    let out = session
        .call_tool("t", None)
        .await
        .expect("answered after a re-issue");
    assert_eq!(out.content[0]["text"], "again");
    let calls = peer.posts("tools/call");
    assert_eq!(calls.len(), 2);
    assert_ne!(
        id(&calls[0]),
        id(&calls[1]),
        "a re-issued request has a new id"
    );
    session.close().await;
}

#[tokio::test]
async fn a_modern_request_is_cancelled_by_closing_its_stream_not_by_a_notification() {
    let peer = Peer::start("/mcp", |s| match s.rpc_method() {
        Some("server/discover") => Reply::Json(200, vec![], result(&id(s), json!({
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}))),
        _ if s.body.as_ref().and_then(|b| b.pointer("/params/name")) == Some(&json!("slow")) => {
            Reply::Sse(vec![], vec![], Duration::from_secs(20))
        }
        _ => Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "content": []}))),
    })
    .await;
    let session = connect(&peer.url).await;
    let err = call_timing_out(&session, "slow").await;
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    // The cancellation is queued before the next request, and messages are handed to
    // the transport in order: by the time the next call is answered, a notification
    // would have been posted.
    session.call_tool("quick", None).await.expect("answered");
    assert!(
        peer.posts("notifications/cancelled").is_empty(),
        "HTTP in 2026-07-28 sends no notifications"
    );
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

#[tokio::test]
async fn a_header_mismatch_refetches_the_tools_and_retries_once() {
    // The server renamed the header of `region` from Region to Zone after the host
    // listed its tools: the first call is refused with -32020.
    let peer = Peer::start("/mcp", |s| {
        let tool = |header: &str| {
            json!({"name": "deploy", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": header}}}})
        };
        match s.rpc_method() {
            Some("server/discover") => Reply::Json(200, vec![], result(&id(s), json!({
                "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}))),
            Some("tools/list") => {
                let refresh = id(s).as_str().is_some_and(|i| i.starts_with("capable-tools-refresh"));
                let header = if refresh { "Zone" } else { "Region" };
                Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "tools": [tool(header)]})))
            }
            Some("tools/call") if s.header("mcp-param-zone").is_none() => Reply::Json(400, vec![], json!({
                "jsonrpc": "2.0", "id": id(s), "error": {"code": -32020, "message": "Mcp-Param-Zone missing"}})),
            _ => Reply::Json(200, vec![], result(&id(s), json!({"resultType": "complete", "content": [{"type": "text", "text": "deployed"}]}))),
        }
    })
    .await;
    let session = connect(&peer.url).await;
    session.list_tools().await.unwrap();
    let args = json!({"region": "eu-west"}).as_object().unwrap().clone();
    let out = session
        .call_tool("deploy", Some(&args))
        .await
        .expect("retried after a refresh");
    assert_eq!(out.content[0]["text"], "deployed");
    let calls = peer.posts("tools/call");
    assert_eq!(calls.len(), 2, "one retry, no loop");
    assert_eq!(calls[0].header("mcp-param-region"), Some("eu-west"));
    assert_eq!(calls[1].header("mcp-param-zone"), Some("eu-west"));
    session.close().await;
}

#[tokio::test]
async fn an_http_error_is_an_http_failure_of_its_request_and_the_session_goes_on() {
    let peer = legacy_peer(|s| match tool_name(s) {
        Some("locked") => Reply::Status(401, vec![]),
        Some("broken") => Reply::Json(500, vec![], json!({"oops": true})),
        _ => text_result(s, "fine"),
    })
    .await;
    let session = connect(&peer.url).await;
    let err = session.call_tool("locked", None).await.unwrap_err();
    assert!(
        matches!(&err, Error::Http { status: 401, url, .. } if url == &peer.url),
        "{err:?}"
    );
    assert!(err.to_string().contains("authorization"), "{err}");
    let err = session.call_tool("broken", None).await.unwrap_err();
    assert!(
        matches!(&err, Error::Http { status: 500, body, .. } if body.contains("oops")),
        "{err:?}"
    );
    // Neither was a JSON-RPC answer, and neither ended the session.
    still_fine(&session).await;
    session.close().await;
}

#[tokio::test]
async fn a_broken_answer_in_a_200_fails_its_request_at_once_and_the_session_goes_on() {
    let peer = legacy_peer(|s| {
        let json = vec![("content-type".to_owned(), "application/json".to_owned())];
        match tool_name(s) {
            // The shape of a success response, a result cut short inside it.
            Some("cut") => {
                let mut body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"#, id(s));
                body.push_str(r#"{"content":[{"type":"text","text":"x"}"#);
                body.push('}');
                Reply::Raw(200, json, body.into_bytes())
            }
            // Not JSON at all.
            Some("html") => Reply::Raw(200, json, b"<html>busy</html>".to_vec()),
            _ => text_result(s, "fine"),
        }
    })
    .await;
    let session = connect(&peer.url).await;
    let started = std::time::Instant::now();
    for tool in ["cut", "html"] {
        let err = session.call_tool(tool, None).await.unwrap_err();
        assert!(
            matches!(&err, Error::MalformedResult { .. }),
            "{tool}: {err:?}"
        );
    }
    // At once, not at the 10 s request timeout.
    assert!(started.elapsed() < Duration::from_secs(5));
    still_fine(&session).await;
    session.close().await;
}

#[tokio::test]
async fn lone_and_concurrent_requests_are_each_posted_once_and_answered_by_their_own_ids() {
    lone_and_concurrent_calls(12).await;
}

/// The same on two worker threads, as a host's `#[tokio::main]` runs: callers carry out
/// their exchanges and answers are routed from whichever thread polls them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_multi_thread_runtime_every_concurrent_call_gets_its_own_answer() {
    lone_and_concurrent_calls(200).await;
}

/// Five calls one at a time, then `burst` at once: each posted once, under its own id,
/// and answered with its own answer.
async fn lone_and_concurrent_calls(burst: usize) {
    let peer = legacy_peer(|s| {
        // Each call answered with its own tool name, so a mixed-up answer shows.
        text_result(s, tool_name(s).unwrap_or(""))
    })
    .await;
    let session = connect(&peer.url).await;
    // One at a time: each POST started from its caller.
    for i in 0..5 {
        let name = format!("lone-{i}");
        let out = session.call_tool(&name, None).await.expect("answered");
        assert_eq!(out.content[0]["text"], name.as_str());
    }
    // Many at once, each from a task of its own (on any worker thread): each posted,
    // and carried out, by its own caller.
    let session = Arc::new(session);
    let calls = (0..burst).map(|i| {
        let session = session.clone();
        tokio::spawn(async move {
            let name = format!("burst-{i}");
            let out = session.call_tool(&name, None).await.expect("answered");
            assert_eq!(out.content[0]["text"], name.as_str());
        })
    });
    for call in futures_util::future::join_all(calls).await {
        call.expect("the call's task");
    }
    let session = Arc::into_inner(session).expect("every call is done");
    let posts = peer.posts("tools/call");
    assert_eq!(posts.len(), 5 + burst, "each request posted once");
    let mut ids: Vec<i64> = posts.iter().filter_map(|p| id(p).as_i64()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5 + burst, "each under an id of its own");
    session.close().await;
}

#[tokio::test]
async fn a_server_that_wants_authorization_fails_the_connection_as_http_401() {
    let peer = Peer::start("/mcp", |_| Reply::Status(401, vec![])).await;
    let err = capable::connect_http(config(&peer.url), options())
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, Error::Http { status: 401, .. }), "{err:?}");
    // The probe's 401 is no modern answer: the client fell back to initialize, which
    // met the same answer.
    assert_eq!(peer.posts("server/discover").len(), 1);
    assert_eq!(peer.posts("initialize").len(), 1);
}

#[tokio::test]
async fn what_one_answer_stream_carries_arrives_in_order_and_the_notifications_end_with_the_session(
) {
    // A call answered by an event stream: three progress notifications and three log
    // messages, interleaved, then the result.
    let peer = legacy_peer(|s| {
        let token = s
            .body
            .as_ref()
            .and_then(|b| b.pointer("/params/_meta/progressToken"))
            .cloned()
            .unwrap_or(Value::Null);
        let mut events = Vec::new();
        for step in 1..=3 {
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": step, "total": 3}});
            let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": format!("step {step}")}});
            events.push(event(None, &progress));
            events.push(event(None, &log));
        }
        events.push(event(
            None,
            &result(
                &id(s),
                json!({"content": [{"type": "text", "text": "done"}]}),
            ),
        ));
        Reply::Sse(vec![], events, Duration::ZERO)
    })
    .await;
    let session = connect(&peer.url).await;
    let mut notifications = session.notifications().expect("the stream, taken once");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = RequestOptions {
        on_progress: Some(Box::new({
            let seen = seen.clone();
            move |p| seen.lock().unwrap().push(p.progress)
        })),
        ..RequestOptions::default()
    };
    let out = session
        .call_tool_with("steps", None, options)
        .await
        .expect("the stream's answer");
    assert_eq!(out.content[0]["text"], "done");
    // Every progress before the answer, in the order sent.
    assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
    // The log messages are already on the host's stream, in the order sent.
    for step in 1..=3 {
        let n = notifications
            .try_recv()
            .expect("a message sent before the answer");
        assert_eq!(n.method, "notifications/message");
        assert_eq!(n.params["data"], format!("step {step}"));
    }
    session.close().await;
    let end = tokio::time::timeout(Duration::from_secs(5), notifications.recv())
        .await
        .expect("the stream ends with the session");
    assert!(end.is_none(), "nothing after the end: {end:?}");
}

#[tokio::test]
async fn a_legacy_request_given_up_is_cancelled_by_notification_and_the_session_goes_on() {
    let peer = legacy_peer(|s| match tool_name(s) {
        Some("slow") => Reply::Sse(vec![], vec![], Duration::from_secs(20)),
        _ => text_result(s, "fine"),
    })
    .await;
    let session = connect(&peer.url).await;
    // Timed out by the session…
    let err = call_timing_out(&session, "slow").await;
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    // …and given up by the host, which drops the call.
    let dropped =
        tokio::time::timeout(Duration::from_millis(300), session.call_tool("slow", None)).await;
    assert!(dropped.is_err(), "the slow call never answers");
    // The cancellations are queued before the next request and posted in order.
    still_fine(&session).await;
    let slow: Vec<Value> = peer
        .posts("tools/call")
        .iter()
        .filter(|p| tool_name(p) == Some("slow"))
        .map(id)
        .collect();
    let cancelled: Vec<Value> = peer
        .posts("notifications/cancelled")
        .iter()
        .map(|c| c.body.as_ref().unwrap()["params"]["requestId"].clone())
        .collect();
    assert_eq!(slow.len(), 2);
    assert_eq!(cancelled, slow, "each given-up request is cancelled once");
    session.close().await;
}

#[tokio::test]
async fn credentials_in_the_url_go_as_basic_authorization_and_never_in_the_host() {
    let peer = legacy_peer(|s| text_result(s, "fine")).await;
    let url = peer.url.replace("http://", "http://u:p%40ss@");
    let session = connect(&url).await;
    still_fine(&session).await;
    session.close().await;
    let seen = peer.seen();
    assert!(!seen.is_empty());
    for s in &seen {
        // base64("u:p@ss")
        assert_eq!(s.header("authorization"), Some("Basic dTpwQHNz"), "{s:?}");
        assert_eq!(
            s.header("host"),
            Some(format!("127.0.0.1:{}", peer.port).as_str())
        );
        assert_eq!(s.path, "/mcp");
    }
}

#[tokio::test]
async fn an_answer_compressed_with_gzip_is_read_inflated() {
    use std::io::Write;
    let peer = legacy_peer(|s| {
        let body = serde_json::to_vec(&result(
            &id(s),
            json!({"content": [{"type": "text", "text": "inflated"}]}),
        ))
        .unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&body).unwrap();
        Reply::Raw(
            200,
            vec![
                ("content-type".into(), "application/json".into()),
                ("content-encoding".into(), "gzip".into()),
            ],
            gz.finish().unwrap(),
        )
    })
    .await;
    let session = connect(&peer.url).await;
    let out = session.call_tool("any", None).await.expect("a call");
    assert_eq!(out.content[0]["text"], "inflated");
    let call = &peer.posts("tools/call")[0];
    assert!(
        call.header("accept-encoding")
            .is_some_and(|e| e.contains("gzip")),
        "{call:?}"
    );
    session.close().await;
}
