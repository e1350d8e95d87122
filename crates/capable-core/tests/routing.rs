//! Scripted-peer tests of routing on a ready connection: answers reach their waiter by
//! id even out of order; unknown, late and duplicate responses are dropped with a
//! notice; ids are never reused; cancellation, server requests, pings and progress.
//! Every line the client writes is validated against the official schema of the
//! negotiated version.

mod common;

use std::collections::HashSet;

use capable_core::internal::input_kind::InputKind;
use capable_core::Outbox;
use capable_core::{
    ClientCapabilities, Event, Method, Notice, ProtocolChoice, RequestId, ResponseError, Timing,
};
use capable_test_support::{config, feed, legacy_connection, modern_connection, t0, take};
use common::{error, everything, handled, legacy, modern, response, result, send, Conn, MODERN, V};
use serde_json::{json, Value};

#[test]
fn routing_responses_reach_their_waiter_by_id_even_out_of_order() {
    let mut conn = legacy(everything());
    let (a, _) = send(&mut conn, Method::ListTools, json!({}), "a");
    let (b, _) = send(
        &mut conn,
        Method::ReadResource,
        json!({"uri": "x://b"}),
        "b",
    );
    let (c, _) = send(&mut conn, Method::ListPrompts, json!({}), "c");
    assert_eq!(conn.in_flight(), 3);
    let (id, method, waiter, outcome) = response(&mut conn, result(c, json!({"prompts": []})));
    assert_eq!((id, method, waiter), (c, Method::ListPrompts, "c"));
    assert_eq!(outcome.unwrap().json(), r#"{"prompts":[]}"#);
    let (id, method, waiter, outcome) = response(&mut conn, error(a, -32603));
    assert_eq!((id, method, waiter), (a, Method::ListTools, "a"));
    assert!(matches!(outcome, Err(ResponseError::Rpc(e)) if e.code == -32603));
    let (id, method, waiter, outcome) = response(
        &mut conn,
        result(b, json!({"contents": [{"uri": "x://b", "text": "B"}]})),
    );
    assert_eq!((id, method, waiter), (b, Method::ReadResource, "b"));
    let read: capable_core::model::ReadResourceResult = outcome.unwrap().decode().unwrap();
    assert_eq!(read.contents[0].text.as_deref(), Some("B"));
    assert_eq!(conn.in_flight(), 0);
}

#[test]
fn routing_an_unknown_id_is_dropped_with_a_notice_and_disturbs_nothing() {
    let mut conn = legacy(everything());
    let (a, _) = send(&mut conn, Method::ListTools, json!({}), "a");
    let (b, _) = send(&mut conn, Method::ListPrompts, json!({}), "b");
    for unknown in [999_999, -1, i64::MAX] {
        let (written, notices) = handled(&mut conn, result(unknown, json!({})));
        assert!(written.is_empty());
        assert_eq!(
            notices,
            vec![Notice::UnknownResponseId {
                id: RequestId::Number(unknown)
            }]
        );
        let (_, notices) = handled(&mut conn, error(unknown, -32601));
        assert_eq!(notices.len(), 1);
    }
    assert_eq!(conn.in_flight(), 2);
    assert!(conn.violations().is_empty());
    let (_, _, waiter, _) = response(&mut conn, result(b, json!({"prompts": []})));
    assert_eq!(waiter, "b");
    let (_, _, waiter, _) = response(&mut conn, result(a, json!({"tools": []})));
    assert_eq!(waiter, "a");
}

#[test]
fn routing_a_string_id_is_not_mistaken_for_the_number_it_spells() {
    let mut conn = legacy(everything());
    let (a, _) = send(&mut conn, Method::ListTools, json!({}), "a");
    let (written, notices) = handled(&mut conn, result(a.to_string(), json!({"tools": []})));
    assert!(written.is_empty());
    assert_eq!(
        notices,
        vec![Notice::UnknownResponseId {
            id: RequestId::String(a.to_string())
        }]
    );
    let (_, notices) = handled(&mut conn, error(a.to_string(), -32601));
    assert_eq!(notices.len(), 1);
    assert!(conn.violations().is_empty());
    assert_eq!(conn.in_flight(), 1);
    let (id, _, waiter, _) = response(&mut conn, result(a, json!({"tools": []})));
    assert_eq!((id, waiter), (a, "a"));
}

#[test]
fn routing_an_error_without_id_does_not_panic_or_disturb_anything() {
    let mut conn = legacy(everything());
    let (a, _) = send(&mut conn, Method::ListTools, json!({}), "a");
    for message in [
        json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}}),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "invalid"}}),
    ] {
        let (written, notices) = handled(&mut conn, message);
        assert!(written.is_empty());
        assert!(
            matches!(notices[..], [Notice::SkippedLine { .. }]),
            "{notices:?}"
        );
    }
    assert_eq!(conn.in_flight(), 1);
    let (_, _, waiter, _) = response(&mut conn, result(a, json!({"tools": []})));
    assert_eq!(waiter, "a");
}

#[test]
fn routing_a_null_result_still_reaches_its_waiter() {
    // JSON-RPC allows any value as `result`; MCP wants an object. Either way the
    // waiter must hear about it rather than wait for a timeout.
    let mut conn = legacy(everything());
    let (a, _) = send(&mut conn, Method::ListTools, json!({}), "a");
    let (id, _, waiter, outcome) = response(&mut conn, result(a, Value::Null));
    assert_eq!((id, waiter), (a, "a"));
    let payload = outcome.unwrap();
    assert!(payload
        .decode::<capable_core::model::ListToolsResult>()
        .is_err());
    assert_eq!(conn.in_flight(), 0);
}

#[test]
fn routing_ids_are_never_reused() {
    let mut conn = legacy(everything());
    let mut seen = HashSet::new();
    // The handshake's id (0) is taken already.
    seen.insert(0);
    let mut out = Outbox::new();
    let mut pending = Vec::new();
    for i in 0..3000u32 {
        let id = conn
            .request(
                Method::ListTools,
                &json!({}),
                Timing::new().with_progress(i % 7 == 0),
                "w",
                t0(),
                &mut out,
            )
            .unwrap();
        assert!(seen.insert(id), "id {id} reused");
        pending.push(id);
        // Settle some requests in various ways so ids free up, to be sure freed ids
        // are not handed out again.
        match i % 5 {
            0 => {
                let id = pending.remove(0);
                feed(&mut conn, result(id, json!({"tools": []})), &mut out);
            }
            1 => {
                let id = pending.remove(0);
                conn.cancel(id, "test", &mut out).unwrap();
            }
            2 => {
                let id = pending.remove(0);
                conn.forget(id).unwrap();
            }
            _ => {}
        }
    }
    assert_eq!(conn.in_flight(), pending.len());
    let written = take(V, &mut out);
    let request_ids: Vec<&Value> = written
        .iter()
        .filter(|m| m.get("method") == Some(&json!("tools/list")))
        .map(|m| &m["id"])
        .collect();
    assert_eq!(request_ids.len(), 3000);
    let distinct: HashSet<String> = request_ids.iter().map(|v| v.to_string()).collect();
    assert_eq!(distinct.len(), 3000);
    assert_eq!(conn.close().len(), pending.len());
    assert_eq!(conn.in_flight(), 0);
}

#[test]
fn routing_cancel_writes_cancelled_and_a_late_response_is_dropped() {
    for (mut conn, version) in [(legacy(everything()), V), (modern(everything()), MODERN)] {
        let (a, _) = send(&mut conn, Method::CallTool, json!({"name": "slow"}), "a");
        let (b, _) = send(&mut conn, Method::ListTools, json!({}), "b");
        let mut out = Outbox::new();
        assert_eq!(conn.cancel(a, "timed out", &mut out), Some("a"));
        let sent = take(version, &mut out);
        assert_eq!(
            sent,
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": a, "reason": "timed out"}})
            ]
        );
        assert_eq!(conn.in_flight(), 1);
        // Cancelling again (or an unknown id) writes nothing.
        assert_eq!(conn.cancel(a, "again", &mut out), None);
        assert_eq!(conn.cancel(12345, "never", &mut out), None);
        assert!(out.is_empty());
        // The late answer is dropped with a notice.
        let (written, notices) = handled(&mut conn, result(a, json!({"content": []})));
        assert!(written.is_empty());
        assert_eq!(
            notices,
            vec![Notice::LateResponse {
                id: RequestId::Number(a)
            }]
        );
        let (_, notices) = handled(&mut conn, error(a, -32800));
        assert_eq!(
            notices,
            vec![Notice::LateResponse {
                id: RequestId::Number(a)
            }]
        );
        let (_, _, waiter, _) = response(&mut conn, result(b, json!({"tools": []})));
        assert_eq!(waiter, "b");
    }
}

#[test]
fn routing_a_second_response_to_the_same_request_is_dropped() {
    let mut conn = legacy(everything());
    let (a, _) = send(&mut conn, Method::ListTools, json!({}), "a");
    let (_, _, _, outcome) = response(&mut conn, result(a, json!({"tools": []})));
    assert!(outcome.is_ok());
    let (_, notices) = handled(&mut conn, result(a, json!({"tools": []})));
    assert_eq!(
        notices,
        vec![Notice::LateResponse {
            id: RequestId::Number(a)
        }]
    );
}

#[test]
fn routing_a_server_ping_after_ready_is_answered_with_an_empty_result() {
    let mut conn = legacy(json!({}));
    for id in [json!(1), json!("p-1"), json!(0), json!(-5)] {
        let (written, notices) = handled(
            &mut conn,
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        );
        assert_eq!(
            written,
            vec![json!({"jsonrpc": "2.0", "id": id, "result": {}})]
        );
        assert!(notices.is_empty());
    }
}

#[test]
fn routing_an_unknown_server_request_is_answered_method_not_found() {
    let mut conn = legacy(json!({}));
    for method in [
        "made/up",
        "roots/list",
        "sampling/createMessage",
        "elicitation/create",
    ] {
        let (written, notices) = handled(
            &mut conn,
            json!({"jsonrpc": "2.0", "id": "s1", "method": method, "params": {}}),
        );
        assert_eq!(written.len(), 1, "{method}");
        assert_eq!(written[0]["id"], "s1");
        assert_eq!(written[0]["error"]["code"], -32601);
        assert_eq!(
            notices,
            vec![Notice::UnsupportedServerRequest {
                method: method.into()
            }]
        );
    }
}

#[test]
fn routing_server_requests_the_host_declared_are_handed_to_the_host() {
    let mut cfg = config(ProtocolChoice::Legacy);
    cfg.capabilities = ClientCapabilities {
        roots: true,
        sampling: true,
        elicitation_form: true,
        elicitation_url: false,
        ..Default::default()
    };
    let mut conn: Conn = legacy_connection(cfg, V, json!({}));
    for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
        let mut out = Outbox::new();
        let event = feed(
            &mut conn,
            json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": {}}),
            &mut out,
        );
        assert!(out.is_empty());
        match event {
            Event::ServerRequest { id, method: m, .. } => {
                assert_eq!(id, RequestId::Number(9));
                assert_eq!(m, method);
            }
            other => panic!("{method}: {other:?}"),
        }
    }
    // The host's answers are valid client results.
    let mut out = Outbox::new();
    conn.respond(
        &RequestId::Number(9),
        &json!({"roots": [{"uri": "file:///home/me/project", "name": "project"}]}),
        &mut out,
    );
    conn.respond_error(
        &RequestId::String("x".into()),
        &capable_core::RpcError {
            code: -1,
            message: "User rejected sampling request".into(),
            data: None,
        },
        &mut out,
    );
    assert_eq!(take(V, &mut out).len(), 2);
}

#[test]
fn routing_a_url_mode_elicitation_to_a_form_only_host_is_refused_as_invalid_params() {
    let mut cfg = config(ProtocolChoice::Legacy);
    cfg.capabilities.elicitation_form = true;
    let mut conn: Conn = legacy_connection(cfg, V, json!({}));
    let (written, notices) = handled(
        &mut conn,
        json!({"jsonrpc": "2.0", "id": 4, "method": "elicitation/create",
               "params": {"mode": "url", "url": "https://idp.test/consent", "message": "Consent?"}}),
    );
    assert_eq!(written.len(), 1, "answered by the connection, not the host");
    assert_eq!(written[0]["error"]["code"], -32602);
    assert!(
        notices.is_empty(),
        "a declared method, asked in the wrong mode"
    );
    // Form mode reaches the host, as what it is.
    let mut out = Outbox::new();
    let event = feed(
        &mut conn,
        json!({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {"message": "Name?"}}),
        &mut out,
    );
    assert!(matches!(
        event,
        Event::ServerRequest {
            kind: InputKind::Elicitation { url: false },
            ..
        }
    ));
}

#[test]
fn routing_a_server_request_in_the_modern_era_is_dropped_without_a_response() {
    // 2026-07-28: servers send no requests and clients send no responses.
    let mut cfg = config(ProtocolChoice::Auto);
    cfg.capabilities.roots = true;
    let mut conn: Conn = modern_connection(cfg, json!({}));
    for method in ["ping", "roots/list"] {
        let (written, notices) = handled(
            &mut conn,
            json!({"jsonrpc": "2.0", "id": 3, "method": method}),
        );
        assert!(written.is_empty(), "{method}: {written:?}");
        assert!(notices
            .iter()
            .any(|n| matches!(n, Notice::UnsupportedServerRequest { .. })));
    }
}

#[test]
fn routing_progress_with_our_token_is_an_event_and_an_unknown_token_a_notice() {
    for (mut conn, version) in [(legacy(everything()), V), (modern(everything()), MODERN)] {
        let mut out = Outbox::new();
        let id = conn
            .request(
                Method::CallTool,
                &json!({"name": "slow"}),
                Timing::new().with_progress(true),
                "slow",
                t0(),
                &mut out,
            )
            .unwrap();
        let line = take(version, &mut out).remove(0);
        assert_eq!(line["params"]["_meta"]["progressToken"], json!(id));
        assert_eq!(line["params"]["name"], "slow");
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": id, "progress": 0.5, "total": 1.0, "message": "half"}});
        match feed(&mut conn, progress, &mut out) {
            Event::Progress { id: pid, progress } => {
                assert_eq!(pid, id);
                assert_eq!(progress.progress, 0.5);
                assert_eq!(progress.total, Some(1.0));
                assert_eq!(progress.message.as_deref(), Some("half"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(conn.waiter_mut(id).copied(), Some("slow"));
        for token in [json!(424242), json!("tok"), json!(id.to_string())] {
            let (written, notices) = handled(
                &mut conn,
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1}}),
            );
            assert!(written.is_empty());
            assert!(
                matches!(&notices[..], [Notice::UnknownProgress { .. }]),
                "{token}: {notices:?}"
            );
        }
        let (_, notices) = handled(
            &mut conn,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "x"}}),
        );
        assert!(matches!(&notices[..], [Notice::SkippedLine { .. }]));
        let (_, _, _, outcome) = response(&mut conn, result(id, json!({"content": []})));
        assert!(outcome.is_ok());
        // After the answer, progress for it is unknown.
        let (_, notices) = handled(
            &mut conn,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": id, "progress": 1}}),
        );
        assert!(matches!(&notices[..], [Notice::UnknownProgress { .. }]));
    }
}

/// A result is routed without a look at the clocks unless the cache keeps it: then it
/// is kept as arrived at the moment `handle_result` asked for, once.
#[test]
fn routing_a_result_asks_for_the_moment_only_when_the_cache_keeps_it() {
    use capable_core::internal::cache::CacheKey;
    use capable_core::{Incoming, Now};
    use std::time::{Duration, SystemTime};

    let mut conn = modern(everything());
    let answer = |id: i64| {
        let contents = json!([{"uri": "x://a", "text": "A"}]);
        let result = json!({"resultType": "complete", "contents": contents, "ttlMs": 60_000});
        match capable_test_support::incoming(common::result(id, result)) {
            Incoming::Result { id, result } => (id, result),
            other => panic!("not a result: {other:?}"),
        }
    };
    let params = json!({"uri": "x://a"});
    let (plain, _) = send(&mut conn, Method::ReadResource, params.clone(), "plain");
    let (kept, _) = send(&mut conn, Method::ReadResource, params.clone(), "kept");
    let key = CacheKey::new(Method::ReadResource, &params).expect("a read is cacheable");
    conn.cache_answer(kept, key.clone());

    let (id, result) = answer(plain);
    let routed = conn.handle_result(&id, result, || panic!("the clocks were read"));
    assert_eq!(routed.map(|a| a.waiter), Some("plain"));

    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let mut asked = 0;
    let (id, result) = answer(kept);
    let routed = conn.handle_result(&id, result, || {
        asked += 1;
        Now::new(t0(), wall)
    });
    assert_eq!(routed.map(|a| a.waiter), Some("kept"));
    assert_eq!(asked, 1);
    let cached = conn.cached(&key, t0()).expect("the answer is kept");
    assert_eq!((cached.received, cached.received_wall), (t0(), wall));
}
