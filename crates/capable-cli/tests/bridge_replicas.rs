//! `capable bridge --listen` as replicas sharing a seal key: a legacy session begun on
//! one replica is continued on another (its state sealed into its `Mcp-Session-Id`);
//! a tampered id, or one sealed under a key no longer in the ring, is `404`.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::path::PathBuf;

use listen_support::{initialize_at, listening, post};
use serde_json::json;

/// A key file in a directory of the test's own: 32 bytes of `byte`, as hex.
fn key_file(name: &str, byte: u8) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capable-replicas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{byte:02x}").repeat(32)).unwrap();
    path
}

/// `tools/call echo` in session `session` on `port`: the status, and the text it echoed.
fn echo(port: u16, session: &str, message: &str) -> (u16, String) {
    let answer = post(
        port,
        &[("Mcp-Session-Id", session)],
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": message}}}),
    );
    if answer.status != 200 {
        return (answer.status, answer.body);
    }
    let result = match answer.header("content-type") {
        Some(t) if t.starts_with("text/event-stream") => answer.events().pop().unwrap(),
        _ => answer.json(),
    };
    let text = result["result"]["content"][0]["text"].as_str();
    (200, text.unwrap_or_default().to_owned())
}

#[test]
fn a_sealed_session_goes_on_at_any_replica_holding_its_key_and_no_other() {
    let old = key_file("old.key", 0x11);
    let new = key_file("new.key", 0x22);
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    // A seals with the old key; B, mid-rotation, with the new one and still opens the
    // old; C retired the old key.
    let (_a, a) = listening(&["--seal-key-file", old], "elicit");
    let (_b, b) = listening(
        &["--seal-key-file", new, "--seal-key-previous", old],
        "elicit",
    );
    let (c_bridge, c) = listening(&["--seal-key-file", new], "elicit");

    let session = initialize_at(a, "2025-06-18");
    assert!(session.len() > 100, "a sealed id: {session}");
    assert!(!session.contains("2025-06-18") && !session.contains("\"h\""));
    assert_eq!(echo(a, &session, "on a"), (200, "on a".to_owned()));
    // B never saw the session: it continues it from the seal, at the version the host
    // negotiated with A.
    assert_eq!(echo(b, &session, "on b"), (200, "on b".to_owned()));
    let ping = post(
        b,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    );
    assert_eq!(ping.status, 200, "{}", ping.body);

    // Under a retired key, changed by one character, or not sealed at all: 404, and the
    // host initializes again.
    assert_eq!(echo(c, &session, "on c").0, 404);
    let mut tampered = session.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert_eq!(echo(b, &tampered, "tampered").0, 404);
    assert_eq!(echo(b, "0123456789abcdef0123456789abcdef", "random").0, 404);
    let refused = c_bridge.audit_until(|l| l["event"] == "sealed");
    assert_eq!(refused["restored"], false, "{refused}");
    assert!(
        !refused.to_string().contains(&session),
        "the id is not repeated: {refused}"
    );
}
