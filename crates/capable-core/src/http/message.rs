//! What the HTTP policy reads of the messages it carries: an outgoing line's id,
//! method, version and routing fields, and whether an incoming message is the answer
//! to a request.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::message_layout::Members;
use crate::jsonrpc::codes;

/// One outgoing JSON-RPC message, as written by the connection: its bytes, sent as
/// they are, and the few members the policy reads, taken out once.
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    /// The whole message.
    line: Vec<u8>,
    id: Option<Value>,
    method: Option<String>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    version: Option<String>,
    /// What `Mcp-Name` carries for this method (see [`Outgoing::name`]).
    name: Option<String>,
    /// `params.arguments` of a `tools/call`.
    arguments: Option<Box<Value>>,
    /// `params.requestId` of a `notifications/cancelled`.
    cancelled: Option<Box<Value>>,
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

/// A member that may be present with any value, `null` included (serde reads a plain
/// `Option` of `null` as absent).
#[derive(Debug, Default)]
struct Present(Option<Value>);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|v| Present(Some(v)))
    }
}

/// The members the policy reads, every other one skipped without being built; strings
/// without escapes borrowed from the line.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Present,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<Meta<'a>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    uri: Option<Cow<'a, str>>,
    #[serde(default, rename = "taskId", borrow)]
    task_id: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Present,
    #[serde(default, rename = "requestId")]
    request_id: Present,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    version: Option<Cow<'a, str>>,
}

impl Outgoing {
    /// Reads one line; `None` for anything that is not a JSON object (the connection
    /// writes none).
    ///
    /// The members are read straight into their fields; a line that reader refuses
    /// although it is an object (a duplicate member, `_meta` that is no object, which
    /// the connection never writes) is parsed whole and read from its value, so that
    /// either way the last of duplicate members counts, as in a parsed value.
    pub(crate) fn parse(line: &[u8]) -> Option<Outgoing> {
        if let Some(out) = super::message_layout::read(line).and_then(|m| Outgoing::of(line, m)) {
            return Some(out);
        }
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            return None;
        }
        match serde_json::from_slice::<Envelope>(line) {
            Ok(e) => Some(Outgoing::from_envelope(line.to_vec(), e)),
            Err(_) => {
                let value: Value = serde_json::from_slice(line).ok()?;
                Outgoing::of_value(line.to_vec(), &value)
            }
        }
    }

    /// The message whose members (in the connection's layout) are `m`; `None` if a
    /// member's JSON does not read as a value after all.
    fn of(line: &[u8], m: Members<'_>) -> Option<Outgoing> {
        let value = |raw: &[u8]| serde_json::from_slice::<Value>(raw).ok();
        let id = match m.id {
            // The connection's own ids: digits, read without serde.
            Some(raw) if raw.iter().all(u8::is_ascii_digit) => Some(Value::from(
                std::str::from_utf8(raw).ok()?.parse::<u64>().ok()?,
            )),
            Some(raw) => Some(value(raw)?),
            None => None,
        };
        let mut out = Outgoing::empty(line.to_vec(), id, m.method.map(str::to_owned));
        out.version = m.version.map(str::to_owned);
        // The values only a few methods keep are read only for those.
        let arguments = match (out.method(), m.arguments) {
            (Some("tools/call"), Some(raw)) => Some(value(raw)?),
            _ => None,
        };
        let request_id = match (out.method(), m.request_id) {
            (Some("notifications/cancelled"), Some(raw)) => Some(value(raw)?),
            _ => None,
        };
        out.pick(m.name, m.uri, m.task_id, arguments, request_id);
        Some(out)
    }

    /// The message `value` (an object), written compactly.
    pub(crate) fn from_value(value: &Value) -> Option<Outgoing> {
        Outgoing::of_value(serde_json::to_vec(value).ok()?, value)
    }

    fn from_envelope(line: Vec<u8>, e: Envelope<'_>) -> Outgoing {
        let method = e.method.map(Cow::into_owned);
        let mut out = Outgoing::empty(line, e.id.0, method);
        if let Some(p) = e.params {
            out.version = p.meta.and_then(|m| m.version).map(Cow::into_owned);
            out.pick(
                p.name.as_deref(),
                p.uri.as_deref(),
                p.task_id.as_deref(),
                p.arguments.0,
                p.request_id.0,
            );
        }
        out
    }

    fn of_value(line: Vec<u8>, value: &Value) -> Option<Outgoing> {
        let object = value.as_object()?;
        let method = object
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut out = Outgoing::empty(line, object.get("id").cloned(), method);
        out.version = value
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let params = object.get("params");
        let member = |name: &str| params.and_then(|p| p.get(name));
        let text = |name: &str| member(name).and_then(Value::as_str);
        out.pick(
            text("name"),
            text("uri"),
            text("taskId"),
            member("arguments").cloned(),
            member("requestId").cloned(),
        );
        Some(out)
    }

    fn empty(line: Vec<u8>, id: Option<Value>, method: Option<String>) -> Outgoing {
        Outgoing {
            line,
            id,
            method,
            version: None,
            name: None,
            arguments: None,
            cancelled: None,
        }
    }

    /// Keeps of the params' members what this message's method makes use of.
    fn pick(
        &mut self,
        name: Option<&str>,
        uri: Option<&str>,
        task_id: Option<&str>,
        arguments: Option<Value>,
        request_id: Option<Value>,
    ) {
        let named = match self.method() {
            Some("tools/call" | "prompts/get") => name,
            Some("resources/read") => uri,
            Some("tasks/get" | "tasks/update" | "tasks/cancel") => task_id,
            _ => None,
        };
        self.name = named.map(str::to_owned);
        if self.method() == Some("tools/call") {
            self.arguments = arguments.map(Box::new);
        }
        if self.method() == Some("notifications/cancelled") {
            self.cancelled = request_id.map(Box::new);
        }
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
        self.id.as_ref()
    }

    pub(crate) fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The protocol version of a modern request (`_meta`); `None` for legacy messages.
    pub(crate) fn modern_version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// What `Mcp-Name` carries: `params.name` of `tools/call` and `prompts/get`,
    /// `params.uri` of `resources/read`, `params.taskId` of the tasks methods (so that
    /// a gateway routes them to the instance holding the task).
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The tool of a `tools/call` (its `params.name`).
    pub(crate) fn tool(&self) -> Option<&str> {
        match self.method() {
            Some("tools/call") => self.name(),
            _ => None,
        }
    }

    /// `params.arguments` of a `tools/call`.
    pub(crate) fn arguments(&self) -> Option<&Value> {
        self.arguments.as_deref()
    }

    /// The request whose `notifications/cancelled` this is.
    pub(crate) fn cancelled_id(&self) -> Option<&Value> {
        self.cancelled.as_deref()
    }

    /// `params._meta`, when there is one.
    pub(crate) fn meta(&self) -> Option<Value> {
        let value: Value = serde_json::from_slice(&self.line).ok()?;
        value.pointer("/params/_meta").cloned()
    }

    /// The same message under another id (a re-issued request).
    pub(crate) fn set_id(&mut self, id: Value) {
        if let Ok(mut value @ Value::Object(_)) = serde_json::from_slice::<Value>(&self.line) {
            value["id"] = id.clone();
            self.line = serde_json::to_vec(&value).unwrap_or_default();
            self.id = Some(id);
        }
    }

    /// The message as bytes, to POST.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        self.line.clone()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the policy reads of a message, for comparing two readings.
    fn fields(m: &Outgoing) -> String {
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            m.kind(),
            m.id(),
            m.method(),
            m.modern_version(),
            m.name(),
            m.tool(),
            m.arguments(),
            m.cancelled_id()
        )
    }

    /// The reading of a fully parsed value, as before the direct reader.
    fn by_value(line: &[u8]) -> Option<String> {
        let value: Value = serde_json::from_slice(line).ok()?;
        Outgoing::of_value(line.to_vec(), &value).map(|m| fields(&m))
    }

    #[test]
    fn an_outgoing_line_reads_as_its_parsed_value_reads() {
        let seeds: [&[u8]; 9] = [
            br#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"a://b"}}"#,
            br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"x":[1,{"y":"z"}]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":8}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"gone"}}"#,
            br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"taskId":"t\u00e9"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"prompts/get","params":{"name":"a","name":"b"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":null}}"#,
            br#" {"id":1,"method":42,"params":[1,2]} "#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ];
        let mut m = crate::mutate::Mutator::new(0x2545_f491_4f6c_dd1d);
        const BYTES: &[u8] = b"{}[]\",:\\ 0123456789abnlu";
        let (mut read, mut by_layout) = (0, 0);
        for round in 0..20_000 {
            // The seeds as they are first, then mutated.
            let line = match seeds.get(round) {
                Some(seed) => seed.to_vec(),
                None => m.mutated(&seeds, BYTES, 2),
            };
            let direct = Outgoing::parse(&line).map(|m| fields(&m));
            assert_eq!(
                direct,
                by_value(&line),
                "{}",
                String::from_utf8_lossy(&line)
            );
            if direct.is_some() {
                read += 1;
            }
            if super::super::message_layout::read(&line).is_some() {
                by_layout += 1;
            }
        }
        assert!(read > 5000, "too few mutations read to mean much: {read}");
        assert!(
            by_layout > 2000,
            "too few read by the layout reader: {by_layout}"
        );
    }

    #[test]
    fn a_line_is_sent_as_written_and_a_reissue_changes_only_its_id() {
        let line =
            br#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"a://b"}}"#;
        let mut m = Outgoing::parse(line).expect("a message");
        assert_eq!(m.to_bytes(), line.to_vec());
        m.set_id(Value::from("7~reissue1"));
        let sent: Value = serde_json::from_slice(&m.to_bytes()).expect("JSON");
        assert_eq!(sent["id"], "7~reissue1");
        assert_eq!(sent["params"]["uri"], "a://b");
        assert_eq!(m.id(), Some(&Value::from("7~reissue1")));
    }
}
