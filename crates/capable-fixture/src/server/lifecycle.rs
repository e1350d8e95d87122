//! The profiles a host of many servers meets: one that hangs at start, one that
//! crashes soon after its handshake, one whose tools change while it runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use capable_core::jsonrpc::RequestId;
use serde_json::{json, Value};

use super::{Fixture, Profile};

/// How many tools `grow` added (one fixture per process).
static GROWN: AtomicU64 = AtomicU64::new(0);

/// Handles what these profiles do differently; `true` when the request is answered
/// (or, for `hang-start`, deliberately not).
pub(super) fn handle(f: &Arc<Fixture>, id: &RequestId, method: &str, params: &Value) -> bool {
    match (f.profile, method) {
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
