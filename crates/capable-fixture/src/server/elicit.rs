//! The `confirm` tool: it asks the user for input — a modern server answers
//! `input_required` and reads the answer from the retry, a legacy one sends
//! `elicitation/create` and answers the call once the client answered it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use capable_core::jsonrpc::{self, codes, RequestId, RpcError};
use serde_json::{json, Value};

use super::Fixture;

/// The form the `confirm` tool asks for: a boolean and a string with defaults, a
/// titled multiple select and a legacy enum with `enumNames`.
fn confirm_request() -> Value {
    json!({
        "mode": "form",
        "message": "Confirm the acceptance run?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve", "default": true},
                "note": {"type": "string", "title": "Note", "default": "looks good"},
                "checks": {
                    "type": "array",
                    "title": "Checks run",
                    "items": {"anyOf": [
                        {"const": "unit", "title": "Unit tests"},
                        {"const": "browser", "title": "Browser tests"}
                    ]}
                },
                "channel": {
                    "type": "string",
                    "title": "Channel",
                    "enum": ["stable", "beta"],
                    "enumNames": ["Stable release", "Beta release"]
                }
            },
            "required": ["approve"]
        }
    })
}

fn confirm_text(answer: &Value) -> String {
    format!(
        "confirmed: action={} content={}",
        answer.get("action").and_then(Value::as_str).unwrap_or("?"),
        answer.get("content").cloned().unwrap_or(Value::Null)
    )
}

impl Fixture {
    /// The client's answer to our elicitation request `id`: the result of the tool
    /// call waiting on it.
    pub(super) fn answer_elicitation(&self, id: &RequestId, answer: Result<Value, RpcError>) {
        let call = {
            let Ok(mut e) = self.elicitations.lock() else {
                return;
            };
            let Some(pos) = e.iter().position(|(eid, _)| eid == id) else {
                return;
            };
            e.remove(pos).1
        };
        let result = match answer {
            Ok(a) => json!({"content": [{"type": "text", "text": confirm_text(&a)}]}),
            Err(e) => {
                json!({"content": [{"type": "text", "text": format!("elicitation failed: {e}")}], "isError": true})
            }
        };
        self.result(&call, &result);
    }
}

/// `tools/call confirm`: asks for input — a modern server with an `input_required`
/// result (and its answer in the retry), a legacy one with `elicitation/create`.
pub(super) fn confirm(f: &Arc<Fixture>, id: RequestId, params: &Value, modern: bool) {
    if modern {
        let declared = params
            .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/elicitation")
            .is_some();
        if !declared {
            return f.error(
                &id,
                codes::MISSING_CLIENT_CAPABILITY,
                "confirm needs the elicitation client capability",
                Some(json!({"requiredCapabilities": {"elicitation": {}}})),
            );
        }
        match (params.pointer("/inputResponses/confirm"), params.get("requestState")) {
            (Some(answer), Some(state)) if state == "confirm-1" => f.result(
                &id,
                &json!({"resultType": "complete", "content": [{"type": "text", "text": confirm_text(answer)}]}),
            ),
            _ => f.result(
                &id,
                &json!({
                    "resultType": "input_required",
                    "inputRequests": {"confirm": {"method": "elicitation/create", "params": confirm_request()}},
                    "requestState": "confirm-1"
                }),
            ),
        }
        return;
    }
    if !f.client_elicits.load(Ordering::SeqCst) {
        return f.result(
            &id,
            &json!({"content": [{"type": "text", "text": "this client cannot be asked for input"}], "isError": true}),
        );
    }
    let eid = RequestId::String(format!("elicit-{id}"));
    if let Ok(mut e) = f.elicitations.lock() {
        e.push((eid.clone(), id));
    }
    let mut buf = Vec::new();
    jsonrpc::write_request(&mut buf, &eid, "elicitation/create", &confirm_request());
    f.write(&buf);
}
