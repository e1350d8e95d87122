//! A legacy (2025-06-18) HTTP server whose answers a test writes: the tools it lists,
//! what a call of any of them returns, what a read of any URI returns. For what the
//! fixture does not serve (images, audio, nested argument schemas) without changing
//! one of its profiles.

use capable_test_support::http_peer::faults::OwnRuntimePeer;
use capable_test_support::http_peer::{initialize_result, result, Reply, Seen};
use serde_json::{json, Value};

/// What the server answers.
#[derive(Clone, Default)]
pub struct Script {
    /// The `tools` of `tools/list`.
    pub tools: Vec<Value>,
    /// The result of every `tools/call`.
    pub call: Value,
    /// The `contents` of every `resources/read`.
    pub contents: Vec<Value>,
}

/// Starts the server on 127.0.0.1; it stops when the peer is dropped.
pub fn start(script: Script) -> OwnRuntimePeer {
    OwnRuntimePeer::start(move |s: &Seen| {
        let id = s.rpc_id().cloned().unwrap_or(Value::Null);
        let ok = |value: Value| Reply::Json(200, vec![], result(&id, value));
        match (s.method.as_str(), s.rpc_method()) {
            ("POST", Some("server/discover")) => Reply::Status(400, vec![]),
            ("POST", Some("initialize")) => Reply::Json(
                200,
                vec![],
                initialize_result(&id, "2025-06-18", json!({"tools": {}, "resources": {}})),
            ),
            ("POST", Some(m)) if m.starts_with("notifications/") => Reply::Status(202, vec![]),
            ("POST", Some("tools/list")) => ok(json!({"tools": script.tools})),
            ("POST", Some("tools/call")) => ok(script.call.clone()),
            ("POST", Some("resources/list")) => ok(json!({"resources": []})),
            ("POST", Some("resources/read")) => ok(json!({"contents": script.contents})),
            ("GET", _) => Reply::Status(405, vec![]),
            ("DELETE", _) => Reply::Status(200, vec![]),
            _ => Reply::Status(404, vec![]),
        }
    })
}
