//! Scripted-peer tests of the modern `_meta` envelope on a ready connection: what every
//! request carries next to its own params, the progress and log-level members, params
//! that bring their own `_meta` (in either era), the methods 2026-07-28 no longer has,
//! refused locally, and the listen filter whose every field is gated by its flag. Every
//! line the client writes is validated against the official schema of the negotiated
//! version.

mod common;

use capable_core::Outbox;
use capable_core::{
    Capability, ClientCapabilities, Flag, GatePolicy, ListenFilter, LogLevel, Method,
    ProtocolChoice, Refusal, Timing,
};
use capable_test_support::{config, modern_connection, t0, take};
use common::{everything, legacy, modern, refusal_of, refuse, send, Conn, MODERN, V};
use serde_json::json;

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
        ..Default::default()
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
    let mut out = Outbox::new();
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
fn a_log_level_is_a_request_in_the_legacy_era_and_part_of_the_envelope_in_the_modern() {
    let mut old = legacy(json!({"logging": {}}));
    assert_eq!(old.ask_log_level("debug"), Ok(LogLevel::Send));
    let mut conn = modern(json!({"logging": {}, "tools": {}}));
    assert_eq!(conn.ask_log_level("error"), Ok(LogLevel::InMeta));
    let (_, line) = send(&mut conn, Method::ListTools, json!({}), "w");
    assert_eq!(
        line["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        "error"
    );
    // Not declared: refused under the strict gate, kept under the lenient one.
    let mut silent = modern(json!({"tools": {}}));
    assert!(matches!(
        silent.ask_log_level("error"),
        Err(Refusal::CapabilityNotDeclared {
            method: Method::SetLoggingLevel,
            ..
        })
    ));
    let (_, line) = send(&mut silent, Method::ListTools, json!({}), "w");
    assert!(line["params"]["_meta"]
        .get("io.modelcontextprotocol/logLevel")
        .is_none());
    let mut cfg = config(ProtocolChoice::Auto);
    cfg.gate_policy = GatePolicy::Lenient;
    let mut lenient: Conn = modern_connection(cfg, json!({"tools": {}}));
    assert_eq!(lenient.ask_log_level("error"), Ok(LogLevel::InMeta));
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
    let mut out = Outbox::new();
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
    let text = String::from_utf8(out.to_vec()).unwrap();
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
        let mut out = Outbox::new();
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
        let mut out = Outbox::new();
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
    let mut out = Outbox::new();
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
    let mut out = Outbox::new();
    let (refusal, _) = conn
        .listen(&ListenFilter::default(), "listen", t0(), &mut out)
        .map_err(refusal_of)
        .unwrap_err();
    assert!(matches!(refusal, Refusal::NotInVersion { .. }));
    assert!(out.is_empty());
}
