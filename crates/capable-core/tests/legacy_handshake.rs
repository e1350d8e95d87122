//! Scripted-peer tests of the legacy handshake (`initialize`): the client's first
//! message, every way a server can answer it, and what the client writes (or must not
//! write) in reply. Every line the client writes is validated against the official
//! schema of the version it speaks.

mod common;

use capable_core::internal::jsonrpc::codes;
use capable_core::Outbox;
use capable_core::{
    Era, Negotiating, NegotiationError, Notice, ProtocolChoice, ProtocolVersion, RpcError,
};
use capable_test_support::{config, incoming, initialize_result, t0, take};
use common::{error_answer, failed, ready, start, waiting, LATEST_LEGACY, LEGACY, MODERN};
use serde_json::json;

#[test]
fn legacy_first_message_is_initialize_proposing_2025_11_25_with_client_info() {
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    assert!(!n.is_probing());
    assert_eq!(n.proposed(), LATEST_LEGACY);
    assert_eq!(first["method"], "initialize");
    assert!(first["id"].is_i64(), "capable issues integer ids: {first}");
    assert_eq!(first["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        first["params"]["clientInfo"],
        json!({"name": "capable-test", "version": "9.9.9"})
    );
    assert_eq!(first["params"]["capabilities"], json!({}));
}

#[test]
fn legacy_every_legacy_answer_is_accepted_and_initialized_is_written_first() {
    for answered in LEGACY {
        let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
        let mut out = Outbox::new();
        let answer = initialize_result(
            &first["id"],
            answered.as_str(),
            json!({"tools": {}, "resources": {"subscribe": true}}),
        );
        let established = ready(n.handle(incoming(answer), t0(), &mut out));
        let sent = take(answered, &mut out);
        assert_eq!(
            sent,
            vec![json!({"jsonrpc": "2.0", "method": "notifications/initialized"})],
            "answering {answered}: notifications/initialized is the first and only message"
        );
        let negotiated = &established.negotiated;
        assert_eq!(negotiated.version, answered);
        assert_eq!(negotiated.era(), Era::Legacy);
        assert_eq!(negotiated.server_info.name, "scripted");
        assert_eq!(negotiated.server_info.version, "1.2.3");
        assert!(negotiated.capabilities.has_flag(
            capable_core::Capability::Resources,
            capable_core::Flag::Subscribe
        ));
    }
}

#[test]
fn legacy_an_unknown_or_modern_answer_fails_and_nothing_more_is_written() {
    for answered in ["1999-01-01", "2026-07-28", "", "2025-11-25 "] {
        let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
        let mut out = Outbox::new();
        let answer = initialize_result(&first["id"], answered, json!({}));
        let error = failed(n.handle(incoming(answer), t0(), &mut out));
        assert!(
            out.is_empty(),
            "{answered:?}: wrote {:?}",
            String::from_utf8_lossy(&out)
        );
        assert_eq!(
            error,
            NegotiationError::UnsupportedVersion {
                proposed: LATEST_LEGACY,
                answered: answered.to_owned(),
                supported: LEGACY.to_vec(),
            }
        );
        let text = error.to_string();
        for needle in [
            "2025-11-25",
            answered,
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
        ] {
            assert!(text.contains(needle), "{text:?} should name {needle:?}");
        }
    }
}

#[test]
fn legacy_a_server_ping_before_the_answer_gets_an_empty_result_and_nothing_else() {
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut out = Outbox::new();
    let ping = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"});
    let n = waiting(n.handle(incoming(ping), t0(), &mut out));
    assert_eq!(
        take(LATEST_LEGACY, &mut out),
        vec![json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}})]
    );
    // A numeric id equal to our own request's id is the server's, not ours.
    let ping = json!({"jsonrpc": "2.0", "id": first["id"], "method": "ping", "params": {}});
    let n = waiting(n.handle(incoming(ping), t0(), &mut out));
    assert_eq!(
        take(LATEST_LEGACY, &mut out),
        vec![json!({"jsonrpc": "2.0", "id": first["id"], "result": {}})]
    );
    // The handshake still completes.
    let answer = initialize_result(&first["id"], "2025-06-18", json!({}));
    ready(n.handle(incoming(answer), t0(), &mut out));
}

#[test]
fn legacy_another_server_request_before_the_answer_writes_nothing() {
    for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
        let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
        let mut out = Outbox::new();
        let request = json!({"jsonrpc": "2.0", "id": 77, "method": method, "params": {}});
        let mut n = waiting(n.handle(incoming(request), t0(), &mut out));
        assert!(
            out.is_empty(),
            "{method}: wrote {:?}",
            String::from_utf8_lossy(&out)
        );
        assert_eq!(
            n.take_notices(),
            vec![Notice::RequestBeforeReady {
                method: method.into()
            }]
        );
        let answer = initialize_result(&first["id"], "2025-11-25", json!({}));
        ready(n.handle(incoming(answer), t0(), &mut out));
        assert_eq!(take(LATEST_LEGACY, &mut out).len(), 1);
    }
}

#[test]
fn legacy_notifications_before_the_answer_are_kept_for_delivery() {
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut out = Outbox::new();
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "booting"}});
    let n = waiting(n.handle(incoming(log), t0(), &mut out));
    assert!(out.is_empty());
    let answer = initialize_result(&first["id"], "2025-11-25", json!({"logging": {}}));
    let established = ready(n.handle(incoming(answer), t0(), &mut out));
    assert_eq!(
        established.early_notifications,
        vec![(
            "notifications/message".to_owned(),
            json!({"level": "info", "data": "booting"})
        )]
    );
}

#[test]
fn legacy_an_answer_to_another_id_is_ignored_with_a_notice() {
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut out = Outbox::new();
    let stray = initialize_result(&json!(12345), "2025-11-25", json!({}));
    let n = waiting(n.handle(incoming(stray), t0(), &mut out));
    let stray = error_answer(&json!("zzz"), -32601, None);
    let mut n = waiting(n.handle(incoming(stray), t0(), &mut out));
    assert!(out.is_empty());
    assert_eq!(
        n.take_notices(),
        vec![
            Notice::UnknownResponseId {
                id: capable_core::RequestId::Number(12345)
            },
            Notice::UnknownResponseId {
                id: capable_core::RequestId::String("zzz".into())
            },
        ]
    );
    let answer = initialize_result(&first["id"], "2025-11-25", json!({}));
    ready(n.handle(incoming(answer), t0(), &mut out));
}

#[test]
fn legacy_an_error_without_id_is_taken_as_the_refusal_of_initialize() {
    let (n, _) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut out = Outbox::new();
    let answer = json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}});
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert!(matches!(error, NegotiationError::InitializeRefused(e) if e.code == -32700));
}

#[test]
fn legacy_an_error_answer_to_initialize_fails_as_refused() {
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut out = Outbox::new();
    let answer = error_answer(&first["id"], codes::INTERNAL_ERROR, None);
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert_eq!(
        error,
        NegotiationError::InitializeRefused(RpcError {
            code: codes::INTERNAL_ERROR,
            message: "scripted error".into(),
            data: None,
        })
    );
}

#[test]
fn legacy_an_initialize_error_naming_the_supported_versions_is_a_version_refusal() {
    // The specification's own example of a server that cannot speak the proposed
    // version: -32602 with `data.supported`. Typed as such, never found by the words of
    // the message.
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut out = Outbox::new();
    let data = json!({"supported": ["2024-11-05"], "requested": "2025-11-25"});
    let answer = error_answer(&first["id"], codes::INVALID_PARAMS, Some(data.clone()));
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert_eq!(
        error,
        NegotiationError::VersionRefused {
            proposed: LATEST_LEGACY,
            server: vec!["2024-11-05".into()],
            error: Box::new(RpcError {
                code: -32602,
                message: "scripted error".into(),
                data: Some(data),
            }),
        }
    );
    assert!(error.to_string().contains("2024-11-05"), "{error}");
    // The message alone decides nothing: an error about "versions" without the data is
    // a plain refusal.
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut answer = error_answer(&first["id"], codes::INVALID_PARAMS, None);
    answer["error"]["message"] = json!("unsupported protocol version");
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(
        matches!(error, NegotiationError::InitializeRefused(_)),
        "{error:?}"
    );
}

#[test]
fn legacy_a_malformed_initialize_result_fails_as_malformed() {
    let cases = [
        (
            "missing serverInfo",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        ),
        (
            "capabilities not an object",
            json!({"protocolVersion": "2025-11-25", "capabilities": [],
                "serverInfo": {"name": "s", "version": "1"}}),
        ),
        (
            "capabilities a string",
            json!({"protocolVersion": "2025-11-25", "capabilities": "all",
                "serverInfo": {"name": "s", "version": "1"}}),
        ),
        (
            "protocolVersion not a string",
            json!({"protocolVersion": 20251125, "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"}}),
        ),
        (
            "serverInfo without version",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "s"}}),
        ),
        ("result not an object", json!("ok")),
    ];
    for (what, result) in cases {
        let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
        let mut out = Outbox::new();
        let answer = json!({"jsonrpc": "2.0", "id": first["id"], "result": result});
        let error = failed(n.handle(incoming(answer), t0(), &mut out));
        assert!(
            out.is_empty(),
            "{what}: wrote {:?}",
            String::from_utf8_lossy(&out)
        );
        assert!(
            matches!(
                error,
                NegotiationError::MalformedAnswer {
                    method: "initialize",
                    ..
                }
            ),
            "{what}: {error:?}"
        );
    }
}

#[test]
fn legacy_exact_2025_06_18_proposes_it_and_refuses_2025_03_26() {
    let exact = ProtocolVersion::V2025_06_18;
    let (n, first) = start(ProtocolChoice::Exact(exact), exact);
    assert_eq!(first["method"], "initialize");
    assert_eq!(first["params"]["protocolVersion"], "2025-06-18");
    let mut out = Outbox::new();
    let answer = initialize_result(&first["id"], "2025-03-26", json!({}));
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert_eq!(
        error,
        NegotiationError::UnsupportedVersion {
            proposed: exact,
            answered: "2025-03-26".into(),
            supported: vec![exact],
        }
    );
    // …and accepts exactly itself.
    let (n, first) = start(ProtocolChoice::Exact(exact), exact);
    let answer = initialize_result(&first["id"], "2025-06-18", json!({}));
    let established = ready(n.handle(incoming(answer), t0(), &mut out));
    assert_eq!(established.negotiated.version, exact);
    assert_eq!(take(exact, &mut out).len(), 1);
}

#[test]
fn a_preferred_version_is_proposed_first_and_any_other_accepted() {
    let preferred = ProtocolVersion::V2025_06_18;
    let mut cfg = config(ProtocolChoice::Prefer(preferred));
    cfg.era_hint = Some(capable_core::Era::Legacy);
    let mut out = Outbox::new();
    let n = Negotiating::start(cfg, t0(), &mut out);
    let first = take(preferred, &mut out).remove(0);
    assert_eq!(first["params"]["protocolVersion"], "2025-06-18");
    let answer = initialize_result(&first["id"], "2025-11-25", json!({}));
    let established = ready(n.handle(incoming(answer), t0(), &mut out));
    assert_eq!(established.negotiated.version, ProtocolVersion::V2025_11_25);
    // Without the hint it probes the modern era first, as Auto does.
    let (_, first) = start(ProtocolChoice::Prefer(preferred), MODERN);
    assert_eq!(first["method"], "server/discover");
}

#[test]
fn legacy_the_client_capabilities_it_declares_validate_in_every_version() {
    for version in LEGACY {
        let mut cfg = config(ProtocolChoice::Exact(version));
        cfg.capabilities = capable_core::ClientCapabilities {
            roots: true,
            sampling: true,
            elicitation_form: true,
            elicitation_url: true,
            ..Default::default()
        };
        let mut out = Outbox::new();
        Negotiating::start(cfg, t0(), &mut out);
        let sent = take(version, &mut out);
        assert_eq!(sent[0]["params"]["protocolVersion"], version.as_str());
        let caps = &sent[0]["params"]["capabilities"];
        assert!(caps.get("roots").is_some() && caps.get("sampling").is_some());
        assert_eq!(
            caps.get("elicitation").is_some(),
            version >= ProtocolVersion::V2025_06_18,
            "{version}: {caps}"
        );
    }
}
