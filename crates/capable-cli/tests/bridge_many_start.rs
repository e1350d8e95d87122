//! `capable bridge --config FILE` as it starts: the host's first request is answered
//! once every server came out of its first start, never held through the restarts of
//! a server that keeps crashing; that server's restarts are in the audit as they
//! happen, and a server that comes later joins with `list_changed`.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
mod listen_support;

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

/// On one of many replicas (a seal key given), a server whose entry says it must not
/// run per replica (`perReplica: false`: it keeps what a session did in its own
/// process) is left out, saying why; the others are served as ever.
#[test]
fn on_a_replica_a_server_that_must_not_run_per_replica_is_left_out_with_why() {
    let key = common::TempFile::new("bridge-many-replica.key", &"5a".repeat(32));
    let mut pad = many_entry("no-resources", &[]);
    pad["perReplica"] = json!(false);
    let config = json!({"mcpServers": {"pad": pad, "good": many_entry("no-resources", &[])}});
    let file = common::TempFile::new("bridge-many-replica.json", &config.to_string());
    let flags = ["--config", file.path(), "--seal-key-file", key.path()];
    let (b, port) = listen_support::listening_env(&flags, &[]);
    let session = listen_support::initialize(port);
    let list = listen_support::post(
        port,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let list = match list.header("content-type") {
        Some(t) if t.starts_with("text/event-stream") => list.events().pop().unwrap(),
        _ => list.json(),
    };
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"good__echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("pad")), "{names:?}");
    // Left out, it is not waited for: the replica is ready.
    let ready = listen_support::http_at(port, "GET", "/readyz", &[], "");
    assert_eq!(ready.status, 200, "{}", ready.body);
    let said = b.stderr_text();
    assert!(
        said.contains("\"pad\"") && said.contains("perReplica: false"),
        "{said}"
    );
    // Bridged alone (`--server pad`), such a replica refuses to start, saying why.
    let alone = common::capable(
        &[
            "--config",
            file.path(),
            "--server",
            "pad",
            "bridge",
            "--listen",
            "127.0.0.1:0",
            "--seal-key-file",
            key.path(),
        ],
        std::time::Duration::from_secs(30),
    );
    assert_ne!(alone.code, Some(0), "{}", alone.stderr);
    assert!(
        alone.stderr.contains("perReplica: false"),
        "{}",
        alone.stderr
    );
}
