//! The HTTP policy, driven by hand: what the shell is told to send for each message,
//! and what each HTTP answer leads to — headers, sessions and their renewal, resumed
//! and re-issued streams, the standalone stream's bounded reconnects, the header
//! mismatch refresh, the HTTP+SSE fallback and its same-origin rule, cancellation, and
//! failures that are HTTP's, not JSON-RPC's. No sockets, no clock.

mod common;

use std::time::Duration;

use capable_core::internal::http::{
    Action, Body, End, ExchangeId, Failure, HttpMethod, HttpSession, StreamEvent,
};
use capable_core::{Notice, ProtocolVersion};
use serde_json::json;

use common::http::*;

#[test]
fn legacy_requests_carry_the_session_and_the_negotiated_version_only() {
    let (mut http, opened) = legacy(ProtocolVersion::V2025_06_18);
    let (_, get, _) = sent(&opened);
    assert_eq!(
        get.method,
        HttpMethod::Get,
        "the standalone stream opens after initialized"
    );
    assert_eq!(header(&get, "accept"), Some("text/event-stream"));
    let (_, post, blocking) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
    )));
    assert!(!blocking);
    assert_eq!(header(&post, "mcp-session-id"), Some("s1"));
    assert_eq!(header(&post, "mcp-protocol-version"), Some("2025-06-18"));
    assert_eq!(
        header(&post, "mcp-method"),
        None,
        "modern headers are modern only"
    );
    // 2025-03-26 defines no version header.
    let (mut http, _) = legacy(ProtocolVersion::V2025_03_26);
    let (_, post, _) =
        sent(&http.send_line(&line(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))));
    assert_eq!(header(&post, "mcp-protocol-version"), None);
}

#[test]
fn a_requests_trace_context_in_meta_goes_as_the_w3c_headers_too() {
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let (mut http, _) = legacy(ProtocolVersion::V2025_11_25);
    let (_, post, _) = sent(&http.send_line(&line(json!({"jsonrpc": "2.0", "id": 2,
        "method": "tools/call", "params": {"name": "echo",
        "_meta": {"traceparent": parent, "tracestate": "team=blue"}}}))));
    assert_eq!(header(&post, "traceparent"), Some(parent));
    assert_eq!(header(&post, "tracestate"), Some("team=blue"));
    let (_, plain, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
    )));
    assert_eq!(header(&plain, "traceparent"), None);
}

#[test]
fn the_standalone_stream_is_reopened_a_bounded_number_of_times_then_given_up() {
    let (mut http, opened) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) = sent(&opened);
    let mut delays = Vec::new();
    let end = End {
        last_event_id: Some("p".into()),
        retry: Some(Duration::from_millis(300)),
        ..End::default()
    };
    let mut actions = Vec::new();
    for _ in 0..3 {
        assert_eq!(
            http.on_head(ex, &sse()).0,
            Body::Events { first_within: None }
        );
        actions = http.on_end(ex, end.clone());
        let (_, get, _) = sent(&actions);
        assert_eq!(header(&get, "last-event-id"), Some("p"));
        delays.push(get.delay);
    }
    assert_eq!(
        delays,
        [Duration::from_millis(300); 3],
        "the server's retry"
    );
    assert_eq!(
        http.on_head(ex, &sse()).0,
        Body::Events { first_within: None }
    );
    let last = http.on_end(ex, End::default());
    assert!(
        matches!(
            &last[..],
            [Action::Notice(Notice::StreamGivenUp { attempts: 3, .. })]
        ),
        "{last:?} after {actions:?}"
    );
    // A 405 means there is no stream at all: nothing to reopen.
    let (mut http, opened) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) = sent(&opened);
    http.on_head(ex, &head(405));
    assert!(http.on_end(ex, End::default()).is_empty());
}

#[test]
fn a_broken_legacy_stream_is_resumed_with_last_event_id_after_retry_then_given_up() {
    let (mut http, _) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "slow"}}),
    )));
    assert!(matches!(http.on_head(ex, &sse()).0, Body::Events { .. }));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 5, "progress": 1}});
    assert_eq!(
        delivered(&http.on_event(ex, StreamEvent::Message(line(note)))).len(),
        1
    );
    let end = End {
        last_event_id: Some("e1".into()),
        retry: Some(Duration::from_millis(300)),
        ..End::default()
    };
    let (again, get, _) = sent(&http.on_end(ex, end));
    assert_eq!(again, ex);
    assert_eq!(get.method, HttpMethod::Get);
    assert_eq!(header(&get, "last-event-id"), Some("e1"));
    assert_eq!(header(&get, "mcp-session-id"), Some("s1"));
    assert_eq!(get.delay, Duration::from_millis(300));
    // Two more attempts that bring nothing, then the request fails.
    for _ in 0..2 {
        http.on_head(ex, &sse());
        sent(&http.on_end(ex, End::default()));
    }
    http.on_head(ex, &sse());
    let (id, failure) = failed(&http.on_end(ex, End::default())).expect("given up");
    assert_eq!(id, json!(5));
    assert!(
        matches!(failure, Failure::Broken(ref why) if why.contains("3 attempts")),
        "{failure:?}"
    );
}

#[test]
fn an_expired_session_is_renewed_once_and_the_request_retried() {
    let (mut http, _) = legacy(ProtocolVersion::V2025_06_18);
    let (ex, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
    )));
    assert_eq!(http.on_head(ex, &head(404)).0, Body::Discard);
    let actions = http.on_end(ex, End::default());
    assert!(actions
        .iter()
        .any(|a| matches!(a, Action::Notice(Notice::SessionRenewed { .. }))));
    let (_, init, _) = sent(&actions);
    assert_eq!(body(&init)["method"], "initialize");
    assert_eq!(
        header(&init, "mcp-session-id"),
        None,
        "a new session has no id yet"
    );
    assert_eq!(header(&init, "mcp-protocol-version"), None);
    let mut h = head(200);
    h.session_id = Some("s2".into());
    http.on_head(ex, &h);
    let (_, initialized, _) = sent(&http.on_end(ex, End::default()));
    assert_eq!(body(&initialized)["method"], "notifications/initialized");
    assert_eq!(header(&initialized, "mcp-session-id"), Some("s2"));
    http.on_head(ex, &head(202));
    let (_, retry, _) = sent(&http.on_end(ex, End::default()));
    assert_eq!(body(&retry)["id"], 3);
    assert_eq!(header(&retry, "mcp-session-id"), Some("s2"));
    assert_eq!(header(&retry, "mcp-protocol-version"), Some("2025-06-18"));
    // A second 404 is an answer, not another renewal.
    assert!(matches!(http.on_head(ex, &head(404)).0, Body::Whole { .. }));
    let (id, failure) = failed(&http.on_body(ex, b"gone".to_vec())).unwrap();
    assert_eq!(id, json!(3));
    assert_eq!(
        failure,
        Failure::Http {
            url: URL.into(),
            status: 404,
            body: "gone".into()
        }
    );
}

#[test]
fn modern_posts_carry_version_method_name_and_param_headers_and_bad_tools_are_dropped() {
    let mut http = session();
    let list =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}});
    let (ex, post, _) = sent(&http.send_line(&line(list)));
    assert_eq!(header(&post, "mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(header(&post, "mcp-method"), Some("tools/list"));
    assert_eq!(header(&post, "mcp-name"), None);
    http.on_head(ex, &head(200));
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "deploy", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}},
        {"name": "broken", "inputSchema": {"type": "object", "properties": {
            "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}}]}});
    let actions = http.on_body(ex, line(answer));
    let tools = &delivered(&actions)[0]["result"]["tools"];
    assert_eq!(
        tools.as_array().unwrap().len(),
        1,
        "the bad tool is dropped"
    );
    assert!(actions.iter().any(
        |a| matches!(a, Action::Notice(Notice::ToolDropped { tool, .. }) if tool == "broken")
    ));
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "deploy", "arguments": {"region": "eu-west"}, "_meta": meta()}});
    let (_, post, _) = sent(&http.send_line(&line(call)));
    assert_eq!(header(&post, "mcp-name"), Some("deploy"));
    assert_eq!(header(&post, "mcp-param-region"), Some("eu-west"));
    assert_eq!(
        header(&post, "mcp-session-id"),
        None,
        "no sessions in 2026-07-28"
    );
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "docs://ünï", "_meta": meta()}});
    let (_, post, _) = sent(&http.send_line(&line(read)));
    assert_eq!(
        header(&post, "mcp-name"),
        Some("=?base64?ZG9jczovL8O8bsOv?=")
    );
}

#[test]
fn a_broken_modern_stream_is_reissued_with_a_new_id_and_answered_under_the_old() {
    let mut http = session();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "_meta": meta()}});
    let (ex, _, _) = sent(&http.send_line(&line(call)));
    http.on_head(ex, &sse());
    let (_, again, _) = sent(&http.on_end(ex, End::default()));
    let new_id = body(&again)["id"].clone();
    assert_ne!(new_id, json!(7));
    http.on_head(ex, &sse());
    let answer = json!({"jsonrpc": "2.0", "id": new_id, "result": {"content": []}});
    let got = delivered(&http.on_event(ex, StreamEvent::Message(line(answer))));
    assert_eq!(
        got[0]["id"], 7,
        "delivered under the id the client asked with"
    );
    assert!(!http.wants(ex), "answered: the stream is not read further");
    // Bounded: two re-issues, then a failure.
    let listen = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "x", "_meta": meta()}});
    let (ex, _, _) = sent(&http.send_line(&line(listen)));
    for _ in 0..2 {
        http.on_head(ex, &sse());
        sent(&http.on_end(ex, End::default()));
    }
    http.on_head(ex, &sse());
    let (id, f) = failed(&http.on_end(ex, End::default())).unwrap();
    assert_eq!(id, json!(8));
    assert!(
        matches!(f, Failure::Broken(ref w) if w.contains("broke 3 times")),
        "{f:?}"
    );
}

#[test]
fn a_modern_listen_stream_that_breaks_fails_instead_of_changing_its_id() {
    let mut http = session();
    let listen = json!({"jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen", "params": {"notifications": {}, "_meta": meta()}});
    let (ex, _, _) = sent(&http.send_line(&line(listen)));
    http.on_head(ex, &sse());
    let (id, f) = failed(&http.on_end(ex, End::default())).unwrap();
    assert_eq!(id, json!(4));
    assert!(matches!(f, Failure::Broken(ref w) if w.contains("without its final result")));
}

#[test]
fn cancelling_closes_a_modern_stream_and_tells_a_legacy_server_too() {
    let mut http = session();
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "x", "_meta": meta()}});
    let (ex, _, _) = sent(&http.send_line(&line(call)));
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    assert_eq!(
        http.send_line(&line(cancel)),
        [Action::Abort(ex)],
        "no notification over modern HTTP"
    );
    let (mut http, _) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) =
        sent(&http.send_line(&line(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}))));
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let actions = http.send_line(&line(cancel));
    assert_eq!(actions[0], Action::Abort(ex));
    let (_, post, _) = sent(&actions);
    assert_eq!(body(&post)["method"], "notifications/cancelled");
}

#[test]
fn an_http_error_is_an_http_failure_unless_it_carries_a_json_rpc_error() {
    let mut http = session();
    let (ex, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}),
    )));
    http.on_head(ex, &head(401));
    let (id, f) = failed(&http.on_body(ex, b"login first".to_vec())).unwrap();
    assert_eq!(id, json!(1));
    assert_eq!(
        f,
        Failure::Http {
            url: URL.into(),
            status: 401,
            body: "login first".into()
        }
    );
    // A JSON-RPC error in the body is the server's answer, delivered under our id.
    let (ex, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta()}}),
    )));
    http.on_head(ex, &head(400));
    let error =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32602, "message": "bad _meta"}});
    let actions = http.on_body(ex, line(error));
    assert!(failed(&actions).is_none());
    let got = delivered(&actions);
    assert_eq!(got[0]["id"], 2);
    assert_eq!(
        got[0]["error"]["message"], "bad _meta",
        "the server's words, unchanged"
    );
    // An accepted request that never gets an answer fails, naming why.
    let (ex, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta()}}),
    )));
    http.on_head(ex, &head(202));
    let (_, f) = failed(&http.on_body(ex, Vec::new())).unwrap();
    assert!(matches!(f, Failure::Broken(_)));
}

#[test]
fn a_header_mismatch_refetches_the_tools_and_retries_once() {
    let mut http = session();
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "deploy", "arguments": {"region": "eu"}, "_meta": meta()}});
    let (ex, first, _) = sent(&http.send_line(&line(call)));
    assert_eq!(header(&first, "mcp-param-region"), None, "not learnt yet");
    http.on_head(ex, &head(400));
    let mismatch =
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32020, "message": "header mismatch"}});
    let (_, list, _) = sent(&http.on_body(ex, line(mismatch.clone())));
    let list_body = body(&list);
    assert_eq!(list_body["method"], "tools/list");
    assert_eq!(
        list_body["params"]["_meta"],
        meta(),
        "the failed request's envelope"
    );
    http.on_head(ex, &head(200));
    let page = json!({"jsonrpc": "2.0", "id": list_body["id"], "result": {"tools": [
        {"name": "deploy", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}}]}});
    let actions = http.on_body(ex, line(page));
    assert!(
        delivered(&actions).is_empty(),
        "the transport's own list is not delivered"
    );
    let (_, retry, _) = sent(&actions);
    assert_eq!(body(&retry)["id"], 5);
    assert_eq!(header(&retry, "mcp-param-region"), Some("eu"));
    // Once only: the second mismatch is the answer.
    http.on_head(ex, &head(400));
    let got = delivered(&http.on_body(ex, line(mismatch)));
    assert_eq!(got[0]["error"]["code"], -32020);
}

fn refused_initialize(http: &mut HttpSession, status: u16) -> (ExchangeId, ExchangeId) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}});
    let (ex, _, _) = sent(&http.send_line(&line(init)));
    http.on_head(ex, &head(status));
    let (stream, get, _) = sent(&http.on_body(ex, b"Not Found".to_vec()));
    assert_eq!(get.method, HttpMethod::Get);
    assert_eq!(header(&get, "accept"), Some("text/event-stream"));
    (ex, stream)
}

#[test]
fn a_refused_initialize_tries_the_url_as_an_http_sse_endpoint_on_the_same_origin() {
    let mut http = session();
    let (call, stream) = refused_initialize(&mut http, 404);
    assert_eq!(
        http.on_head(stream, &sse()).0,
        Body::Events {
            first_within: Some(Duration::from_secs(10))
        }
    );
    let actions = http.on_event(stream, StreamEvent::Endpoint("/message?sessionId=1".into()));
    let (ex, post, _) = sent(&actions);
    assert_eq!(ex, call, "initialize goes again, to the endpoint");
    assert_eq!(post.url.as_str(), "http://mcp.test/message?sessionId=1");
    assert_eq!(header(&post, "mcp-protocol-version"), None);
    assert!(http.is_legacy_sse());
    assert_eq!(http.on_head(call, &head(202)).0, Body::Discard);
    assert!(
        http.on_end(call, End::default()).is_empty(),
        "the answer comes on the stream"
    );
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2024-11-05"}});
    assert_eq!(
        delivered(&http.on_event(stream, StreamEvent::Message(line(answer)))).len(),
        1
    );
    let end = http.on_end(stream, End::default());
    assert!(
        matches!(&end[..], [Action::End(Some(Failure::Broken(_)))]),
        "{end:?}"
    );
}

#[test]
fn an_http_sse_endpoint_on_another_origin_is_refused() {
    let mut http = session();
    let (_, stream) = refused_initialize(&mut http, 405);
    http.on_head(stream, &sse());
    let actions = http.on_event(
        stream,
        StreamEvent::Endpoint("http://evil.test/collect".into()),
    );
    assert!(
        !actions.iter().any(|a| matches!(a, Action::Send { .. })),
        "{actions:?}"
    );
    let (_, f) = failed(&actions).unwrap();
    assert!(
        matches!(f, Failure::Broken(ref w) if w.contains("another origin")),
        "{f:?}"
    );
    assert!(!http.wants(stream));
}

#[test]
fn when_the_url_is_no_http_sse_endpoint_either_the_first_refusal_is_the_answer() {
    let mut http = session();
    let (_, stream) = refused_initialize(&mut http, 404);
    let (_, actions) = http.on_head(stream, &head(405));
    let (id, f) = failed(&actions).unwrap();
    assert_eq!(id, json!(0));
    assert!(matches!(f, Failure::Http { status: 404, .. }), "{f:?}");
    // A modern error in the 400 keeps it modern: no fallback.
    let mut http = session();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}});
    let (ex, _, _) = sent(&http.send_line(&line(init)));
    http.on_head(ex, &head(400));
    let modern = json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32022, "message": "no", "data": {"supported": ["2026-07-28"]}}});
    let actions = http.on_body(ex, line(modern));
    assert!(!actions.iter().any(|a| matches!(a, Action::Send { .. })));
    assert_eq!(delivered(&actions)[0]["error"]["code"], -32022);
}

#[test]
fn closing_deletes_a_legacy_session_and_stops_every_stream() {
    let (mut http, opened) = legacy(ProtocolVersion::V2025_11_25);
    let (stream, _, _) = sent(&opened);
    let (_, delete) = http.close().expect("a DELETE");
    assert_eq!(delete.method, HttpMethod::Delete);
    assert_eq!(header(&delete, "mcp-session-id"), Some("s1"));
    assert!(
        http.on_end(stream, End::default()).is_empty(),
        "nothing is reopened"
    );
    assert!(http
        .send_line(&line(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})))
        .is_empty());
    assert!(session().close().is_none(), "no session, nothing to delete");
}

#[test]
fn what_a_server_puts_in_a_session_id_or_an_event_id_never_breaks_a_header() {
    // A session id is visible ASCII (the transport's rule): any other is not taken.
    let mut http = session();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    let (ex, _, _) = sent(&http.send_line(&line(init)));
    let mut h = head(200);
    h.session_id = Some("s1\r\nX-Injected: 1".into());
    http.on_head(ex, &h);
    http.on_body(ex, line(json!({"jsonrpc": "2.0", "id": 0, "result": {}})));
    let (_, post, _) =
        sent(&http.send_line(&line(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))));
    assert_eq!(header(&post, "mcp-session-id"), None, "{:?}", post.headers);

    // An event id with a control byte cannot travel as `Last-Event-ID`: the stream is
    // resumed without it. One in UTF-8 goes as it is.
    let (mut http, _) = legacy(ProtocolVersion::V2025_11_25);
    let (ex, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "slow"}}),
    )));
    http.on_head(ex, &sse());
    let end = |id: &str| End {
        last_event_id: Some(id.into()),
        ..End::default()
    };
    let (_, get, _) = sent(&http.on_end(ex, end("e\u{1}1")));
    assert_eq!(header(&get, "last-event-id"), None, "{:?}", get.headers);
    http.on_head(ex, &sse());
    let (_, get, _) = sent(&http.on_end(ex, end("é2")));
    assert_eq!(header(&get, "last-event-id"), Some("é2"));
}

#[test]
fn a_reissued_call_answered_with_json_that_is_no_object_is_passed_on_not_a_panic() {
    for answer in [&b"99999990"[..], b"[1,2]", b"\"text\"", b"null"] {
        let mut http = session();
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "_meta": meta()}});
        let (ex, _, _) = sent(&http.send_line(&line(call)));
        http.on_head(ex, &sse());
        sent(&http.on_end(ex, End::default()));
        http.on_head(ex, &head(200));
        let actions = http.on_body(ex, answer.to_vec());
        // Not a message under any id: the client reads it as it came, and refuses it.
        assert!(
            actions
                .iter()
                .any(|a| matches!(a, Action::Deliver(m) if m == answer)),
            "{actions:?}"
        );
    }
}

#[test]
fn a_question_on_a_requests_stream_names_that_request_and_one_on_the_standalone_stream_none() {
    let (mut http, opened) = legacy(ProtocolVersion::V2025_11_25);
    let (get, _, _) = sent(&opened);
    assert!(matches!(http.on_head(get, &sse()).0, Body::Events { .. }));
    let (five, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask"}}),
    )));
    let (six, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "ask"}}),
    )));
    for ex in [five, six] {
        assert!(matches!(http.on_head(ex, &sse()).0, Body::Events { .. }));
    }
    let question = |id: i64| {
        line(
            json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
            "params": {"message": "name?", "requestedSchema": {"type": "object"}}}),
        )
    };
    // Each request's stream says whose its question is, by the id the client sent.
    let on = |actions: Vec<Action>| match &actions[..] {
        [Action::DeliverOn { related, .. }] => Some(related.clone()),
        [Action::Deliver(_)] => None,
        other => panic!("{other:?}"),
    };
    let six_asks = on(http.on_event(six, StreamEvent::Message(question(0))));
    assert_eq!(six_asks, Some(capable_core::RequestId::Number(6)));
    let five_asks = on(http.on_event(five, StreamEvent::Message(question(1))));
    assert_eq!(five_asks, Some(capable_core::RequestId::Number(5)));
    // The standalone stream is about no request.
    assert_eq!(
        on(http.on_event(get, StreamEvent::Message(question(2)))),
        None
    );
    // The answer itself is delivered as ever.
    let answer = json!({"jsonrpc": "2.0", "id": 5, "result": {"content": []}});
    let actions = http.on_event(five, StreamEvent::Message(line(answer)));
    assert!(matches!(&actions[..], [Action::Deliver(_)]), "{actions:?}");
}
