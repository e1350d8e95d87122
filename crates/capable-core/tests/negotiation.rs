//! Scripted-peer tests of the handshake: the client's first message, every way a server
//! can answer it, and what the client writes (or must not write) in reply. Every line the
//! client writes is validated against the official schema of the version it speaks.

use capable_core::jsonrpc::codes;
use capable_core::{
    Era, Established, Negotiating, NegotiationError, Notice, ProtocolChoice, ProtocolVersion,
    RpcError, Step,
};
use capable_test_support::{
    assert_valid, config, discover_result, incoming, initialize_result, t0, take, SchemaValidator,
};
use serde_json::{json, Value};

const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
const LEGACY: [ProtocolVersion; 4] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
];

/// Starts negotiating and returns the state and the one message written, validated
/// under `expected_version`.
fn start(protocol: ProtocolChoice, expected_version: ProtocolVersion) -> (Negotiating, Value) {
    let mut out = Vec::new();
    let n = Negotiating::start(config(protocol), t0(), &mut out);
    let mut sent = take(expected_version, &mut out);
    assert_eq!(sent.len(), 1, "exactly one first message: {sent:?}");
    (n, sent.remove(0))
}

fn waiting(step: Step) -> Negotiating {
    match step {
        Step::Waiting(n) => n,
        Step::Ready(e) => panic!("unexpectedly ready: {:?}", e.negotiated),
        Step::Failed(e) => panic!("unexpectedly failed: {e}"),
    }
}

fn ready(step: Step) -> Established {
    match step {
        Step::Ready(e) => *e,
        Step::Waiting(_) => panic!("still waiting"),
        Step::Failed(e) => panic!("failed: {e}"),
    }
}

fn failed(step: Step) -> NegotiationError {
    match step {
        Step::Failed(e) => e,
        Step::Waiting(_) => panic!("still waiting"),
        Step::Ready(e) => panic!("unexpectedly ready: {:?}", e.negotiated),
    }
}

fn error_answer(id: &Value, code: i64, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": "scripted error"});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

// ---------------------------------------------------------------------------------
// The validator itself: it must be able to say no.
// ---------------------------------------------------------------------------------

#[test]
fn the_schema_validator_accepts_what_the_schemas_allow() {
    let v = SchemaValidator::get();
    for version in LEGACY {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version.as_str(), "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}}});
        assert!(v.errors(version, &init).is_empty(), "{version}");
        let read = json!({"jsonrpc": "2.0", "id": "x", "method": "resources/read",
            "params": {"uri": "file:///a"}});
        assert!(v.errors(version, &read).is_empty(), "{version}");
        let pong = json!({"jsonrpc": "2.0", "id": 4, "result": {}});
        assert!(v.errors(version, &pong).is_empty(), "{version}");
        let err = json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "no"}});
        assert!(v.errors(version, &err).is_empty(), "{version}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(v.errors(version, &initialized).is_empty(), "{version}");
    }
}

#[test]
fn the_schema_validator_rejects_a_wrong_field_type() {
    let v = SchemaValidator::get();
    for version in ProtocolVersion::ALL {
        // `uri` must be a string.
        let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
            "params": {"uri": 42}});
        assert!(
            !v.errors(version, &bad).is_empty(),
            "{version} accepted {bad}"
        );
        // Ids are strings or integers, never null or fractional.
        for id in [Value::Null, json!(1.5), json!({"a": 1})] {
            let bad = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
            assert!(
                !v.errors(version, &bad).is_empty(),
                "{version} accepted {bad}"
            );
        }
        // jsonrpc must be "2.0".
        let bad = json!({"jsonrpc": "1.0", "method": "notifications/cancelled",
            "params": {"requestId": 1}});
        assert!(
            !v.errors(version, &bad).is_empty(),
            "{version} accepted {bad}"
        );
        // Error codes are integers.
        let bad = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "oops", "message": "m"}});
        assert!(
            !v.errors(version, &bad).is_empty(),
            "{version} accepted {bad}"
        );
    }
}

#[test]
fn the_schema_validator_rejects_a_missing_required_param() {
    let v = SchemaValidator::get();
    for version in LEGACY {
        // initialize without clientInfo.
        let bad = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version.as_str(), "capabilities": {}}});
        let errors = v.errors(version, &bad);
        assert!(!errors.is_empty(), "{version} accepted {bad}");
        assert!(
            errors.iter().any(|e| e.contains("clientInfo")),
            "the diagnostics name the missing member: {errors:?}"
        );
    }
    for version in ProtocolVersion::ALL {
        // resources/read without uri.
        let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
            "params": {"_meta": {}}});
        assert!(
            !v.errors(version, &bad).is_empty(),
            "{version} accepted {bad}"
        );
        // cancelled without requestId (optional in 2025-11-25 only, where tasks are
        // cancelled by other means).
        let bad = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}});
        if version != ProtocolVersion::V2025_11_25 {
            assert!(
                !v.errors(version, &bad).is_empty(),
                "{version} accepted {bad}"
            );
        }
        // cancelled without params at all.
        let bad = json!({"jsonrpc": "2.0", "method": "notifications/cancelled"});
        assert!(
            !v.errors(version, &bad).is_empty(),
            "{version} accepted {bad}"
        );
    }
}

#[test]
fn the_schema_validator_knows_which_methods_each_version_has() {
    let v = SchemaValidator::get();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert!(v.errors(LATEST_LEGACY, &ping).is_empty());
    assert!(
        !v.errors(MODERN, &ping).is_empty(),
        "ping is gone in 2026-07-28"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(!v.errors(MODERN, &initialized).is_empty());
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": {}}});
    assert!(!v.errors(LATEST_LEGACY, &discover).is_empty());
    assert!(
        !v.errors(MODERN, &discover).is_empty(),
        "the modern envelope needs protocolVersion and clientCapabilities"
    );
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    assert!(v.errors(MODERN, &discover).is_empty());
    let made_up = json!({"jsonrpc": "2.0", "id": 1, "method": "made/up", "params": {}});
    for version in ProtocolVersion::ALL {
        assert!(!v.errors(version, &made_up).is_empty());
    }
    // Modern results need resultType.
    let pong = json!({"jsonrpc": "2.0", "id": 4, "result": {}});
    assert!(!v.errors(MODERN, &pong).is_empty());
}

#[test]
#[should_panic(expected = "invalid under the 2025-06-18 schema")]
fn assert_valid_panics_with_the_message_it_refused() {
    assert_valid(
        ProtocolVersion::V2025_06_18,
        br#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{}}"#,
    );
}

// ---------------------------------------------------------------------------------
// Legacy handshake (ProtocolChoice::Legacy).
// ---------------------------------------------------------------------------------

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
        let mut out = Vec::new();
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
        let mut out = Vec::new();
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
    let mut out = Vec::new();
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
        let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
    let answer = json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}});
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert!(matches!(error, NegotiationError::InitializeRefused(e) if e.code == -32700));
}

#[test]
fn legacy_an_error_answer_to_initialize_fails_as_refused() {
    let (n, first) = start(ProtocolChoice::Legacy, LATEST_LEGACY);
    let mut out = Vec::new();
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
    let mut out = Vec::new();
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
        let mut out = Vec::new();
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
    let mut out = Vec::new();
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
fn legacy_the_client_capabilities_it_declares_validate_in_every_version() {
    for version in LEGACY {
        let mut cfg = config(ProtocolChoice::Exact(version));
        cfg.capabilities = capable_core::ClientCapabilities {
            roots: true,
            sampling: true,
            elicitation_form: true,
            elicitation_url: true,
        };
        let mut out = Vec::new();
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

// ---------------------------------------------------------------------------------
// Auto: probe with server/discover, fall back to initialize.
// ---------------------------------------------------------------------------------

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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
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
fn assert_falls_back(step: Step, out: &mut Vec<u8>) {
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
    let mut out = Vec::new();
    let answer = error_answer(&first["id"], codes::METHOD_NOT_FOUND, None);
    let step = n.handle(incoming(answer), t0(), &mut out);
    assert_falls_back(step, &mut out);
}

#[test]
fn auto_invalid_params_falls_back_too() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Vec::new();
    // What a legacy server says to a request before initialize.
    let answer = error_answer(&first["id"], codes::INVALID_PARAMS, None);
    let step = n.handle(incoming(answer), t0(), &mut out);
    assert_falls_back(step, &mut out);
}

#[test]
fn auto_any_other_error_falls_back_too_not_keyed_to_one_code() {
    for code in [-32600, -32603, -32000, -32002, 1, 0] {
        let (n, first) = start(ProtocolChoice::Auto, MODERN);
        let mut out = Vec::new();
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
        let mut out = Vec::new();
        let answer = json!({"jsonrpc": "2.0", "id": first["id"], "result": result});
        let step = n.handle(incoming(answer), t0(), &mut out);
        assert_falls_back(step, &mut out);
    }
}

#[test]
fn auto_a_probe_timeout_falls_back_and_a_late_error_to_the_probe_is_ignored() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Vec::new();
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
        let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
    let answer = error_answer(&first["id"], codes::UNSUPPORTED_PROTOCOL_VERSION, None);
    let error = failed(n.handle(incoming(answer), t0(), &mut out));
    assert!(out.is_empty());
    assert!(matches!(error, NegotiationError::NoCommonVersion { .. }));
}

#[test]
fn auto_missing_client_capability_fails_with_what_the_server_requires() {
    let (n, first) = start(ProtocolChoice::Auto, MODERN);
    let mut out = Vec::new();
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
        let mut out = Vec::new();
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
    let mut out = Vec::new();
    let mut answer = discover_result(&first["id"], json!({}));
    answer["result"]["supportedVersions"] = json!(["2099-01-01"]);
    let step = n.handle(incoming(answer), t0(), &mut out);
    assert_falls_back(step, &mut out);
}

#[test]
fn modern_only_never_falls_back_to_initialize() {
    let (n, first) = start(ProtocolChoice::Modern, MODERN);
    let mut out = Vec::new();
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
    let (n, _) = start(ProtocolChoice::Modern, MODERN);
    let error =
        failed(n.handle_timeout(t0() + config(ProtocolChoice::Auto).timeouts.probe, &mut out));
    assert!(out.is_empty());
    assert!(matches!(error, NegotiationError::EraUnavailable { .. }));
}

#[test]
fn modern_only_does_not_answer_a_server_ping_while_probing() {
    let (n, _) = start(ProtocolChoice::Modern, MODERN);
    let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
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
    let mut out = Vec::new();
    let n = waiting(n.handle_timeout(t0() + config(ProtocolChoice::Auto).timeouts.probe, &mut out));
    let _ = take(LATEST_LEGACY, &mut out);
    let late = json!({"jsonrpc": "2.0", "id": first["id"], "result": {}});
    let n = waiting(n.handle(incoming(late), t0(), &mut out));
    assert!(!n.is_probing());
    assert!(out.is_empty());
}
