//! The modern era over HTTP: the per-request headers, a version error that keeps the
//! era, a broken stream re-issued, cancellation by closing, the header-mismatch retry.

use super::*;

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
