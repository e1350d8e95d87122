//! The profiles whose life is odd: one that hangs at start, one that crashes soon
//! after its handshake, one whose tools change while it runs; and the legacy servers
//! that meet the modern probe badly (silence, -32602) or answer `initialize` with a
//! version nobody speaks. What happens before the engine sees a message is here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use capable_core::internal::jsonrpc::{self, codes, Incoming, RequestId, RpcError};
use capable_core::internal::server::Phase;
use serde_json::{json, Value};

use super::{Fixture, Profile};

/// How many tools `grow` added (one fixture per process).
static GROWN: AtomicU64 = AtomicU64::new(0);

/// Handles a request before the engine does, when the profile breaks the rules there;
/// `true` when it is dealt with (answered, or deliberately not).
pub(super) fn intercept(f: &Arc<Fixture>, msg: &Incoming) -> bool {
    let Incoming::Request { id, method, .. } = msg else {
        return false;
    };
    let fresh = f.engine(|s, _| matches!(s.phase(), Phase::Fresh)).0;
    match (f.profile, method.as_str()) {
        // Reads every message and answers none.
        (Profile::HangStart, _) => true,
        (Profile::CrashSoon, "initialize") => {
            let after = f.update_interval;
            std::thread::spawn(move || {
                std::thread::sleep(after);
                eprintln!("capable fixture: crashing soon after the handshake, as asked");
                std::process::exit(3);
            });
            false
        }
        (Profile::UnsupportedVersion, "initialize") => {
            let mut line = Vec::new();
            jsonrpc::write_result(
                &mut line,
                id,
                &json!({
                    "protocolVersion": "1999-01-01",
                    "capabilities": f.profile.capabilities(),
                    "serverInfo": super::server_info(f.profile),
                    "instructions": super::instructions(f.profile)
                }),
            );
            f.write(&line);
            true
        }
        (_, "initialize") => false,
        // A legacy server that never answers what comes before `initialize`.
        (Profile::SilentProbe, _) if fresh => true,
        // A legacy server that rejects the modern probe's params.
        (Profile::ProbeInvalidParams, _) if fresh => {
            let mut line = Vec::new();
            let error = RpcError {
                code: codes::INVALID_PARAMS,
                message: "Invalid params: expected initialize first".into(),
                data: None,
            };
            jsonrpc::write_error(&mut line, id, &error);
            f.write(&line);
            true
        }
        _ => false,
    }
}

/// Answers what `tools-changed` does differently; `true` when it answered.
pub(super) fn handle(f: &Arc<Fixture>, id: &RequestId, method: &str, params: &Value) -> bool {
    match (f.profile, method) {
        (Profile::ToolsChanged, "tools/list") => {
            let mut tools = vec![
                json!({"name": "echo", "description": "Echoes its message.", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}),
                json!({"name": "grow", "description": "Adds a tool and says the list changed.", "inputSchema": {"type": "object"}}),
            ];
            for n in 1..=GROWN.load(Ordering::SeqCst) {
                tools
                    .push(json!({"name": format!("grown-{n}"), "inputSchema": {"type": "object"}}));
            }
            f.result(id, &json!({"tools": tools}));
            true
        }
        (Profile::ToolsChanged, "tools/call")
            if params.get("name").and_then(Value::as_str) == Some("grow") =>
        {
            let n = GROWN.fetch_add(1, Ordering::SeqCst) + 1;
            f.notify("notifications/tools/list_changed", &json!({}));
            f.result(
                id,
                &json!({"content": [{"type": "text", "text": format!("added grown-{n}")}]}),
            );
            true
        }
        _ => false,
    }
}
