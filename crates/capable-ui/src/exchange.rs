//! A recorded command as the JSON-RPC exchange it made with the server: the request
//! capable sent (its method and params, built from the page's command as the handler
//! builds them) and the response it got — a `result`, an `error` with the server's
//! code and words — or why there is none (refused locally, so nothing was sent;
//! cancelled or timed out, so nothing was awaited). A session's report shows both, as
//! a bug report needs them.
//!
//! The request's `id` is capable's own, chosen by the session when it sent it; the
//! exchange leaves it out rather than make one up.

use serde_json::{json, Map, Value};

/// How a recorded command ended, in MCP terms (the history's `outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered with a result.
    Result,
    /// The tool ran and reported its own failure (`isError: true`).
    ToolError,
    /// The server answered with a JSON-RPC error.
    RpcError,
    /// Cancelled from the page (`notifications/cancelled` or `tasks/cancel` sent).
    Cancelled,
    /// No answer within the page's timeout: the request was cancelled.
    Timeout,
    /// Refused by capable before anything was sent (undeclared, arguments that do not
    /// match the schema, a tool a view may not call, a server not connected).
    Refused,
    /// Anything else that failed on the way (the connection, the server ended, a
    /// contract violation): the error's kind.
    Failed(&'static str),
}

impl Outcome {
    /// Its stable name in the history (`result`, `tool_error`, `rpc_error`,
    /// `cancelled`, `timeout`, `refused`, or the error's kind).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::ToolError => "tool_error",
            Outcome::RpcError => "rpc_error",
            Outcome::Cancelled => "cancelled",
            Outcome::Timeout => "timeout",
            Outcome::Refused => "refused",
            Outcome::Failed(kind) => kind,
        }
    }

    /// The outcome of an error answer of the API (`{"error": {"kind"}}`): refused
    /// when the API says nothing was sent (4xx), else by its kind.
    pub fn of_error(status: u16, kind: Option<&str>) -> Outcome {
        match kind {
            Some("rpc_error") => Outcome::RpcError,
            Some("timeout") => Outcome::Timeout,
            _ if (400..500).contains(&status) => Outcome::Refused,
            Some("transport") => Outcome::Failed("transport"),
            Some("server_exited") => Outcome::Failed("server_exited"),
            Some("contract_violation") => Outcome::Failed("contract_violation"),
            Some("protocol_version_refused") => Outcome::Failed("protocol_version_refused"),
            Some("authorization_required") => Outcome::Failed("authorization_required"),
            Some("authorization_failed") => Outcome::Failed("authorization_failed"),
            _ => Outcome::Failed("unexpected"),
        }
    }

    /// Whether a request went to the server (all but a local refusal).
    pub fn sent(self) -> bool {
        self != Outcome::Refused
    }
}

/// The keys of a command that are capable's own, not the request's params.
const OWN: &[&str] = &["server", "view", "call", "task", "action"];

/// The JSON-RPC request a command sent: `{"jsonrpc", "method", "params"?}`.
pub fn request(path: &str, method: &str, sent: &Value) -> Value {
    let mut params = Map::new();
    for (k, v) in sent.as_object().into_iter().flatten() {
        if OWN.contains(&k.as_str()) || v.is_null() {
            continue;
        }
        let key = match (path, k.as_str()) {
            ("/api/call", "tool") => "name",
            ("/api/task", "id") => "taskId",
            (_, k) => k,
        };
        params.insert(key.to_owned(), v.clone());
    }
    let mut out = json!({"jsonrpc": "2.0", "method": method});
    if !params.is_empty() {
        out["params"] = Value::Object(params);
    }
    out
}

/// The JSON-RPC response a command got, from the API's answer (`answer`, when it was
/// read): a result, an error, or `null` with `why` there is none.
pub fn response(path: &str, outcome: Outcome, answer: Option<&Value>) -> Value {
    let answer = answer.unwrap_or(&Value::Null);
    match outcome {
        Outcome::Result | Outcome::ToolError => {
            let result = match path {
                "/api/call" => answer["result"].clone(),
                // logging/setLevel's result is empty; the API says what it set.
                "/api/log-level" => json!({}),
                _ => answer.clone(),
            };
            json!({"jsonrpc": "2.0", "result": result})
        }
        Outcome::RpcError => match answer.get("rpc") {
            Some(error) => json!({"jsonrpc": "2.0", "error": error}),
            None => json!({"none": answer.pointer("/error/message")}),
        },
        Outcome::Cancelled => {
            json!({"none": "cancelled from the page; no response was awaited"})
        }
        Outcome::Timeout => {
            json!({"none": "no answer within the page's timeout; the request was cancelled"})
        }
        Outcome::Refused => json!({"none": "refused by capable; nothing was sent"}),
        Outcome::Failed(_) => json!({"none": answer.pointer("/error/message")}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_the_request_it_sent() {
        let call = json!({"server": "s", "tool": "echo", "arguments": {"m": 1}, "call": "7"});
        assert_eq!(
            request("/api/call", "tools/call", &call),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo", "arguments": {"m": 1}}})
        );
        let task = json!({"server": "s", "id": "t1", "action": "cancel"});
        assert_eq!(
            request("/api/task", "tasks/cancel", &task)["params"],
            json!({"taskId": "t1"})
        );
        assert_eq!(
            request("/api/ping", "ping", &json!({"server": "s"})),
            json!({"jsonrpc": "2.0", "method": "ping"})
        );
    }

    #[test]
    fn the_response_is_the_result_or_the_error_or_why_there_is_none() {
        let answered = json!({"call": "1", "result": {"content": []}, "outputCheck": {}});
        assert_eq!(
            response("/api/call", Outcome::Result, Some(&answered)),
            json!({"jsonrpc": "2.0", "result": {"content": []}})
        );
        let rpc = json!({"error": {"kind": "rpc_error", "message": "m"}, "rpc": {"code": -32602, "message": "bad"}});
        assert_eq!(
            response("/api/prompt", Outcome::RpcError, Some(&rpc)),
            json!({"jsonrpc": "2.0", "error": {"code": -32602, "message": "bad"}})
        );
        assert!(response("/api/call", Outcome::Cancelled, None)["none"]
            .as_str()
            .unwrap()
            .contains("cancelled"));
    }

    #[test]
    fn what_was_refused_locally_was_not_sent() {
        assert_eq!(
            Outcome::of_error(409, Some("capability_not_offered")),
            Outcome::Refused
        );
        assert_eq!(Outcome::of_error(422, Some("usage")), Outcome::Refused);
        assert_eq!(Outcome::of_error(502, Some("rpc_error")), Outcome::RpcError);
        assert_eq!(Outcome::of_error(504, Some("timeout")), Outcome::Timeout);
        assert_eq!(
            Outcome::of_error(502, Some("transport")).as_str(),
            "transport"
        );
        assert!(!Outcome::Refused.sent() && Outcome::Timeout.sent());
    }
}
