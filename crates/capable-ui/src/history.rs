//! The history of what the page asked of the servers: every command that sends a
//! request (a tool call, a read, a prompt, a ping, …; not the completions asked as
//! the person types, which would bury the rest) with its server,
//! its MCP method, its body as sent, when, how long it took and how it ended — to
//! look back at, to send again as it was (the page replays it), and to put in a
//! session's report.
//!
//! It is recorded around the handlers, by [`middleware`], in one place: a handler
//! records nothing itself (it only marks a tool's failure on its answer, see
//! [`tool_reply`]). Each entry goes on the stream as a `history` event; the
//! last [`KEPT`] are kept for `GET /api/history`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use capable::core::model::CallToolResult;
use capable::ErrorKind;

use crate::bus::{now, Bus};
use crate::extract::Reply;
use crate::state::AppState;

/// How many entries are kept.
pub const KEPT: usize = 500;
/// The largest command body kept whole (a larger one is kept as its size, and cannot
/// be sent again from the history).
const MAX_KEPT_BODY: usize = 64 << 10;
/// The largest body read to record (commands are smaller: the extractor's bound).
const MAX_READ: usize = 8 << 20;
/// The largest error answer read for its words.
const MAX_ERROR: usize = 1 << 20;

/// The commands recorded: their path and the MCP method each sends.
const RECORDED: &[(&str, &str)] = &[
    ("/api/call", "tools/call"),
    ("/api/read", "resources/read"),
    ("/api/prompt", "prompts/get"),
    ("/api/ping", "ping"),
    ("/api/log-level", "logging/setLevel"),
    ("/api/tasks", "tasks/list"),
    ("/api/task", "tasks/get"),
    ("/api/skills", "skills/list"),
    ("/api/skill", "skills/get"),
    ("/api/app/call", "tools/call"),
    ("/api/app/read", "resources/read"),
];

/// The mark a handler puts on its answer (a response extension) when the tool's
/// result says `isError: true`: capable's API answered (HTTP 200), but what happened
/// at the server is the tool's own failure, and the history says so (`outcome:
/// "tool_error"`, as the CLI's exit code 9 does).
#[derive(Clone, Copy, Debug)]
pub struct ToolFailed;

/// A tool's result as the answer of a command: `reply`, marked [`ToolFailed`] when
/// `result` is the tool's failure.
pub fn tool_reply(reply: Reply, result: &CallToolResult) -> Response {
    let mut response = reply.into_response();
    if result.is_error == Some(true) {
        response.extensions_mut().insert(ToolFailed);
    }
    response
}

/// How a recorded command ended, in MCP terms: `result`, `tool_error`, or the kind of
/// the error it was answered with (`rpc_error`, `timeout`, …; `unexpected` when the
/// answer names none).
fn outcome(response: &Response, error_body: Option<&Value>) -> String {
    if response.status().is_success() {
        return match response.extensions().get::<ToolFailed>() {
            Some(_) => ErrorKind::ToolError.as_str().to_owned(),
            None => "result".to_owned(),
        };
    }
    error_body
        .and_then(|v| v.pointer("/error/kind"))
        .and_then(Value::as_str)
        .unwrap_or(ErrorKind::Unexpected.as_str())
        .to_owned()
}

/// The recorded commands.
#[derive(Clone)]
pub struct History {
    bus: Bus,
    next: Arc<AtomicU64>,
    kept: Arc<Mutex<VecDeque<Value>>>,
}

impl History {
    /// None yet.
    pub fn new(bus: Bus) -> History {
        History {
            bus,
            next: Arc::new(AtomicU64::new(1)),
            kept: Arc::default(),
        }
    }

    /// Every entry kept, oldest first; of one server only when `server` is given.
    pub fn entries(&self, server: Option<&str>) -> Vec<Value> {
        self.lock()
            .iter()
            .filter(|e| server.is_none_or(|s| e["server"] == s))
            .cloned()
            .collect()
    }

    fn record(&self, mut entry: Value) {
        entry["id"] = json!(self.next.fetch_add(1, Ordering::Relaxed));
        {
            let mut kept = self.lock();
            if kept.len() == KEPT {
                kept.pop_front();
            }
            kept.push_back(entry.clone());
        }
        self.bus.publish("history", entry);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Value>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The MCP method a command sends, if it is one the history records.
fn method_of(path: &str, body: &Value) -> Option<&'static str> {
    let (_, method) = RECORDED.iter().find(|(p, _)| *p == path)?;
    Some(match (*method, body["action"].as_str()) {
        ("tasks/get", Some("cancel")) => "tasks/cancel",
        (m, _) => m,
    })
}

/// Records each command that sends a server a request: its body, its timing, its
/// status and, when it failed, the error's words.
pub async fn middleware(
    State(app): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if !RECORDED.iter().any(|(p, _)| *p == request.uri().path()) {
        return next.run(request).await;
    }
    let path = request.uri().path().to_owned();
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_READ).await else {
        return (
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "the command is too large\n",
        )
            .into_response();
    };
    let sent: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let Some(method) = method_of(&path, &sent) else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let at = now();
    let started = Instant::now();
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let status = response.status();
    let (response, error, outcome) = if status.is_success() {
        let outcome = outcome(&response, None);
        (response, None, outcome)
    } else {
        let (parts, body) = response.into_parts();
        let body = to_bytes(body, MAX_ERROR).await.unwrap_or_default();
        let answer = serde_json::from_slice::<Value>(&body).ok();
        let words = answer
            .as_ref()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_owned());
        let response = Response::from_parts(parts, Body::from(body));
        let outcome = outcome(&response, answer.as_ref());
        (response, Some(words), outcome)
    };
    // A view's call names its view; the history names the view's server.
    let server = sent["server"].as_str().map(str::to_owned).or_else(|| {
        let view = sent["view"].as_str()?;
        app.views.get(view).map(|v| v.server)
    });
    let body = if bytes.len() > MAX_KEPT_BODY {
        json!({"capable": "too large to keep", "bytes": bytes.len()})
    } else {
        sent
    };
    app.history.record(json!({
        "at": at,
        "server": server,
        "method": method,
        "path": path,
        "body": body,
        "status": status.as_u16(),
        "outcome": outcome,
        "ok": outcome == "result",
        "error": error,
        "ms": (ms * 10.0).round() / 10.0,
        "replayable": bytes.len() <= MAX_KEPT_BODY && path != "/api/app/call" && path != "/api/app/read",
    }));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_commands_are_named_by_the_method_they_send() {
        assert_eq!(method_of("/api/call", &json!({})), Some("tools/call"));
        assert_eq!(
            method_of("/api/task", &json!({"action": "cancel"})),
            Some("tasks/cancel")
        );
        assert_eq!(
            method_of("/api/task", &json!({"action": "get"})),
            Some("tasks/get")
        );
        assert_eq!(method_of("/api/servers", &json!({})), None);
        assert_eq!(method_of("/api/elicit", &json!({})), None);
    }

    #[test]
    fn the_outcome_is_the_mcp_outcome_not_the_http_status() {
        let result = |is_error| CallToolResult {
            is_error,
            ..serde_json::from_value(json!({"content": []})).unwrap()
        };
        let failed = tool_reply(Reply(json!({})), &result(Some(true)));
        assert_eq!(failed.status(), axum::http::StatusCode::OK);
        assert_eq!(outcome(&failed, None), "tool_error");
        let fine = tool_reply(Reply(json!({})), &result(None));
        assert_eq!(outcome(&fine, None), "result");
        let refused = (axum::http::StatusCode::BAD_GATEWAY, "no").into_response();
        let body = json!({"error": {"kind": "rpc_error"}});
        assert_eq!(outcome(&refused, Some(&body)), "rpc_error");
        assert_eq!(outcome(&refused, None), "unexpected");
    }

    #[test]
    fn the_history_keeps_its_last_entries_by_server() {
        let history = History::new(Bus::new(8, 1 << 20, Default::default()));
        for n in 0..KEPT + 2 {
            let server = if n % 2 == 0 { "a" } else { "b" };
            history.record(json!({"server": server, "n": n}));
        }
        let all = history.entries(None);
        assert_eq!(all.len(), KEPT);
        assert_eq!(all[0]["n"], 2, "the oldest went first");
        assert!(history
            .entries(Some("a"))
            .iter()
            .all(|e| e["server"] == "a"));
        let ids: Vec<u64> = all.iter().filter_map(|e| e["id"].as_u64()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }
}
