//! Scripted-peer tests of capability gating on a ready legacy connection: what each
//! declaration allows, what it refuses before anything is sent, the lenient policy that
//! sends undeclared methods, completion in 2024-11-05, and a second `initialize`. Every
//! line the client writes is validated against the official schema of the negotiated
//! version.

mod common;

use capable_core::internal::jsonrpc::codes;
use capable_core::{
    Capability, Flag, Method, ProtocolChoice, ProtocolVersion, Refusal, ResponseError,
};
use capable_test_support::{config, legacy_connection};
use common::{error, everything, legacy, lenient, refuse, response, send, Conn};
use serde_json::json;

#[test]
fn gating_empty_resources_allows_reading_but_refuses_subscribing() {
    let mut conn = legacy(json!({"resources": {}}));
    send(
        &mut conn,
        Method::ReadResource,
        json!({"uri": "docs://a"}),
        "r",
    );
    send(&mut conn, Method::ListResources, json!({}), "l");
    send(&mut conn, Method::ListResourceTemplates, json!({}), "t");
    for method in [Method::Subscribe, Method::Unsubscribe] {
        let refusal = refuse(&mut conn, method, json!({"uri": "docs://a"}));
        assert!(
            matches!(&refusal, Refusal::FlagNotDeclared { capability: Capability::Resources,
                flag: Flag::Subscribe, declared, .. } if *declared == json!({})),
            "{refusal:?}"
        );
        assert!(refusal.to_string().contains("nothing was sent"));
    }
    assert_eq!(
        conn.check(Method::Subscribe),
        Err(Refusal::FlagNotDeclared {
            method: Method::Subscribe,
            capability: Capability::Resources,
            flag: Flag::Subscribe,
            declared: json!({})
        })
    );
}

#[test]
fn gating_subscribe_true_allows_subscribe_and_read() {
    let mut conn = legacy(json!({"resources": {"subscribe": true}}));
    send(
        &mut conn,
        Method::Subscribe,
        json!({"uri": "docs://a"}),
        "s",
    );
    send(
        &mut conn,
        Method::Unsubscribe,
        json!({"uri": "docs://a"}),
        "u",
    );
    send(
        &mut conn,
        Method::ReadResource,
        json!({"uri": "docs://a"}),
        "r",
    );
    assert!(conn.actions().contains(&Method::Subscribe));
}

#[test]
fn gating_subscribe_must_be_literally_true() {
    for declared in [
        json!({"subscribe": false}),
        json!({"subscribe": "true"}),
        json!({"subscribe": 1}),
        json!({"listChanged": true}),
    ] {
        let mut conn = legacy(json!({ "resources": declared }));
        refuse(&mut conn, Method::Subscribe, json!({"uri": "docs://a"}));
        send(
            &mut conn,
            Method::ReadResource,
            json!({"uri": "docs://a"}),
            "r",
        );
    }
}

#[test]
fn gating_without_resources_reading_is_refused() {
    let mut conn = legacy(json!({"tools": {}}));
    let refusal = refuse(&mut conn, Method::ReadResource, json!({"uri": "docs://a"}));
    assert_eq!(
        refusal,
        Refusal::CapabilityNotDeclared {
            method: Method::ReadResource,
            capability: Capability::Resources
        }
    );
    refuse(&mut conn, Method::ListResources, json!({}));
    refuse(&mut conn, Method::ListPrompts, json!({}));
    refuse(&mut conn, Method::SetLoggingLevel, json!({"level": "info"}));
    refuse(
        &mut conn,
        Method::Complete,
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}),
    );
    send(&mut conn, Method::ListTools, json!({}), "t");
    send(&mut conn, Method::Ping, json!({}), "p");
    assert_eq!(
        conn.actions(),
        vec![Method::Ping, Method::ListTools, Method::CallTool]
    );
}

#[test]
fn gating_lenient_policy_sends_undeclared_methods() {
    let mut conn = lenient(json!({"resources": {}}));
    let (read, _) = send(&mut conn, Method::ListTools, json!({}), "tools");
    let (sub, _) = send(
        &mut conn,
        Method::Subscribe,
        json!({"uri": "docs://a"}),
        "sub",
    );
    send(
        &mut conn,
        Method::SetLoggingLevel,
        json!({"level": "debug"}),
        "log",
    );
    // A -32601 to an undeclared method is a plain error, not a violation.
    for id in [read, sub] {
        let (_, _, _, outcome) = response(&mut conn, error(id, codes::METHOD_NOT_FOUND));
        assert!(
            matches!(outcome, Err(ResponseError::Rpc(ref e)) if e.code == -32601),
            "{outcome:?}"
        );
    }
    assert!(conn.violations().is_empty());
    // And the method is not marked broken: it can be sent again.
    send(
        &mut conn,
        Method::Subscribe,
        json!({"uri": "docs://a"}),
        "sub",
    );
}

#[test]
fn gating_completion_in_2024_11_05_is_allowed_without_a_flag() {
    let mut conn: Conn = legacy_connection(
        config(ProtocolChoice::Legacy),
        ProtocolVersion::V2024_11_05,
        json!({}),
    );
    let (id, _) = send(
        &mut conn,
        Method::Complete,
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}),
        "c",
    );
    // Nothing announced it, so -32601 is not a broken contract.
    let (_, _, _, outcome) = response(&mut conn, error(id, codes::METHOD_NOT_FOUND));
    assert!(matches!(outcome, Err(ResponseError::Rpc(_))));
    assert!(conn.violations().is_empty());
}

#[test]
fn a_second_initialize_is_refused_in_a_ready_legacy_session() {
    let mut conn: Conn = legacy(everything());
    let refusal = refuse(&mut conn, Method::Initialize, json!({}));
    assert_eq!(
        refusal,
        Refusal::HandshakeOnly {
            method: Method::Initialize
        }
    );
}
