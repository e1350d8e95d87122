//! Scripted-peer tests of contract violations on a ready connection: a declared method
//! answered "method not found" is recorded with its evidence and refused from then on,
//! while other errors stay plain errors; and notifications the server did not declare
//! are still delivered, with a notice. Every line the client writes is validated against
//! the official schema of the negotiated version.

mod common;

use capable_core::internal::jsonrpc::codes;
use capable_core::Outbox;
use capable_core::{
    Event, GatePolicy, ListenFilter, Method, Notice, ProtocolChoice, Refusal, ResponseError, Timing,
};
use capable_test_support::{config, feed, modern_connection, now, t0, take};
use common::{
    error, everything, legacy, modern, refusal_of, refuse, response, result, send, Conn, MODERN, V,
};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------
// Contract violations.
// ---------------------------------------------------------------------------------

#[test]
fn violation_a_declared_subscribe_answered_method_not_found_is_recorded_with_evidence() {
    let mut conn = legacy(json!({"resources": {"subscribe": true}}));
    let (sub, request) = send(
        &mut conn,
        Method::Subscribe,
        json!({"uri": "docs://a"}),
        "sub",
    );
    let answer = json!({"jsonrpc": "2.0", "id": sub,
        "error": {"code": -32601, "message": "Method not found", "data": {"method": "resources/subscribe"}}});
    let (id, method, waiter, outcome) = response(&mut conn, answer.clone());
    assert_eq!((id, method, waiter), (sub, Method::Subscribe, "sub"));
    let Err(ResponseError::Violation(v)) = outcome else {
        panic!("expected a violation, got {outcome:?}");
    };
    assert_eq!(v.capability, "resources.subscribe");
    assert_eq!(v.method, Method::Subscribe);
    assert_eq!(v.request, request, "the exact request as sent");
    assert_eq!(v.response, answer, "the exact response as received");
    assert_eq!(v.server.name, "scripted");
    assert_eq!(v.server.version, "1.2.3");
    assert_eq!(v.protocol_version, V);
    assert_eq!(v.at, now());
    let text = v.to_string();
    for needle in [
        "scripted",
        "1.2.3",
        "resources.subscribe",
        "resources/subscribe",
        "-32601",
    ] {
        assert!(text.contains(needle), "{text:?} should name {needle}");
    }
    assert_eq!(conn.violations().len(), 1);
    assert_eq!(conn.violations()[0], *v);

    // The method is broken for the rest of the session: refused locally.
    let refusal = refuse(&mut conn, Method::Subscribe, json!({"uri": "docs://b"}));
    assert_eq!(
        refusal,
        Refusal::MarkedBroken {
            method: Method::Subscribe
        }
    );
    assert_eq!(
        conn.check(Method::Subscribe),
        Err(Refusal::MarkedBroken {
            method: Method::Subscribe
        })
    );
    assert!(!conn.actions().contains(&Method::Subscribe));
    assert_eq!(conn.violations().len(), 1, "no second violation");

    // Reading still works.
    let (read, _) = send(
        &mut conn,
        Method::ReadResource,
        json!({"uri": "docs://a"}),
        "read",
    );
    let (_, _, waiter, outcome) = response(
        &mut conn,
        result(
            read,
            json!({"contents": [{"uri": "docs://a", "text": "A"}]}),
        ),
    );
    assert_eq!(waiter, "read");
    assert!(outcome.is_ok());
}

#[test]
fn violation_the_evidence_keeps_the_request_exactly_as_sent_with_progress_and_meta() {
    let mut conn = modern(json!({"tools": {}}));
    let mut out = Outbox::new();
    let id = conn
        .request(
            Method::CallTool,
            &json!({"name": "t", "arguments": {"x": 1}}),
            Timing::new().with_progress(true),
            "call",
            t0(),
            &mut out,
        )
        .unwrap();
    let request = take(MODERN, &mut out).remove(0);
    let (_, _, _, outcome) = response(&mut conn, error(id, codes::METHOD_NOT_FOUND));
    let Err(ResponseError::Violation(v)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(v.request, request);
    assert_eq!(v.capability, "tools");
    assert_eq!(v.protocol_version, MODERN);
    assert_eq!(v.server.name, "modern-scripted");
    assert_eq!(
        refuse(&mut conn, Method::CallTool, json!({"name": "t"})),
        Refusal::MarkedBroken {
            method: Method::CallTool
        }
    );
    // tools/list is a different method and still allowed.
    send(&mut conn, Method::ListTools, json!({}), "list");
}

#[test]
fn violation_other_errors_to_declared_methods_are_plain_errors() {
    let mut conn = legacy(json!({"resources": {"subscribe": true}}));
    for code in [
        codes::INVALID_PARAMS,
        codes::INTERNAL_ERROR,
        codes::RESOURCE_NOT_FOUND,
    ] {
        let (sub, _) = send(
            &mut conn,
            Method::Subscribe,
            json!({"uri": "docs://a"}),
            "sub",
        );
        let (_, _, _, outcome) = response(&mut conn, error(sub, code));
        assert!(
            matches!(outcome, Err(ResponseError::Rpc(ref e)) if e.code == code),
            "{outcome:?}"
        );
    }
    assert!(conn.violations().is_empty());
}

#[test]
fn violation_listen_is_judged_by_the_filter_fields_it_asked_for() {
    let caps = json!({"tools": {"listChanged": true}, "prompts": {}});
    let mut cfg = config(ProtocolChoice::Auto);
    cfg.gate_policy = GatePolicy::Lenient;
    let mut conn: Conn = modern_connection(cfg, caps);
    let mut out = Outbox::new();
    // Lenient: an undeclared field is sent; -32601 to it is a plain error.
    let undeclared = ListenFilter {
        prompts_list_changed: true,
        ..Default::default()
    };
    let id = conn.listen(&undeclared, "l1", t0(), &mut out).unwrap();
    take(MODERN, &mut out);
    let (_, _, _, outcome) = response(&mut conn, error(id, codes::METHOD_NOT_FOUND));
    assert!(matches!(outcome, Err(ResponseError::Rpc(_))), "{outcome:?}");
    // Nothing asked for: nothing declared was exercised either.
    let id = conn
        .listen(&ListenFilter::default(), "l2", t0(), &mut out)
        .unwrap();
    take(MODERN, &mut out);
    let (_, _, _, outcome) = response(&mut conn, error(id, codes::METHOD_NOT_FOUND));
    assert!(matches!(outcome, Err(ResponseError::Rpc(_))), "{outcome:?}");
    assert!(conn.violations().is_empty());
    // Only declared fields: -32601 breaks the contract.
    let declared = ListenFilter {
        tools_list_changed: true,
        ..Default::default()
    };
    let id = conn.listen(&declared, "l3", t0(), &mut out).unwrap();
    take(MODERN, &mut out);
    let (_, _, _, outcome) = response(&mut conn, error(id, codes::METHOD_NOT_FOUND));
    assert!(
        matches!(outcome, Err(ResponseError::Violation(ref v)) if v.method == Method::Listen),
        "{outcome:?}"
    );
    assert_eq!(conn.violations().len(), 1);
    let (refusal, _) = conn
        .listen(&declared, "l4", t0(), &mut out)
        .map_err(refusal_of)
        .unwrap_err();
    assert_eq!(
        refusal,
        Refusal::MarkedBroken {
            method: Method::Listen
        }
    );
    assert!(out.is_empty());
}

#[test]
fn violation_method_not_found_for_ungated_methods_is_a_plain_error() {
    let mut conn = legacy(json!({}));
    let (ping, _) = send(&mut conn, Method::Ping, json!({}), "ping");
    let (_, _, _, outcome) = response(&mut conn, error(ping, codes::METHOD_NOT_FOUND));
    assert!(matches!(outcome, Err(ResponseError::Rpc(_))));
    assert!(conn.violations().is_empty());
    send(&mut conn, Method::Ping, json!({}), "ping");
}

// ---------------------------------------------------------------------------------
// Undeclared notifications.
// ---------------------------------------------------------------------------------

fn notification(conn: &mut Conn, message: Value) -> (String, Vec<Notice>) {
    let mut out = Outbox::new();
    match feed(conn, message, &mut out) {
        Event::Notification { method, params, .. } => {
            assert!(out.is_empty(), "a notification is never answered");
            let _ = params.decode_or_default::<Value>().unwrap();
            (method, conn.take_notices())
        }
        other => panic!("expected a notification, got {other:?}"),
    }
}

#[test]
fn undeclared_list_changed_yields_a_notice_but_is_still_delivered() {
    let mut conn = legacy(json!({"resources": {}}));
    let (method, notices) = notification(
        &mut conn,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}),
    );
    assert_eq!(method, "notifications/resources/list_changed");
    assert_eq!(
        notices,
        vec![Notice::UndeclaredNotification {
            method: "notifications/resources/list_changed".into(),
            needs: "resources.listChanged".into()
        }]
    );
    let (_, notices) = notification(
        &mut conn,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    );
    assert_eq!(notices.len(), 1);
    let (_, notices) = notification(
        &mut conn,
        json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "hello"}}),
    );
    assert_eq!(
        notices,
        vec![Notice::UndeclaredNotification {
            method: "notifications/message".into(),
            needs: "logging".into()
        }]
    );
}

#[test]
fn declared_notifications_raise_no_notice() {
    let mut conn = legacy(everything());
    for method in [
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/message",
        "notifications/some/extension",
    ] {
        let (m, notices) = notification(
            &mut conn,
            json!({"jsonrpc": "2.0", "method": method, "params": {"level": "info", "data": 1}}),
        );
        assert_eq!(m, method);
        assert!(notices.is_empty(), "{method}: {notices:?}");
    }
}

#[test]
fn resource_updates_are_expected_only_for_subscribed_uris() {
    let mut conn = legacy(json!({"resources": {"subscribe": true}}));
    let updated = |uri: &str| json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}});
    let (_, notices) = notification(&mut conn, updated("docs://a"));
    assert!(
        matches!(&notices[..], [Notice::UnexpectedUpdate { uri }] if uri == "docs://a"),
        "not subscribed: {notices:?}"
    );
    // The subscription counts from the moment its answer is routed: an update right
    // behind it (in the same read) is expected.
    let (id, _) = send(
        &mut conn,
        Method::Subscribe,
        json!({"uri": "docs://a"}),
        "sub",
    );
    assert!(response(&mut conn, result(id, json!({}))).3.is_ok());
    let (_, notices) = notification(&mut conn, updated("docs://a"));
    assert!(notices.is_empty(), "{notices:?}");
    let (_, notices) = notification(&mut conn, updated("docs://a/child"));
    assert!(notices.is_empty(), "a sub-resource of a subscription");
    assert_eq!(conn.subscriptions().collect::<Vec<_>>(), ["docs://a"]);
    let (id, _) = send(
        &mut conn,
        Method::Unsubscribe,
        json!({"uri": "docs://a"}),
        "unsub",
    );
    assert!(response(&mut conn, result(id, json!({}))).3.is_ok());
    let (_, notices) = notification(&mut conn, updated("docs://a"));
    assert_eq!(notices.len(), 1);
    // A refused subscription records nothing.
    let (id, _) = send(
        &mut conn,
        Method::Subscribe,
        json!({"uri": "docs://b"}),
        "sub",
    );
    assert!(response(&mut conn, error(id, codes::INTERNAL_ERROR))
        .3
        .is_err());
    assert_eq!(conn.subscriptions().count(), 0);
}
