//! `capable bridge --config FILE` as it starts: the host's first request is answered
//! once every server came out of its first start, never held through the restarts of
//! a server that keeps crashing; that server's restarts are in the audit as they
//! happen, and a server that comes later joins with `list_changed`.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use bridge_support::{many, many_entry};
use capable::internal::ProtocolVersion;
use serde_json::json;

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;

#[test]
fn one_broken_entry_does_not_hold_the_answer_to_the_host() {
    let (mut b, _file) = many(
        "start",
        json!({
            "good": many_entry("no-resources", &[]),
            "broken": many_entry("no-resources", &["--fault", "exit-in-handshake"]),
        }),
        &[],
    );
    let answer = b.initialize(V, json!({}));
    assert!(
        answer["result"]["capabilities"]["tools"].is_object(),
        "{answer}"
    );
    // Answered while the broken server is still being started again: its restart is
    // said, and it has not been given up yet.
    let audit = b.audit();
    let of_broken = |state: &str| {
        audit
            .iter()
            .any(|l| l["server"] == "broken" && l["state"] == state)
    };
    assert!(of_broken("restarting"), "{audit:?}");
    assert!(
        !of_broken("failed"),
        "answered only after the restarts: {audit:?}"
    );
    // The good server is served meanwhile.
    let tools = b.request(2, "tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"good__echo"), "{names:?}");
    let call = b.request(
        3,
        "tools/call",
        json!({"name": "good__echo", "arguments": {"message": "here"}}),
    );
    assert_eq!(call["result"]["content"][0]["text"], "here", "{call}");
}

/// A read by a server's template needs no list first: the bridge learns the servers'
/// templates when a URI is nobody's yet, and routes the read to the server whose
/// template it fits.
#[test]
fn a_read_by_template_is_routed_before_any_list() {
    let (mut b, _file) = many(
        "template",
        json!({
            "docs": many_entry("read-only", &[]),
            "conformance": many_entry("conformance", &[]),
        }),
        &[],
    );
    b.initialize(V, json!({}));
    let read = b.request(
        2,
        "resources/read",
        json!({"uri": "test://template/42/data"}),
    );
    let text = read["result"]["contents"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("Data for ID: 42"), "{read}");
    // A URI no server offers is still refused, with why.
    let none = b.request(3, "resources/read", json!({"uri": "nope://x"}));
    assert_eq!(none["error"]["code"], -32602, "{none}");
}
