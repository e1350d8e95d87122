//! The messages the HTTP policy carries: each outgoing one as the connection wrote it
//! (its line, sent as it is, and its [`Outgoing`] record, read for headers and
//! routing), and what the policy reads of incoming ones (whether a message answers a
//! request, whether a refusal's body is a modern error).

use serde_json::Value;

use crate::jsonrpc::{codes, RequestId};
use crate::method::{ClientNotificationMethod, Method};
use crate::outbox::{Outgoing, OutgoingRequest};
use crate::version::ProtocolVersion;

/// One outgoing message: its bytes and what the writer noted of it.
#[derive(Clone, Debug)]
pub(crate) struct Message {
    /// The whole message, without its newline.
    line: Vec<u8>,
    what: Outgoing,
}

impl Message {
    /// The message `what`, written as `line`.
    pub(crate) fn new(what: Outgoing, line: &[u8]) -> Message {
        Message {
            line: line.to_vec(),
            what,
        }
    }

    /// `notifications/initialized`.
    pub(crate) fn initialized() -> Message {
        let mut out = crate::outbox::Outbox::new();
        out.write_initialized();
        Message::first_of(&out)
    }

    /// The first message written to `out`.
    fn first_of(out: &crate::outbox::Outbox) -> Message {
        match out.messages().next() {
            Some((what, line)) => Message::new(what, line),
            None => Message {
                line: Vec::new(),
                what: Outgoing::Initialized,
            },
        }
    }

    /// The policy's own `tools/list` (page `cursor`) under `id`, with the `_meta` of
    /// the modern request `like` (the version, the client's identity).
    pub(crate) fn tools_list(id: RequestId, cursor: Option<&str>, like: &Message) -> Message {
        let meta = like
            .request()
            .and_then(|r| like.line.get(r.meta.clone()?))
            .and_then(|raw| serde_json::from_slice::<Value>(raw).ok())
            .unwrap_or_else(|| serde_json::json!({}));
        let mut params = serde_json::Map::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), c.into());
        }
        let members = serde_json::to_vec(&meta).unwrap_or_default();
        let members = members
            .get(1..members.len().saturating_sub(1))
            .unwrap_or_default();
        let mut out = crate::outbox::Outbox::new();
        out.write_request_with_meta(
            &id,
            Method::ListTools,
            &params,
            members,
            like.modern_version(),
        );
        Message::first_of(&out)
    }

    /// The request, when it is one.
    pub(crate) fn request(&self) -> Option<&OutgoingRequest> {
        match &self.what {
            Outgoing::Request(r) => Some(r),
            _ => None,
        }
    }

    /// Whether it is `notifications/initialized`.
    pub(crate) fn is_initialized(&self) -> bool {
        matches!(self.what, Outgoing::Initialized)
    }

    /// What it is, for a notice: its method, or "a response".
    pub(crate) fn describe(&self) -> String {
        match &self.what {
            Outgoing::Request(r) => r.method.as_str().to_owned(),
            Outgoing::Initialized => ClientNotificationMethod::Initialized.as_str().to_owned(),
            Outgoing::Cancelled { .. } => ClientNotificationMethod::Cancelled.as_str().to_owned(),
            Outgoing::Notification { method } => method.clone(),
            _ => "a response".to_owned(),
        }
    }

    /// The protocol version of a modern request (`_meta`); `None` for legacy messages.
    pub(crate) fn modern_version(&self) -> Option<ProtocolVersion> {
        self.request().and_then(|r| r.version)
    }

    /// The same request under another id (a re-issue). The id is the line's first
    /// member after `jsonrpc`, as the connection writes it: only its text changes.
    pub(crate) fn set_id(&mut self, id: RequestId) {
        let Outgoing::Request(request) = &mut self.what else {
            return;
        };
        let prefix = br#"{"jsonrpc":"2.0","id":"#;
        let old = serde_json::to_vec(&request.id).unwrap_or_default();
        let new = serde_json::to_vec(&id).unwrap_or_default();
        let at = prefix.len();
        if !self.line.starts_with(prefix) || self.line.get(at..at + old.len()) != Some(&old[..]) {
            return;
        }
        self.line.splice(at..at + old.len(), new.iter().copied());
        if let Some(meta) = &mut request.meta {
            // Its `_meta` moved with the rest of the line.
            let (start, end) = (meta.start + new.len(), meta.end + new.len());
            *meta = start - old.len()..end - old.len();
        }
        request.id = id;
    }

    /// The W3C trace context a request carries in `params._meta` (`traceparent`, and
    /// `tracestate` when not empty), when it can travel in a header: what its POST
    /// says in the `traceparent` and `tracestate` headers too. Read only from a
    /// request that mentions `traceparent`; its other members are skipped, not decoded.
    pub(crate) fn trace_context(&self) -> Option<(String, Option<String>)> {
        use std::borrow::Cow;
        #[derive(serde::Deserialize)]
        struct Line<'a> {
            #[serde(borrow)]
            params: Option<Params<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(rename = "_meta", borrow)]
            meta: Option<Meta<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Meta<'a> {
            #[serde(borrow)]
            traceparent: Option<Cow<'a, str>>,
            #[serde(borrow)]
            tracestate: Option<Cow<'a, str>>,
        }
        // Visible ASCII (a space too in `tracestate`), as W3C Trace Context allows,
        // and bounded: nothing else goes into a header.
        let fits = |v: &str, max: usize, space: bool| {
            v.len() <= max
                && v.bytes()
                    .all(|b| (0x21..=0x7e).contains(&b) || (space && b == b' '))
        };
        self.request()?;
        memchr::memmem::find(&self.line, b"\"traceparent\"")?;
        let line: Line<'_> = serde_json::from_slice(&self.line).ok()?;
        let meta = line.params?.meta?;
        let parent = meta
            .traceparent
            .filter(|p| !p.is_empty() && fits(p, 256, false))?;
        let state = meta
            .tracestate
            .filter(|s| !s.trim().is_empty() && fits(s, 512, true));
        Some((parent.into_owned(), state.map(Cow::into_owned)))
    }

    /// The message as bytes, to POST.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        self.line.clone()
    }
}

/// A request id as JSON.
pub(crate) fn id_value(id: &RequestId) -> Value {
    match id {
        RequestId::Number(n) => Value::from(*n),
        RequestId::String(s) => Value::from(s.as_str()),
    }
}

/// Whether `message` is the response (result or error) to the request with `id`.
pub(crate) fn is_answer(message: &Value, id: &RequestId) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
        && message.get("id") == Some(&id_value(id))
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
    use crate::outbox::Outbox;

    fn modern_call() -> Message {
        let mut out = Outbox::new();
        let members =
            br#""io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7"#;
        out.write_request_with_meta(
            &RequestId::Number(7),
            Method::CallTool,
            &serde_json::json!({"name": "echo", "arguments": {"x": 1}}),
            members,
            Some(ProtocolVersion::V2026_07_28),
        );
        Message::first_of(&out)
    }

    #[test]
    fn a_requests_trace_context_is_read_from_its_meta_and_only_there() {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let request = |params: serde_json::Value| {
            let mut out = Outbox::new();
            out.write_request(&RequestId::Number(1), Method::CallTool, &params);
            Message::first_of(&out)
        };
        let traced = request(serde_json::json!({"name": "echo",
            "_meta": {"traceparent": parent, "tracestate": "k=v"}}));
        assert_eq!(
            traced.trace_context(),
            Some((parent.to_owned(), Some("k=v".to_owned())))
        );
        // In the arguments, it is the tool's business, not a trace context.
        let argument = request(serde_json::json!({"name": "echo",
            "arguments": {"traceparent": parent}}));
        assert_eq!(argument.trace_context(), None);
        // What cannot travel in a header is not sent.
        let broken = request(serde_json::json!({"name": "echo",
            "_meta": {"traceparent": "00-a\r\nx: y", "tracestate": "k=v"}}));
        assert_eq!(broken.trace_context(), None);
        let no_state = request(serde_json::json!({"_meta": {"traceparent": parent,
            "tracestate": "bad\u{7f}"}}));
        assert_eq!(no_state.trace_context(), Some((parent.to_owned(), None)));
        assert_eq!(modern_call().trace_context(), None);
    }

    #[test]
    fn a_line_is_sent_as_written_and_a_reissue_changes_only_its_id() {
        let mut out = Outbox::new();
        out.write_request(
            &RequestId::Number(7),
            Method::ReadResource,
            &serde_json::json!({"uri": "a://b"}),
        );
        let mut m = Message::first_of(&out);
        assert_eq!(m.to_bytes(), out.bytes().strip_suffix(b"\n").unwrap());
        m.set_id(RequestId::String("7~reissue1".into()));
        let sent: Value = serde_json::from_slice(&m.to_bytes()).expect("JSON");
        assert_eq!(sent["id"], "7~reissue1");
        assert_eq!(sent["params"]["uri"], "a://b");
        assert_eq!(
            m.request().map(|r| &r.id),
            Some(&RequestId::String("7~reissue1".into()))
        );
    }

    #[test]
    fn a_reissued_modern_request_keeps_its_meta_where_it_now_is() {
        let mut m = modern_call();
        m.set_id(RequestId::String("7~reissue12".into()));
        let r = m.request().unwrap();
        let meta: Value = serde_json::from_slice(&m.line[r.meta.clone().unwrap()]).unwrap();
        assert_eq!(meta["progressToken"], 7);
        let list = Message::tools_list(RequestId::String("t".into()), Some("c2"), &m);
        let sent: Value = serde_json::from_slice(&list.to_bytes()).unwrap();
        assert_eq!(sent["method"], "tools/list");
        assert_eq!(sent["params"]["cursor"], "c2");
        assert_eq!(sent["params"]["_meta"], meta);
        assert_eq!(list.modern_version(), Some(ProtocolVersion::V2026_07_28));
    }
}
