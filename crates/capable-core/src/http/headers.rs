//! The header set of each request, decided per message:
//!
//! | request | headers |
//! |---|---|
//! | every POST | `Accept: application/json, text/event-stream`, `Content-Type: application/json` |
//! | modern request | `MCP-Protocol-Version` (its `_meta` version), `Mcp-Method`, `Mcp-Name` (`tools/call`, `prompts/get`: `params.name`; `resources/read`: `params.uri`; `tasks/get`, `tasks/update`, `tasks/cancel`: `params.taskId`), `Mcp-Param-*` (`tools/call`, from the tool's `x-mcp-header` annotations, learnt from `tools/list` or told by the host: [`HttpSession::know_tools`](super::HttpSession::know_tools)) |
//! | legacy message | `Mcp-Session-Id` once the server gave one; `MCP-Protocol-Version` once negotiated (2025-06-18+) |
//! | GET stream | `Accept: text/event-stream`, the legacy headers, `Last-Event-ID` when resuming |
//! | HTTP+SSE (2024-11-05) | none of MCP's: that transport has no session or version headers |
//! | any request whose `params._meta` carries a W3C `traceparent` (a bridge's traced call, a host's own) | `traceparent`, and `tracestate` when it has one: the same context as a header, as W3C Trace Context carries it over HTTP, for the server's own tracing and whatever proxies stand before it |

use std::borrow::Cow;
use std::time::Duration;

use super::message::Message;
use super::param_headers::header_safe;
use super::{HeaderText, HttpMethod, HttpSession, Mode, Request};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const EVENT_STREAM: &str = "text/event-stream";

type Headers = Vec<(HeaderText, HeaderText)>;

/// Whether a server's `Mcp-Session-Id` can be sent back: visible ASCII only, as the
/// transport requires. Any other is not taken (nothing a server sends ends up as a
/// line break in a header).
pub(super) fn is_session_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// Whether a value can travel in a header: no control byte (a tab aside), so no line
/// break. Bytes past ASCII go as they are.
fn sendable(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

fn header(name: &'static str, value: impl Into<HeaderText>) -> (HeaderText, HeaderText) {
    (Cow::Borrowed(name), value.into())
}

impl HttpSession {
    /// What every legacy request to the endpoint carries: the session, the negotiated
    /// version.
    pub(super) fn base_headers(&self) -> Headers {
        let mut h = Vec::with_capacity(4);
        if self.mode == Mode::Streamable {
            if let Some(session) = &self.session_id {
                h.push(header("mcp-session-id", session.clone()));
            }
        }
        if let Some(v) = self.version_header {
            h.push(header("mcp-protocol-version", v.as_str()));
        }
        h
    }

    /// The headers of one message's POST: MCP's, and the trace context its `_meta`
    /// carries.
    pub(super) fn message_headers(&self, msg: &Message) -> Headers {
        let mut h = self.mcp_headers(msg);
        if let Some((parent, state)) = msg.trace_context() {
            h.push(header("traceparent", parent));
            if let Some(state) = state {
                h.push(header("tracestate", state));
            }
        }
        h
    }

    /// MCP's headers of one message's POST.
    fn mcp_headers(&self, msg: &Message) -> Headers {
        if let Mode::LegacySse { .. } = self.mode {
            return Vec::new();
        }
        let Some((request, version)) = msg.request().and_then(|r| Some((r, r.version?))) else {
            return self.base_headers();
        };
        let mut h = vec![
            header("mcp-protocol-version", version.as_str()),
            header("mcp-method", request.method.as_str()),
        ];
        if let Some(name) = &request.target {
            h.push(header("mcp-name", header_safe(name)));
        }
        if request.method == crate::Method::CallTool {
            let tool = request.target.as_deref().unwrap_or("");
            h.extend(
                self.tool_headers
                    .for_call(tool, request.arguments.as_deref())
                    .into_iter()
                    .map(|(n, v)| (Cow::Owned(n), Cow::Owned(v))),
            );
        }
        h
    }

    /// A POST of `msg` to where messages go (the HTTP+SSE endpoint, or the URL).
    pub(super) fn post(&self, msg: &Message, mut headers: Headers) -> Request {
        headers.push(header("accept", ACCEPT_BOTH));
        headers.push(header("content-type", "application/json"));
        let url = match &self.mode {
            Mode::LegacySse { endpoint } => endpoint.clone(),
            _ => self.url.clone(),
        };
        Request {
            method: HttpMethod::Post,
            url,
            headers,
            body: Some(msg.to_bytes()),
            user_headers: true,
            delay: Duration::ZERO,
        }
    }

    /// A GET of the URL as an event stream (standalone, or resuming after
    /// `last_event_id`), after `delay`. An event id that cannot travel in a header
    /// (it holds a control byte) resumes without one.
    pub(super) fn get_stream(&self, last_event_id: Option<&str>, delay: Duration) -> Request {
        let mut headers = self.base_headers();
        headers.push(header("accept", EVENT_STREAM));
        if let Some(id) = last_event_id.filter(|id| sendable(id)) {
            headers.push(header("last-event-id", id.to_owned()));
        }
        Request {
            method: HttpMethod::Get,
            url: self.url.clone(),
            headers,
            body: None,
            user_headers: true,
            delay,
        }
    }

    /// The GET that opens a 2024-11-05 HTTP+SSE stream.
    pub(super) fn get_legacy_stream(&self) -> Request {
        Request {
            method: HttpMethod::Get,
            url: self.url.clone(),
            headers: vec![header("accept", EVENT_STREAM)],
            body: None,
            user_headers: true,
            delay: Duration::ZERO,
        }
    }
}
