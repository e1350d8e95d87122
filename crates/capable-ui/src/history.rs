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

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use capable::internal::model::CallToolResult;

use crate::bus::{now, Bus};
use crate::exchange::{self, Outcome};
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
/// The largest answer kept whole as the entry's response (a larger one is kept as
/// its size).
const MAX_KEPT_RESPONSE: usize = 256 << 10;

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

/// The mark a handler puts on its answer when the call was cancelled from the page:
/// HTTP 200 for the page, `cancelled` for the history.
#[derive(Clone, Copy, Debug)]
pub struct CallCancelled;

/// A tool's result as the answer of a command: `reply`, marked [`ToolFailed`] when
/// `result` is the tool's failure.
pub fn tool_reply(reply: Reply, result: &CallToolResult) -> Response {
    let mut response = reply.into_response();
    if result.is_error == Some(true) {
        response.extensions_mut().insert(ToolFailed);
    }
    response
}

/// The header of a recorded command's answer that names its history entry (its
/// `id`), so that the page shows a replay's result with its entry.
pub const ENTRY_HEADER: &str = "x-capable-entry";

/// How a recorded command ended, in MCP terms (see [`Outcome`]): from the marks on a
/// success, from the error's kind and status on a failure.
fn outcome(response: &Response, error_body: Option<&Value>) -> Outcome {
    let status = response.status();
    if status.is_success() {
        let marks = response.extensions();
        return if marks.get::<CallCancelled>().is_some() {
            Outcome::Cancelled
        } else if marks.get::<ToolFailed>().is_some() {
            Outcome::ToolError
        } else {
            Outcome::Result
        };
    }
    let kind = error_body
        .and_then(|v| v.pointer("/error/kind"))
        .and_then(Value::as_str);
    Outcome::of_error(status.as_u16(), kind)
}

/// The recorded commands.
#[derive(Clone)]
pub struct History {
    bus: Bus,
    next: Arc<AtomicU64>,
    kept: Arc<Mutex<VecDeque<Value>>>,
    /// Each server's count of entries, for the numbers the page shows (`n`: 1, 2, 3
    /// for each server, with no gap where another server's entry came between).
    counts: Arc<Mutex<HashMap<String, u64>>>,
}

impl History {
    /// None yet.
    pub fn new(bus: Bus) -> History {
        History {
            bus,
            next: Arc::new(AtomicU64::new(1)),
            kept: Arc::default(),
            counts: Arc::default(),
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

    /// Keeps `entry` and puts it on the stream: its `id` (unique in the run) and its
    /// `n` (its number among its server's entries). Returns its id.
    fn record(&self, mut entry: Value) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        entry["id"] = json!(id);
        {
            let server = entry["server"].as_str().unwrap_or_default().to_owned();
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            // Bounded: one count per server the page named (an unknown one is refused
            // and counted under its name; past KEPT names, one count for all others).
            let key = if counts.len() < KEPT || counts.contains_key(&server) {
                server
            } else {
                String::new()
            };
            let n = counts.entry(key).or_insert(0);
            *n += 1;
            entry["n"] = json!(*n);
        }
        {
            let mut kept = self.lock();
            if kept.len() == KEPT {
                kept.pop_front();
            }
            kept.push_back(entry.clone());
        }
        self.bus.publish("history", entry);
        id
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
    // The answer is read to keep it (it is bytes in memory already); one larger than
    // kept is passed on unread, its outcome from its status and marks alone.
    let small = axum::body::HttpBody::size_hint(response.body())
        .upper()
        .is_some_and(|n| n <= MAX_KEPT_RESPONSE as u64);
    let (response, answer, raw) = if small || !status.is_success() {
        let (parts, body) = response.into_parts();
        let body = to_bytes(body, MAX_ERROR.max(MAX_KEPT_RESPONSE))
            .await
            .unwrap_or_default();
        let answer = serde_json::from_slice::<Value>(&body).ok();
        let raw = String::from_utf8_lossy(&body).trim().to_owned();
        (
            Response::from_parts(parts, Body::from(body)),
            answer,
            Some(raw),
        )
    } else {
        (response, None, None)
    };
    let outcome = outcome(&response, answer.as_ref());
    let error = (!status.is_success()).then(|| {
        answer
            .as_ref()
            .and_then(|v| v.pointer("/error/message").and_then(Value::as_str))
            .map(str::to_owned)
            .unwrap_or_else(|| raw.clone().unwrap_or_default())
    });
    // A view's call names its view; the history names the view's server.
    let server = sent["server"].as_str().map(str::to_owned).or_else(|| {
        let view = sent["view"].as_str()?;
        app.views.get(view).map(|v| v.server)
    });
    let kept = bytes.len() <= MAX_KEPT_BODY;
    let request = if !outcome.sent() {
        Value::Null
    } else if kept {
        exchange::request(&path, method, &sent)
    } else {
        json!({"jsonrpc": "2.0", "method": method, "capable": "too large to keep"})
    };
    let received = if answer.is_some() || !outcome.sent() || !status.is_success() {
        exchange::response(&path, outcome, answer.as_ref())
    } else {
        json!({"none": "too large to keep", "bytes": axum::body::HttpBody::size_hint(response.body()).lower()})
    };
    let body = if kept {
        sent
    } else {
        json!({"capable": "too large to keep", "bytes": bytes.len()})
    };
    let id = app.history.record(json!({
        "at": at,
        "server": server,
        "method": method,
        "path": path,
        "body": body,
        "status": status.as_u16(),
        "outcome": outcome.as_str(),
        "ok": outcome == Outcome::Result,
        "error": error,
        "ms": (ms * 10.0).round() / 10.0,
        "request": request,
        "response": received,
        // What capable refused was never sent: sending it again would be refused again.
        "replayable": kept && outcome.sent() && path != "/api/app/call" && path != "/api/app/read",
    }));
    let mut response = response;
    response
        .headers_mut()
        .insert(ENTRY_HEADER, axum::http::HeaderValue::from(id));
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
        assert_eq!(outcome(&failed, None), Outcome::ToolError);
        let fine = tool_reply(Reply(json!({})), &result(None));
        assert_eq!(outcome(&fine, None), Outcome::Result);
        let mut cancelled = Reply(json!({"cancelled": true})).into_response();
        cancelled.extensions_mut().insert(CallCancelled);
        assert_eq!(
            (cancelled.status(), outcome(&cancelled, None)),
            (axum::http::StatusCode::OK, Outcome::Cancelled),
            "a cancelled call is no result though the page got 200"
        );
        let failed = (axum::http::StatusCode::BAD_GATEWAY, "no").into_response();
        let body = json!({"error": {"kind": "rpc_error"}});
        assert_eq!(outcome(&failed, Some(&body)), Outcome::RpcError);
        assert_eq!(outcome(&failed, None).as_str(), "unexpected");
        let refused = (axum::http::StatusCode::CONFLICT, "no").into_response();
        let body = json!({"error": {"kind": "capability_not_offered"}});
        assert_eq!(outcome(&refused, Some(&body)), Outcome::Refused);
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
        let numbers: Vec<u64> = history
            .entries(Some("b"))
            .iter()
            .filter_map(|e| e["n"].as_u64())
            .collect();
        assert!(
            numbers.windows(2).all(|w| w[1] == w[0] + 1),
            "a server's entries are numbered without a gap: {numbers:?}"
        );
    }
}
