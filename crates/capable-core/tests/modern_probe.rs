//! Scripted-peer tests of the modern probe (`server/discover`) in auto and modern-only
//! mode: a DiscoverResult, the fallback to `initialize` on any other answer or a
//! timeout, the retry after an unsupported-version error, and answers that arrive late.
//! Every line the client writes is validated against the official schema of the version
//! it speaks.

mod common;

use capable_core::internal::jsonrpc::codes;
use capable_core::Outbox;
use capable_core::{Era, Method, NegotiationError, Notice, ProtocolChoice, ProtocolVersion, Step};
use capable_test_support::{config, discover_result, incoming, initialize_result, t0, take};
use common::{error_answer, failed, ready, start, waiting, LATEST_LEGACY, MODERN};
use serde_json::json;

#[test]
fn auto_first_message_is_server_discover_with_the_meta_envelope() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    assert!(n.is_probing());
    assert_eq!(n.proposed(), MODERN);
    assert_eq!(first["method"], "server/discover");
    let meta = &first["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"],
        json!({"name": "capable-test", "version": "9.9.9"})
    );
}

#[test]
fn auto_a_discover_result_makes_a_modern_connection_with_server_info_from_meta() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let mut answer = discover_result(&first["id"], json!({"resources": {"listChanged": true}}));
    answer["result"]["instructions"] = json!("read the docs");
    answer["result"]["supportedVersions"] = json!(["2025-11-25", "2026-07-28", "2099-01-01"]);
    let established = ready(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty(), "a modern connection writes nothing more");
    let negotiated = &established.negotiated;
    assert_eq!(negotiated.version, MODERN);
    assert_eq!(negotiated.era(), Era::Modern);
    assert_eq!(negotiated.server_info.name, "modern-scripted");
    assert_eq!(negotiated.server_info.version, "2.0.0");
    assert_eq!(negotiated.instructions.as_deref(), Some("read the docs"));
    assert_eq!(
        negotiated.server_versions,
        vec!["2025-11-25", "2026-07-28", "2099-01-01"]
    );
    assert!(negotiated.capabilities.has_flag(
        capable_core::Capability::Resources,
        capable_core::Flag::ListChanged
    ));
}

#[test]
fn auto_a_discover_result_without_result_type_counts_as_complete() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let mut answer = discover_result(&first["id"], json!({}));
    answer["result"]
        .as_object_mut()
        .unwrap()
        .remove("resultType");
    let established = ready(n.handle(incoming(answer), t0(), &mut out));
    assert_eq!(established.negotiated.version, MODERN);
}

/// After a fallback the next (and only) message is `initialize`, valid under the
/// version it proposes, and the legacy handshake then completes.
fn assert_falls_back(step: Step, out: &mut Outbox) {
    let mut n = waiting(step);
    assert!(!n.is_probing());
    assert_eq!(n.proposed(), LATEST_LEGACY);
    let sent = take(LATEST_LEGACY, out);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "initialize");
    assert_eq!(sent[0]["params"]["protocolVersion"], "2025-11-25");
    assert!(n
        .take_notices()
        .iter()
        .any(|notice| matches!(notice, Notice::LegacyFallback { .. })));
    let answer = initialize_result(&sent[0]["id"], "2025-03-26", json!({}));
    let established = ready(n.handle(incoming(answer), t0(), out));
    assert_eq!(established.negotiated.version, ProtocolVersion::V2025_03_26);
    let sent = take(ProtocolVersion::V2025_03_26, out);
    assert_eq!(sent[0]["method"], "notifications/initialized");
}

#[test]
fn auto_method_not_found_falls_back_to_initialize() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let answer = error_answer(&first["id"], codes::METHOD_NOT_FOUND, None);
    let step = n.handle(incoming(answer), t0(), &mut out);
    assert_falls_back(step, &mut out);
}

#[test]
fn auto_invalid_params_falls_back_too() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    // What a legacy server says to a request before initialize.
    let answer = error_answer(&first["id"], codes::INVALID_PARAMS, None);
    let step = n.handle(incoming(answer), t0(), &mut out);
    assert_falls_back(step, &mut out);
}

#[test]
fn auto_any_other_error_falls_back_too_not_keyed_to_one_code() {
    for code in [-32600, -32603, -32000, -32002, 1, 0] {
        let (n, first) = start(ProtocolChoice::Auto, MODERN);
        let mut out = Outbox::new();
        let answer = error_answer(&first["id"], code, None);
        let step = n.handle(incoming(answer), t0(), &mut out);
        assert_falls_back(step, &mut out);
    }
}

#[test]
fn auto_an_empty_result_is_not_a_discover_result_and_falls_back() {
    for result in [
        json!({}),
        json!({"supportedVersions": "2026-07-28", "capabilities": {}}),
        json!({"supportedVersions": ["2026-07-28"], "capabilities": []}),
        json!(null),
    ] {
        let (n, first) = start(ProtocolChoice::Auto, MODERN);
        let mut out = Outbox::new();
        let answer = json!({"jsonrpc": "2.0", "id": first["id"], "result": result});
        let step = n.handle(incoming(answer), t0(), &mut out);
        assert_falls_back(step, &mut out);
    }
}

#[test]
fn auto_a_probe_timeout_falls_back_and_a_late_error_to_the_probe_is_ignored() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let step = n.handle_timeout(t0() + config(ProtocolChoice::Auto).timeouts.probe, &mut out);
    let mut n = waiting(step);
    let sent = take(LATEST_LEGACY, &mut out);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "initialize");
    assert_ne!(sent[0]["id"], first["id"], "a new id for initialize");
    // The legacy server finally answers the probe with an error: ignored, still
    // waiting for the initialize answer.
    let late = error_answer(&first["id"], codes::METHOD_NOT_FOUND, None);
    n = waiting(n.handle(incoming(late), t0(), &mut out));
    assert!(out.is_empty());
    assert!(n
        .take_notices()
        .iter()
        .any(|notice| matches!(notice, Notice::LegacyFallback { .. })));
    let answer = initialize_result(&sent[0]["id"], "2025-11-25", json!({}));
    ready(n.handle(incoming(answer), t0(), &mut out));
    assert_eq!(take(LATEST_LEGACY, &mut out).len(), 1);
}

#[test]
fn auto_unsupported_version_naming_2026_07_28_stays_modern_and_never_initializes() {
    for protocol in [ProtocolChoice::Auto, ProtocolChoice::Modern] {
        let (n, first) = start(protocol, MODERN);
        let mut out = Outbox::new();
        let data = json!({"supported": ["2026-07-28"], "requested": "2026-07-28"});
        let answer = error_answer(
            &first["id"],
            codes::UNSUPPORTED_PROTOCOL_VERSION,
            Some(data),
        );
        let n = waiting(n.handle(incoming(answer), t0(), &mut out));
        assert!(n.is_probing(), "{protocol:?}: still modern");
        let sent = take(MODERN, &mut out);
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0]["method"], "server/discover",
            "{protocol:?}: retried, not initialize"
        );
        assert_eq!(
            sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_ne!(sent[0]["id"], first["id"]);
        let answer = discover_result(&sent[0]["id"], json!({}));
        let established = ready(n.handle(incoming(answer), t0(), &mut out));
        assert_eq!(established.negotiated.era(), Era::Modern);
        assert!(out.is_empty());
    }
}

#[test]
fn auto_a_second_unsupported_version_error_fails_instead_of_looping() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let data = json!({"supported": ["2026-07-28"], "requested": "2026-07-28"});
    let answer = error_answer(
        &first["id"],
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        Some(data.clone()),
    );
    let n = waiting(n.handle(incoming(answer), t0(), &mut out));
    let retry = take(MODERN, &mut out);
    let answer = error_answer(
        &retry[0]["id"],
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        Some(data),
    );
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty(), "no initialize after a modern error");
    assert!(
        matches!(error, NegotiationError::NoCommonVersion { .. }),
        "{error:?}"
    );
}

#[test]
fn auto_unsupported_version_listing_only_unknown_versions_fails_with_both_lists() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let data = json!({"supported": ["2027-01-01", "2099-12-31"], "requested": "2026-07-28"});
    let answer = error_answer(
        &first["id"],
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        Some(data),
    );
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty(), "wrote {:?}", String::from_utf8_lossy(&out));
    assert_eq!(
        error,
        NegotiationError::NoCommonVersion {
            server: vec!["2027-01-01".into(), "2099-12-31".into()],
            ours: ProtocolVersion::ALL.to_vec(),
        }
    );
    let text = error.to_string();
    for needle in ["2027-01-01", "2099-12-31", "2026-07-28", "2024-11-05"] {
        assert!(text.contains(needle), "{text:?} should name {needle}");
    }
}

#[test]
fn auto_unsupported_version_without_data_fails_without_initialize() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let answer = error_answer(&first["id"], codes::UNSUPPORTED_PROTOCOL_VERSION, None);
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert!(matches!(error, NegotiationError::NoCommonVersion { .. }));
}

#[test]
fn auto_missing_client_capability_fails_with_what_the_server_requires() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let required = json!({"sampling": {}});
    let answer = error_answer(
        &first["id"],
        codes::MISSING_CLIENT_CAPABILITY,
        Some(json!({"requiredCapabilities": required})),
    );
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert_eq!(
        error,
        NegotiationError::MissingClientCapability { required }
    );
}

#[test]
fn auto_an_unknown_result_type_in_discover_is_a_failure() {
    for result_type in ["input_required", "partial", ""] {
        let (n, first) = start(ProtocolChoice::Auto, MODERN);
        let mut out = Outbox::new();
        let mut answer = discover_result(&first["id"], json!({}));
        answer["result"]["resultType"] = json!(result_type);
        let error = failed(n.handle(incoming(answer), t0(), &mut out));
        assert!(out.is_empty(), "{result_type:?}: nothing written");
        assert!(
            matches!(
                error,
                NegotiationError::MalformedAnswer {
                    method: "server/discover",
                    ..
                }
            ),
            "{result_type:?}: {error:?}"
        );
    }
}

#[test]
fn auto_a_discover_result_without_a_common_modern_version_falls_back_to_legacy() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let mut answer = discover_result(&first["id"], json!({}));
    answer["result"]["supportedVersions"] = json!(["2099-01-01"]);
    let step = n.handle(incoming(answer), t0(), &mut out);
    assert_falls_back(step, &mut out);
}

#[test]
fn modern_only_never_falls_back_to_initialize() {
    let (n, first) = start(ProtocolChoice::Modern, MODERN);
    let mut out = Outbox::new();
    let answer = error_answer(&first["id"], codes::METHOD_NOT_FOUND, None);
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert!(
        matches!(
            error,
            NegotiationError::EraUnavailable {
                era: Era::Modern,
                ..
            }
        ),
        "{error:?}"
    );
    // Silence is a timeout of the handshake (after the request timeout: there is no
    // fallback to hurry to), never a fallback.
    let (n, _) = start(ProtocolChoice::Modern, MODERN);
    let request = config(ProtocolChoice::Modern).timeouts.request;
    let error = failed(n.handle_timeout(t0() + request, &mut out));
    assert!(out.is_empty());
    assert!(
        matches!(
            error,
            NegotiationError::Timeout {
                method: Method::Discover,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn modern_only_does_not_answer_a_server_ping_while_probing() {
    let (n, _) = start(ProtocolChoice::Modern, MODERN);
    let mut out = Outbox::new();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let mut n = waiting(n.handle(incoming(ping), t0(), &mut out));
    assert!(out.is_empty());
    assert_eq!(
        n.take_notices(),
        vec![Notice::RequestBeforeReady {
            method: "ping".into()
        }]
    );
}

#[test]
fn auto_a_ping_while_probing_is_answered_as_a_legacy_server_may_send_one() {
    let (n, _) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    let n = waiting(n.handle(incoming(ping), t0(), &mut out));
    assert!(n.is_probing());
    // The answer is a legacy message (modern has no ping).
    assert_eq!(
        take(LATEST_LEGACY, &mut out),
        vec![json!({"jsonrpc": "2.0", "id": 5, "result": {}})]
    );
}

#[test]
fn auto_a_discover_result_arriving_after_the_probe_timeout_still_makes_it_modern() {
    // A slow modern server: the client fell back to `initialize`, then the probe's
    // answer arrives. A dual-era server that locked into the modern era would refuse
    // the `initialize`; the late DiscoverResult settles it.
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let n = waiting(n.handle_timeout(t0() + config(ProtocolChoice::Auto).timeouts.probe, &mut out));
    let sent = take(LATEST_LEGACY, &mut out);
    assert_eq!(sent[0]["method"], "initialize");
    let answer = discover_result(&first["id"], json!({"tools": {}}));
    let established = ready(n.handle(incoming(answer), t0(), &mut out));
    assert_eq!(established.negotiated.era(), Era::Modern);
    assert!(
        out.is_empty(),
        "nothing more is written: no notifications/initialized"
    );
}

#[test]
fn auto_a_late_answer_that_is_not_a_discover_result_changes_nothing() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let n = waiting(n.handle_timeout(t0() + config(ProtocolChoice::Auto).timeouts.probe, &mut out));
    let _ = take(LATEST_LEGACY, &mut out);
    let late = json!({"jsonrpc": "2.0", "id": first["id"], "result": {}});
    let n = waiting(n.handle(incoming(late), t0(), &mut out));
    assert!(!n.is_probing());
    assert!(out.is_empty());
}

// ---------------------------------------------------------------------------------
// Requests the transport failed without a JSON-RPC answer (an HTTP status).
// ---------------------------------------------------------------------------------

fn id_of(message: &serde_json::Value) -> capable_core::RequestId {
    serde_json::from_value(message["id"].clone()).expect("an id")
}

#[test]
fn a_probe_the_transport_failed_falls_back_to_initialize() {
    use capable_core::{AfterFailure, RequestFailure};
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let why = "HTTP 405 from http://127.0.0.1:9/mcp".to_owned();
    let AfterFailure::Step(step) = n.handle_failure(
        &id_of(&first),
        RequestFailure::Transport,
        why,
        t0(),
        &mut out,
    ) else {
        panic!("a failed probe is an answer, not the end")
    };
    let mut n = waiting(step);
    let sent = take(LATEST_LEGACY, &mut out);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "initialize");
    assert!(n.take_notices().iter().any(
        |notice| matches!(notice, Notice::LegacyFallback { why } if why.contains("HTTP 405"))
    ));
    // A failure of `initialize` itself leaves nothing to try.
    let AfterFailure::Ends = n.handle_failure(
        &id_of(&sent[0]),
        RequestFailure::Transport,
        "HTTP 500".into(),
        t0(),
        &mut out,
    ) else {
        panic!("a failed initialize ends the handshake")
    };
    assert!(out.is_empty(), "nothing more is sent");
}

#[test]
fn a_failed_authorization_ends_the_handshake_even_for_the_probe() {
    use capable_core::{AfterFailure, RequestFailure};
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Outbox::new();
    let after = n.handle_failure(
        &id_of(&first),
        RequestFailure::Authorization,
        "401".into(),
        t0(),
        &mut out,
    );
    assert!(matches!(after, AfterFailure::Ends), "{after:?}");
    assert!(out.is_empty(), "no initialize after a failed authorization");
}

#[test]
fn modern_only_a_failed_probe_is_no_fallback() {
    use capable_core::{AfterFailure, RequestFailure};
    let (n, first) = start(ProtocolChoice::Modern, MODERN);
    let mut out = Outbox::new();
    let after = n.handle_failure(
        &id_of(&first),
        RequestFailure::Transport,
        "HTTP 404".into(),
        t0(),
        &mut out,
    );
    let AfterFailure::Step(step) = after else {
        panic!("the probe's failure is judged by the handshake")
    };
    assert!(matches!(
        failed(step),
        NegotiationError::EraUnavailable { .. }
    ));
    assert!(out.is_empty());
}

#[test]
fn a_probe_a_gateway_says_is_unavailable_ends_the_handshake_in_both_modes() {
    use capable_core::{AfterFailure, RequestFailure};
    // A 502/503/504 from the way to the server says nothing of its era: no fallback to
    // `initialize` (which would have the server remembered as legacy), and a modern-only
    // host is not told the server "does not speak" the modern era.
    for choice in [ProtocolChoice::Auto, ProtocolChoice::Modern] {
        let (n, first) = start(choice, MODERN);
        let mut out = Outbox::new();
        let after = n.handle_failure(
            &id_of(&first),
            RequestFailure::Unavailable,
            "HTTP 502 from http://127.0.0.1:9/mcp".into(),
            t0(),
            &mut out,
        );
        assert!(matches!(after, AfterFailure::Ends), "{choice:?}: {after:?}");
        assert!(out.is_empty(), "{choice:?}: nothing more is sent");
    }
}
