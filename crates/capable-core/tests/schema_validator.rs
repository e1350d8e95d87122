//! Tests of the schema validator the other tests rely on: it accepts what the official
//! schemas allow and must be able to say no — to a wrong field type, a missing required
//! param, or a method the version does not have.

mod common;

use capable_core::ProtocolVersion;
use capable_test_support::{assert_valid, SchemaValidator};
use common::{LATEST_LEGACY, LEGACY, MODERN};
use serde_json::{json, Value};

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
