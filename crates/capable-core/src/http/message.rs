//! What the HTTP policy reads of the messages it carries: an outgoing line's id,
//! method, version and routing fields, and whether an incoming message is the answer
//! to a request.

use serde_json::Value;

use crate::jsonrpc::codes;

/// One outgoing JSON-RPC message, as written by the connection.
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    /// The whole message.
    pub(crate) value: Value,
}

/// What an outgoing message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request: it expects an answer.
    Request,
    /// A notification.
    Notification,
    /// Our answer to a server request.
    Response,
}

impl Outgoing {
    /// Reads one line; `None` for anything that is not a JSON object (the connection
    /// writes none).
    pub(crate) fn parse(line: &[u8]) -> Option<Outgoing> {
        let value: Value = serde_json::from_slice(line).ok()?;
        value.is_object().then_some(Outgoing { value })
    }

    pub(crate) fn kind(&self) -> Option<Kind> {
        match (self.id().is_some(), self.method().is_some()) {
            (true, true) => Some(Kind::Request),
            (false, true) => Some(Kind::Notification),
            (true, false) => Some(Kind::Response),
            (false, false) => None,
        }
    }

    pub(crate) fn id(&self) -> Option<&Value> {
        self.value.get("id")
    }

    pub(crate) fn method(&self) -> Option<&str> {
        self.value.get("method").and_then(Value::as_str)
    }

    /// The protocol version of a modern request (`_meta`); `None` for legacy messages.
    pub(crate) fn modern_version(&self) -> Option<&str> {
        self.value
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .and_then(Value::as_str)
    }

    /// What `Mcp-Name` carries: `params.name` of `tools/call` and `prompts/get`,
    /// `params.uri` of `resources/read`, `params.taskId` of the tasks methods (so that
    /// a gateway routes them to the instance holding the task).
    pub(crate) fn name(&self) -> Option<&str> {
        let pointer = match self.method()? {
            "tools/call" | "prompts/get" => "/params/name",
            "resources/read" => "/params/uri",
            "tasks/get" | "tasks/update" | "tasks/cancel" => "/params/taskId",
            _ => return None,
        };
        self.value.pointer(pointer).and_then(Value::as_str)
    }

    /// `params.arguments` of a `tools/call`.
    pub(crate) fn arguments(&self) -> Option<&Value> {
        self.value.pointer("/params/arguments")
    }

    /// The request whose `notifications/cancelled` this is.
    pub(crate) fn cancelled_id(&self) -> Option<&Value> {
        (self.method() == Some("notifications/cancelled"))
            .then(|| self.value.pointer("/params/requestId"))
            .flatten()
    }

    /// The message as bytes, to POST.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.value).unwrap_or_default()
    }
}

/// Whether `message` is the response (result or error) to the request with `id`.
pub(crate) fn is_answer(message: &Value, id: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
        && message.get("id") == Some(id)
}

/// Whether a 400 body is a recognised 2026-07-28 error: the server is modern.
pub(crate) fn is_modern_error(body: &Value) -> bool {
    let code = body.pointer("/error/code").and_then(Value::as_i64);
    matches!(
        code,
        Some(
            codes::UNSUPPORTED_PROTOCOL_VERSION
                | codes::MISSING_CLIENT_CAPABILITY
                | codes::HEADER_MISMATCH
        )
    )
}

/// Whether a body is a JSON-RPC error response (the server's own answer, whatever the
/// HTTP status).
pub(crate) fn is_error_response(body: &Value) -> bool {
    body.get("error")
        .and_then(|e| e.get("code"))
        .is_some_and(Value::is_i64)
        && body.get("method").is_none()
}

/// The first 300 characters of a body, for messages.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let t = text.trim();
    if t.chars().count() > 300 {
        format!("{}…", t.chars().take(300).collect::<String>())
    } else {
        t.to_owned()
    }
}
