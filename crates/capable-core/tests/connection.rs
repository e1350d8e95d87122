//! Scripted-peer tests of a ready connection: gating, the modern `_meta` envelope,
//! routing of answers to their waiters, cancellation, server requests, contract
//! violations and robustness against garbage. Every line the client writes is validated
//! against the official schema of the negotiated version.

use std::collections::HashSet;

use capable_core::jsonrpc::codes;
use capable_core::{
    Capability, ClientCapabilities, Connection, Event, Flag, GatePolicy, Incoming, ListenFilter,
    Method, NotSent, Notice, ProtocolChoice, ProtocolVersion, Refusal, RequestId, ResponseError,
    Timing,
};
use capable_test_support::{config, feed, legacy_connection, modern_connection, now, t0, take};
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

type Conn = Connection<&'static str>;

fn legacy(capabilities: Value) -> Conn {
    legacy_connection(config(ProtocolChoice::Legacy), V, capabilities)
}

fn lenient(capabilities: Value) -> Conn {
    let mut cfg = config(ProtocolChoice::Legacy);
    cfg.gate_policy = GatePolicy::Lenient;
    legacy_connection(cfg, V, capabilities)
}

fn modern(capabilities: Value) -> Conn {
    modern_connection(config(ProtocolChoice::Auto), capabilities)
}

/// Issues a request that must be allowed; returns its id and the one line written.
fn send(conn: &mut Conn, method: Method, params: Value, waiter: &'static str) -> (i64, Value) {
    let mut out = Vec::new();
    let id = conn
        .request(
            method,
            &params,
            Timing::new().with_progress(false),
            waiter,
            t0(),
            &mut out,
        )
        .unwrap_or_else(|(refusal, _)| panic!("{method} refused: {refusal}"));
    let mut sent = take(conn.version(), &mut out);
    assert_eq!(sent.len(), 1);
    let line = sent.remove(0);
    assert_eq!(line["id"], json!(id));
    assert_eq!(line["method"], method.as_str());
    (id, line)
}

/// Issues a request that must be refused locally, with nothing written.
fn refuse(conn: &mut Conn, method: Method, params: Value) -> Refusal {
    let mut out = Vec::new();
    let in_flight = conn.in_flight();
    match conn.request(
        method,
        &params,
        Timing::new().with_progress(false),
        "refused",
        t0(),
        &mut out,
    ) {
        Ok(id) => panic!(
            "{method} was sent as {id}: {}",
            String::from_utf8_lossy(&out)
        ),
        Err((NotSent::Refused(refusal), waiter)) => {
            assert!(out.is_empty(), "a refusal writes nothing");
            assert_eq!(waiter, "refused", "the waiter is handed back");
            assert_eq!(conn.in_flight(), in_flight, "nothing registered");
            assert_eq!(refusal.method(), method);
            refusal
        }
        Err((other, _)) => panic!("{method} was not sent, but not refused: {other}"),
    }
}

/// A request that was not sent because the gate refused it: the refusal and the waiter.
fn refusal_of<W>((why, waiter): (NotSent, W)) -> (Refusal, W) {
    match why {
        NotSent::Refused(refusal) => (refusal, waiter),
        other => panic!("not a refusal: {other}"),
    }
}

fn result(id: impl Into<Value>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "result": result})
}

fn error(id: impl Into<Value>, code: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "error": {"code": code, "message": "scripted"}})
}

/// Feeds a message that must produce the response to `id`.
fn response(
    conn: &mut Conn,
    message: Value,
) -> (
    i64,
    Method,
    &'static str,
    Result<capable_core::Payload, ResponseError>,
) {
    let mut out = Vec::new();
    match feed(conn, message, &mut out) {
        Event::Response {
            id,
            method,
            waiter,
            outcome,
        } => {
            assert!(out.is_empty(), "a response is not answered");
            (id, method, waiter, outcome)
        }
        other => panic!("expected a response, got {other:?}"),
    }
}

/// Feeds a message that must be handled internally, returning what was written
/// (validated) and the notices it raised.
fn handled(conn: &mut Conn, message: Value) -> (Vec<Value>, Vec<Notice>) {
    let mut out = Vec::new();
    match feed(conn, message, &mut out) {
        Event::Handled => {}
        other => panic!("expected Handled, got {other:?}"),
    }
    (take(conn.version(), &mut out), conn.take_notices())
}

// ---------------------------------------------------------------------------------
// Modern connection: the `_meta` envelope and the methods that no longer exist.
// ---------------------------------------------------------------------------------

const EVERYTHING: &str = r#"{"resources": {"subscribe": true, "listChanged": true},
    "tools": {"listChanged": true}, "prompts": {"listChanged": true},
    "completions": {}, "logging": {}}"#;

fn everything() -> Value {
    serde_json::from_str(EVERYTHING).unwrap()
}

#[test]
fn modern_every_request_carries_the_meta_envelope_next_to_its_own_params() {
    let mut conn = modern(everything());
    assert_eq!(conn.version(), MODERN);
    let cases = [
        (Method::ReadResource, json!({"uri": "docs://a"})),
        (Method::ListResources, json!({})),
        (Method::ListResources, json!({"cursor": "c1"})),
        (Method::ListResourceTemplates, json!({})),
        (Method::ListTools, json!({})),
        (
            Method::CallTool,
            json!({"name": "echo", "arguments": {"message": "hi\nthere"}}),
        ),
        (Method::ListPrompts, json!({})),
        (
            Method::GetPrompt,
            json!({"name": "p", "arguments": {"a": "b"}}),
        ),
        (
            Method::Complete,
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                "argument": {"name": "a", "value": "x"}}),
        ),
        (Method::Discover, json!({})),
    ];
    for (method, params) in cases {
        let (_, line) = send(&mut conn, method, params.clone(), "w");
        let meta = &line["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{line}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({})
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"],
            json!({"name": "capable-test", "version": "9.9.9"})
        );
        for (key, value) in params.as_object().unwrap() {
            assert_eq!(&line["params"][key], value, "{method} keeps {key}: {line}");
        }
        assert_eq!(
            line["params"].as_object().unwrap().len(),
            params.as_object().unwrap().len() + 1,
            "only _meta is added: {line}"
        );
    }
}

#[test]
fn modern_the_envelope_declares_the_client_capabilities_the_host_handles() {
    let mut cfg = config(ProtocolChoice::Auto);
    cfg.capabilities = ClientCapabilities {
        roots: true,
        sampling: true,
        elicitation_form: true,
        elicitation_url: false,
    };
    let mut conn: Conn = modern_connection(cfg, everything());
    let (_, line) = send(&mut conn, Method::ListTools, json!({}), "w");
    assert_eq!(
        line["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"roots": {}, "sampling": {}, "elicitation": {"form": {}}})
    );
}

#[test]
fn modern_progress_and_log_level_join_the_envelope() {
    let mut conn = modern(everything());
    conn.set_modern_log_level(Some("warning".into()));
    let mut out = Vec::new();
    let id = conn
        .request(
            Method::CallTool,
            &json!({"name": "slow"}),
            Timing::new().with_progress(true),
            "w",
            t0(),
            &mut out,
        )
        .unwrap();
    let line = take(MODERN, &mut out).remove(0);
    let meta = &line["params"]["_meta"];
    assert_eq!(meta["progressToken"], json!(id));
    assert_eq!(meta["io.modelcontextprotocol/logLevel"], "warning");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(line["params"]["name"], "slow");
    conn.set_modern_log_level(None);
    let (_, line) = send(&mut conn, Method::ListTools, json!({}), "w");
    assert!(line["params"]["_meta"]
        .get("io.modelcontextprotocol/logLevel")
        .is_none());
}

#[test]
fn modern_params_with_their_own_meta_keep_it_merged_into_the_envelope() {
    let mut conn = modern(everything());
    let params = json!({"name": "echo", "_meta": {"com.example/trace": "t-1"}});
    let (_, line) = send(&mut conn, Method::CallTool, params, "w");
    let meta = &line["params"]["_meta"];
    assert_eq!(meta["com.example/trace"], "t-1", "{line}");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(line["params"]["name"], "echo");
    let raw = serde_json::to_string(&line).unwrap();
    assert_eq!(raw.matches("\"_meta\"").count(), 1, "{raw}");
}

#[test]
fn legacy_params_with_their_own_meta_and_progress_keep_both() {
    let mut conn = legacy(everything());
    let mut out = Vec::new();
    let params = json!({"name": "echo", "_meta": {"com.example/trace": "t-1"}});
    let id = conn
        .request(
            Method::CallTool,
            &params,
            Timing::new().with_progress(true),
            "w",
            t0(),
            &mut out,
        )
        .unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    assert_eq!(
        text.matches("\"_meta\"").count(),
        1,
        "one _meta member: {text}"
    );
    let line = take(V, &mut out).remove(0);
    assert_eq!(line["params"]["_meta"]["progressToken"], json!(id));
    assert_eq!(line["params"]["_meta"]["com.example/trace"], "t-1");
    // Without progress, the host's params pass through untouched.
    let (_, line) = send(&mut conn, Method::CallTool, params.clone(), "w");
    assert_eq!(line["params"], params);
}

#[test]
fn modern_ping_subscribe_and_set_level_are_refused_locally() {
    for policy in [GatePolicy::Strict, GatePolicy::Lenient] {
        let mut cfg = config(ProtocolChoice::Auto);
        cfg.gate_policy = policy;
        let mut conn: Conn = modern_connection(cfg, everything());
        for (method, params) in [
            (Method::Ping, json!({})),
            (Method::Subscribe, json!({"uri": "docs://a"})),
            (Method::Unsubscribe, json!({"uri": "docs://a"})),
            (Method::SetLoggingLevel, json!({"level": "info"})),
            (Method::Initialize, json!({})),
        ] {
            let refusal = refuse(&mut conn, method, params);
            assert_eq!(
                refusal,
                Refusal::NotInVersion {
                    method,
                    version: MODERN
                },
                "{policy:?}"
            );
        }
        assert!(!conn.actions().contains(&Method::Ping));
        assert!(!conn.actions().contains(&Method::Subscribe));
    }
}

#[test]
fn modern_listen_filter_fields_are_each_gated_by_their_flag() {
    let caps = json!({"tools": {"listChanged": true}, "prompts": {},
        "resources": {"subscribe": true}});
    let mut conn = modern(caps);
    let ok = [
        ListenFilter {
            tools_list_changed: true,
            ..Default::default()
        },
        ListenFilter {
            resource_subscriptions: vec!["docs://a".into()],
            ..Default::default()
        },
        ListenFilter {
            tools_list_changed: true,
            resource_subscriptions: vec!["docs://a".into(), "docs://b".into()],
            ..Default::default()
        },
    ];
    for filter in ok {
        let mut out = Vec::new();
        let id = conn.listen(&filter, "listen", t0(), &mut out).unwrap();
        let line = take(MODERN, &mut out).remove(0);
        assert_eq!(line["id"], json!(id));
        assert_eq!(line["method"], "subscriptions/listen");
        let n = &line["params"]["notifications"];
        assert_eq!(
            n.get("toolsListChanged").is_some(),
            filter.tools_list_changed
        );
        assert_eq!(
            n.get("resourceSubscriptions").is_some(),
            !filter.resource_subscriptions.is_empty()
        );
        assert!(n.get("promptsListChanged").is_none());
        assert_eq!(
            line["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }
    let refused = [
        (
            ListenFilter {
                prompts_list_changed: true,
                ..Default::default()
            },
            Capability::Prompts,
            Flag::ListChanged,
        ),
        (
            ListenFilter {
                resources_list_changed: true,
                ..Default::default()
            },
            Capability::Resources,
            Flag::ListChanged,
        ),
        (
            // One undeclared field refuses the whole request.
            ListenFilter {
                tools_list_changed: true,
                prompts_list_changed: true,
                ..Default::default()
            },
            Capability::Prompts,
            Flag::ListChanged,
        ),
    ];
    for (filter, capability, flag) in refused {
        let mut out = Vec::new();
        let in_flight = conn.in_flight();
        let (refusal, waiter) = conn
            .listen(&filter, "listen", t0(), &mut out)
            .map_err(refusal_of)
            .unwrap_err();
        assert!(out.is_empty());
        assert_eq!(waiter, "listen");
        assert_eq!(conn.in_flight(), in_flight);
        assert!(
            matches!(refusal, Refusal::FlagNotDeclared { capability: c, flag: f, .. }
                if c == capability && f == flag),
            "{refusal:?}"
        );
    }
    // Without tools at all, toolsListChanged names the missing capability.
    let mut conn = modern(json!({}));
    let mut out = Vec::new();
    let filter = ListenFilter {
        tools_list_changed: true,
        ..Default::default()
    };
    let (refusal, _) = conn
        .listen(&filter, "listen", t0(), &mut out)
        .map_err(refusal_of)
        .unwrap_err();
    assert_eq!(
        refusal,
        Refusal::CapabilityNotDeclared {
            method: Method::Listen,
            capability: Capability::Tools
        }
    );
    assert!(out.is_empty());
}

#[test]
fn legacy_listen_does_not_exist() {
    let mut conn = legacy(everything());
    let mut out = Vec::new();
    let (refusal, _) = conn
        .listen(&ListenFilter::default(), "listen", t0(), &mut out)
        .map_err(refusal_of)
        .unwrap_err();
    assert!(matches!(refusal, Refusal::NotInVersion { .. }));
    assert!(out.is_empty());
}

// ---------------------------------------------------------------------------------
// Gating over a legacy connection.
// ---------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------
// Routing.
// ---------------------------------------------------------------------------------

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
    let mut out = Vec::new();
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
        let mut out = Vec::new();
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
    };
    let mut conn: Conn = legacy_connection(cfg, V, json!({}));
    for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
        let mut out = Vec::new();
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
    let mut out = Vec::new();
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

#[test]
fn routing_progress_with_our_token_is_an_event_and_an_unknown_token_a_notice() {
    for (mut conn, version) in [(legacy(everything()), V), (modern(everything()), MODERN)] {
        let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
    match feed(conn, message, &mut out) {
        Event::Notification { method, params } => {
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
    assert_eq!(notices.len(), 1, "not subscribed: {notices:?}");
    conn.record_subscription("docs://a");
    let (_, notices) = notification(&mut conn, updated("docs://a"));
    assert!(notices.is_empty());
    let (_, notices) = notification(&mut conn, updated("docs://a/child"));
    assert!(notices.is_empty(), "a sub-resource of a subscription");
    conn.forget_subscription("docs://a");
    let (_, notices) = notification(&mut conn, updated("docs://a"));
    assert_eq!(notices.len(), 1);
}

// ---------------------------------------------------------------------------------
// Robustness.
// ---------------------------------------------------------------------------------

/// A deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const SEEDS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"docs://a","text":"A"}]}}"#,
    r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#,
    r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"bad","data":{"x":[1,2]}}}"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"roots/list","params":{}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":1,"total":2}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"docs://a"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"é\u0000"}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
    r#"{"jsonrpc":"2.0","id":6,"result":null}"#,
    r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
];

const ALPHABET: &[u8] =
    br#"{}[]":,0123456789-+.eE truefalsnul\"jsonrpc2.0idmethodparamsresulterrorcode"#;

fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(120);
    (0..len)
        .map(|_| match rng.below(4) {
            0 => rng.next() as u8,
            _ => *rng.pick(ALPHABET),
        })
        .collect()
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..=rng.below(4) {
        if bytes.is_empty() {
            bytes.push(*rng.pick(ALPHABET));
            continue;
        }
        let at = rng.below(bytes.len());
        match rng.below(7) {
            0 => bytes[at] = rng.next() as u8,
            1 => bytes[at] = *rng.pick(ALPHABET),
            2 => {
                bytes.remove(at);
            }
            3 => bytes.insert(at, *rng.pick(ALPHABET)),
            4 => bytes.truncate(at),
            5 => {
                // Swap a number for another, possibly huge or negative, number.
                let n = *rng.pick(&["0", "-1", "9223372036854775807", "1e400", "5", "1.5"]);
                let digit = bytes.iter().position(|b| b.is_ascii_digit());
                if let Some(d) = digit {
                    bytes.splice(d..d + 1, n.bytes());
                }
            }
            _ => {
                let other = rng.pick(SEEDS).as_bytes();
                let cut = rng.below(other.len());
                bytes.extend_from_slice(&other[cut..]);
            }
        }
    }
    bytes
}

/// A random JSON value, small.
fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(*rng.pick(&[0i64, 1, 2, 5, -1, i64::MAX, i64::MIN])),
        3 => json!(*rng.pick(&[0.5f64, 1e300, -0.0])),
        4 => json!(*rng.pick(&[
            "",
            "ping",
            "2.0",
            "notifications/progress",
            "roots/list",
            "docs://a",
            "\u{0}\n",
        ])),
        5 => json!(rng.next().to_string()),
        6 => Value::Array(
            (0..rng.below(3))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "jsonrpc",
                "id",
                "method",
                "params",
                "result",
                "error",
                "code",
                "message",
                "data",
                "progressToken",
                "progress",
                "uri",
                "_meta",
            ];
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(4) {
                map.insert((*rng.pick(&keys)).to_owned(), random_value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

/// Replaces, adds or removes one member somewhere in a valid message: stays JSON, so
/// it exercises classification and routing rather than the JSON parser.
fn mutate_value(rng: &mut Rng, value: &mut Value) {
    match value {
        Value::Object(map) if !map.is_empty() && rng.below(3) != 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            match rng.below(4) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(key, random_value(rng, 0));
                }
                _ => mutate_value(rng, map.get_mut(&key).unwrap()),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.below(3) != 0 => {
            let at = rng.below(items.len());
            mutate_value(rng, &mut items[at]);
        }
        Value::Object(map) => {
            let key = *rng.pick(&["id", "result", "error", "method", "params", "extra"]);
            map.insert(key.to_owned(), random_value(rng, 0));
        }
        other => *other = random_value(rng, 0),
    }
}

#[test]
fn robustness_garbage_never_panics_the_parser_or_a_ready_connection() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut legacy_conn = legacy(everything());
    let mut modern_conn = modern(everything());
    // Requests in flight, so random answers and progress have something to hit.
    let mut out = Vec::new();
    for conn in [&mut legacy_conn, &mut modern_conn] {
        for _ in 0..8 {
            conn.request(
                Method::ListTools,
                &json!({}),
                Timing::new().with_progress(true),
                "w",
                t0(),
                &mut out,
            )
            .unwrap();
        }
        out.clear();
    }
    let mut parsed = 0;
    for round in 0..9000 {
        let seed = rng.pick(SEEDS).as_bytes().to_vec();
        let bytes = match round % 3 {
            0 => random_bytes(&mut rng),
            1 => mutate(&mut rng, &seed),
            _ => match serde_json::from_slice::<Value>(&seed) {
                Ok(mut value) => {
                    for _ in 0..=rng.below(2) {
                        mutate_value(&mut rng, &mut value);
                    }
                    serde_json::to_vec(&value).unwrap()
                }
                Err(_) => seed,
            },
        };
        let Ok(_) = Incoming::parse(bytes.clone()) else {
            continue;
        };
        parsed += 1;
        for (conn, version) in [(&mut legacy_conn, V), (&mut modern_conn, MODERN)] {
            let message = Incoming::parse(bytes.clone()).unwrap();
            let _ = conn.handle(message, capable_test_support::moment(), &mut out);
            // Whatever the client answered is a valid message.
            take(version, &mut out);
            conn.take_notices();
            // Keep requests in flight.
            // (A random -32601 may have marked a method broken: try several.)
            if conn.in_flight() < 4 {
                for method in [
                    Method::ListTools,
                    Method::ListPrompts,
                    Method::ListResources,
                ] {
                    if conn
                        .request(
                            method,
                            &json!({}),
                            Timing::new().with_progress(true),
                            "w",
                            t0(),
                            &mut out,
                        )
                        .is_ok()
                    {
                        break;
                    }
                }
                take(version, &mut out);
            }
        }
    }
    assert!(
        parsed > 500,
        "the mutations should produce many parseable messages, got {parsed}"
    );
}

#[test]
fn robustness_every_seed_message_parses_and_is_handled() {
    let mut conn = legacy(everything());
    let mut out = Vec::new();
    for seed in SEEDS {
        match Incoming::parse(seed.as_bytes().to_vec()) {
            Ok(message) => {
                let _ = conn.handle(message, capable_test_support::moment(), &mut out);
                take(V, &mut out);
            }
            Err(e) => assert!(seed.starts_with('['), "{seed}: {e}"),
        }
    }
}
