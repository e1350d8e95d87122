//! What answers carry and what fails: HTTP errors and broken answers fail one request
//! and the session goes on, concurrent requests each get their own answer, 401, one
//! stream's order, a legacy request given up, credentials in the URL, gzip.

use super::*;

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
