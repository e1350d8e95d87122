//! MCP over HTTP, sans-IO: every decision of the Streamable HTTP and HTTP+SSE
//! transports, for the shell to carry out.
//!
//! An [`HttpSession`] is fed what happens on the wire and answers with [`Action`]s. The
//! shell hands it each outgoing message ([`HttpSession::send`]) and, for each HTTP
//! exchange it performs, the response's head ([`HttpSession::on_head`]), its body or
//! stream events ([`HttpSession::on_body`], [`HttpSession::on_event`]) and its end
//! ([`HttpSession::on_end`], [`HttpSession::on_failure`]). It performs the requests
//! it is told to ([`Action::Send`]) — with its user's own headers where the request
//! says so — and delivers what it is told to ([`Action::Deliver`]). It decides nothing.
//!
//! What the policy decides, by era:
//!
//! - **Modern (2026-07-28)**: every request is its own POST carrying
//!   `MCP-Protocol-Version` (the version in its `_meta`), `Mcp-Method`, `Mcp-Name` for
//!   `tools/call`, `resources/read` and `prompts/get`, and `Mcp-Param-*` for the tool
//!   arguments its schema marks with `x-mcp-header` ([`param_headers`]; tools with
//!   invalid annotations are dropped from `tools/list` with a notice). There are no
//!   sessions, no GET stream and no notifications: cancelling is closing the response
//!   stream ([`Action::Abort`]). A stream that breaks before its answer is re-issued
//!   with a new id (bounded). A `-32020` header mismatch to `tools/call` re-fetches
//!   `tools/list` and retries once.
//! - **Legacy (2025-03-26 … 2025-11-25)**: `Mcp-Session-Id` from the `initialize`
//!   answer is echoed, `MCP-Protocol-Version` carries the *negotiated* version (from
//!   2025-06-18, told by [`HttpSession::negotiated`]). After `notifications/initialized`
//!   a standalone GET stream is opened (405: none). A response stream that breaks before
//!   its answer is resumed by GET with `Last-Event-ID` after the server's `retry`
//!   (bounded). A 404 to a request that carried a session id starts a new session and
//!   retries once. Notifications and responses are POSTed in order, each before the
//!   next message ([`Action::Send`]'s `blocking`).
//! - **2024-11-05 HTTP+SSE**: when `initialize` itself is refused with 400, 404 or 405
//!   and the body is no modern error, the URL is tried as an event stream whose first
//!   event names the endpoint to POST to — on the same origin only.
//!
//! An HTTP error that carries a JSON-RPC error is the server's answer and is delivered
//! as one; any other fails its request with [`Failure::Http`] (never a made-up
//! JSON-RPC error).
//!
//! **Authorization** ([`HttpSession::with_authorization`]): a 401, or a 403
//! `insufficient_scope`, to any request — a message, a notification, the standalone
//! GET stream, at the start or mid-session — holds the request and asks the shell to
//! act ([`Action::Authorize`], with the [`AuthNeed`] read from `WWW-Authenticate`).
//! When it has ([`HttpSession::authorized`]) the request is replayed, once per kind
//! of need ([`crate::auth::need::Rounds`]); when it cannot ([`HttpSession::abandon`])
//! the shell fails it with its own error. Without authorization, such refusals are
//! HTTP failures like any other.
//!
//! The policy reads each outgoing message's record ([`Outgoing`], written by the
//! connection beside its line), never the line itself.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the session: what it holds, each event's entry point, closing |
//! | `action.rs` | what the policy and the shell say to each other |
//! | `message.rs` | an outgoing message (its line and record), and what is read of answers |
//! | `headers.rs` | the header set of each request |
//! | `call.rs` | a request from its POST to its answer |
//! | `repair.rs` | a call's bounded repairs: renewal, resume, re-issue, refresh, HTTP+SSE |
//! | `one_way.rs` | notifications and responses, POSTed in order |
//! | `streams.rs` | the standalone GET stream and the HTTP+SSE stream |
//! | `authorizing.rs` | requests held for authorization, replayed or dropped |
//! | `param_headers.rs` | `x-mcp-header` and the `Mcp-Param-*` headers |
//! | `loopback.rs` | a local server's gate: loopback `Host` and `Origin`, bearer, JSON bodies (the inspector's and the bridge's listener's) |

mod action;
mod authorizing;
mod call;
mod headers;
pub mod loopback;
mod message;
mod one_way;
pub mod param_headers;
mod reconnect;
pub mod redact;
pub mod redirect;
mod repair;
mod resume;
mod streams;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use url::Url;

pub use crate::auth::AuthNeed;
use crate::jsonrpc::RequestId;
use crate::negotiation::Negotiated;
use crate::notice::Notice;
use crate::outbox::Outgoing;
use crate::version::ProtocolVersion;

pub use action::{
    Action, Body, End, ExchangeId, Failure, Head, HeaderText, HttpMethod, Request, StreamEvent,
};
pub use reconnect::Reconnect;
pub use resume::ResumeError;

use call::Call;
use message::Message;
use one_way::OneWay;
use param_headers::ToolHeaders;
use streams::{LegacyStream, Standalone};

/// How the endpoint is spoken to.
#[derive(Clone, Debug, PartialEq)]
enum Mode {
    /// Not known yet (before `initialize` was answered, or modern).
    Unknown,
    /// Streamable HTTP.
    Streamable,
    /// 2024-11-05 HTTP+SSE: POST to `endpoint`, answers on the GET stream.
    LegacySse {
        /// Where to POST.
        endpoint: Url,
    },
}

enum Exchange {
    Call(Box<Call>),
    OneWay(OneWay),
    Standalone(Standalone),
    LegacyStream(LegacyStream),
    Delete,
}

/// The HTTP side of one MCP connection. See the module documentation.
pub struct HttpSession {
    url: Url,
    /// The URL as messages show it ([`redact`]ed: no userinfo, no query values).
    shown: String,
    reconnect: Reconnect,
    /// The most bytes of a message or body.
    limit: usize,
    mode: Mode,
    session_id: Option<String>,
    /// Legacy: the negotiated version, when it has the header.
    version_header: Option<ProtocolVersion>,
    /// Legacy: the `initialize` request as sent, to start a new session after a 404.
    initialize: Option<Message>,
    tool_headers: ToolHeaders,
    exchanges: HashMap<ExchangeId, Exchange>,
    /// Requests in flight by their id as sent: for cancellation.
    by_request: HashMap<RequestId, ExchangeId>,
    next_exchange: u64,
    closed: bool,
    /// 401 and 403 `insufficient_scope` become [`Action::Authorize`].
    authorizing: bool,
    /// The standalone stream, legacy: whether it opens only when asked
    /// ([`HttpSession::standalone_on_demand`]), whether it is asked for, and whether
    /// the session is where it may open (`notifications/initialized` went through, or
    /// the session was resumed).
    standalone: streams::Wanted,
}

impl std::fmt::Debug for HttpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSession")
            .field("url", &self.shown)
            .field("mode", &self.mode)
            .field("exchanges", &self.exchanges.len())
            .finish_non_exhaustive()
    }
}

impl HttpSession {
    /// The HTTP side of a connection to the MCP endpoint at `url`; no message or body
    /// over `limit` bytes is read.
    pub fn new(url: Url, reconnect: Reconnect, limit: usize) -> HttpSession {
        HttpSession {
            shown: redact::redact(&url),
            url,
            reconnect,
            limit,
            mode: Mode::Unknown,
            session_id: None,
            version_header: None,
            initialize: None,
            tool_headers: ToolHeaders::default(),
            exchanges: HashMap::new(),
            by_request: HashMap::new(),
            next_exchange: 0,
            closed: false,
            authorizing: false,
            standalone: streams::Wanted::default(),
        }
    }

    /// Refusals for want of authorization become [`Action::Authorize`] (see the
    /// module documentation).
    pub fn with_authorization(mut self) -> HttpSession {
        self.authorizing = true;
        self
    }

    /// The handshake settled: legacy requests from now on carry the negotiated version
    /// (2025-06-18 and later define the header).
    pub fn negotiated(&mut self, negotiated: &Negotiated) {
        let v = negotiated.version;
        self.version_header =
            (v.era() == crate::Era::Legacy && v.has_protocol_version_header()).then_some(v);
    }

    /// Tells the policy tools the host already knows (a `tools/list` it kept from an
    /// earlier connection, say): their `x-mcp-header` annotations give the
    /// `Mcp-Param-*` headers of their calls without listing first. A tool whose
    /// annotations break the rules is forgotten, with a notice, as it would be when
    /// listed.
    pub fn know_tools(&mut self, tools: &[Value]) -> Vec<Notice> {
        let mut list = serde_json::json!({ "tools": tools });
        let mut notices = Vec::new();
        self.tool_headers.learn(&mut list, &mut notices);
        notices
    }

    /// Whether the endpoint turned out to be a 2024-11-05 HTTP+SSE server.
    pub fn is_legacy_sse(&self) -> bool {
        matches!(self.mode, Mode::LegacySse { .. })
    }

    fn new_exchange(&mut self, exchange: Exchange) -> ExchangeId {
        let id = ExchangeId(self.next_exchange);
        self.next_exchange += 1;
        self.exchanges.insert(id, exchange);
        id
    }

    /// One outgoing message when it is a request, `None` (and nothing changed) when it
    /// is anything else. A request's actions are one [`Action::Send`] that does not
    /// block (none once the session is closed): a shell may carry them out from the
    /// caller, where a notification or a response, whose POSTs go out one after
    /// another, is left to [`HttpSession::send`] in its order.
    pub fn send_request(&mut self, what: Outgoing, line: &[u8]) -> Option<Vec<Action>> {
        matches!(what, Outgoing::Request(_)).then(|| self.send(what, line))
    }

    /// One outgoing message: what the connection wrote (`what`) and its line
    /// (without its newline), as an [`Outbox`](crate::Outbox) hands them out.
    pub fn send(&mut self, what: Outgoing, line: &[u8]) -> Vec<Action> {
        if self.closed {
            return Vec::new();
        }
        let cancelled = match &what {
            Outgoing::Cancelled { id } => Some(id.clone()),
            _ => None,
        };
        let msg = Message::new(what, line);
        match cancelled {
            _ if msg.request().is_some() => self.start_call(msg),
            Some(id) => self.cancel(&id, msg),
            None => self.start_one_way(msg),
        }
    }

    /// Cancelling a request in flight: its exchange stops (closing its stream, which
    /// is the modern cancellation); a legacy server is also told with the
    /// notification.
    fn cancel(&mut self, target: &RequestId, msg: Message) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut modern = false;
        if let Some(ex) = self.by_request.remove(target) {
            if let Some(Exchange::Call(call)) = self.exchanges.remove(&ex) {
                modern = call.modern;
            }
            actions.push(Action::Abort(ex));
        }
        if !modern {
            actions.extend(self.start_one_way(msg));
        }
        actions
    }

    /// The response's head arrived: how to read its body.
    pub fn on_head(&mut self, ex: ExchangeId, head: &Head) -> (Body, Vec<Action>) {
        let Some(exchange) = self.exchanges.remove(&ex) else {
            return (Body::Discard, Vec::new());
        };
        match exchange {
            Exchange::Call(call) => self.call_head(ex, call, head),
            Exchange::OneWay(one) => self.one_way_head(ex, one, head),
            Exchange::Standalone(stream) => self.standalone_head(ex, stream, head),
            Exchange::LegacyStream(stream) => self.legacy_stream_head(ex, stream, head),
            Exchange::Delete => (Body::Discard, Vec::new()),
        }
    }

    /// A whole body (asked for with [`Body::Whole`]).
    pub fn on_body(&mut self, ex: ExchangeId, body: Vec<u8>) -> Vec<Action> {
        match self.exchanges.remove(&ex) {
            Some(Exchange::Call(call)) => self.call_body(ex, call, body),
            Some(Exchange::OneWay(one)) => self.one_way_body(ex, one, body),
            _ => Vec::new(),
        }
    }

    /// One event of a stream (asked for with [`Body::Events`]).
    pub fn on_event(&mut self, ex: ExchangeId, event: StreamEvent) -> Vec<Action> {
        match self.exchanges.get_mut(&ex) {
            Some(Exchange::Call(_)) => self.call_event(ex, event),
            Some(Exchange::Standalone(stream)) => match event {
                StreamEvent::Message(m) => {
                    stream.delivered = true;
                    vec![Action::Deliver(m)]
                }
                StreamEvent::Endpoint(_) => Vec::new(),
            },
            Some(Exchange::LegacyStream(_)) => self.legacy_stream_event(ex, event),
            _ => Vec::new(),
        }
    }

    /// The body or stream ended (or broke) without a transport error.
    pub fn on_end(&mut self, ex: ExchangeId, end: End) -> Vec<Action> {
        match self.exchanges.remove(&ex) {
            Some(Exchange::Call(call)) => self.call_end(ex, call, end),
            Some(Exchange::Standalone(stream)) => self.standalone_end(ex, stream, end),
            Some(Exchange::LegacyStream(stream)) => self.legacy_stream_end(stream),
            _ => Vec::new(),
        }
    }

    /// The request could not be made, or its body not read (the shell holds the
    /// transport error). A background stream retries; a request fails alone
    /// ([`Failure::Unreachable`]: over HTTP each message is its own exchange, so the
    /// next may well get through); a notification is reported as refused.
    pub fn on_failure(&mut self, ex: ExchangeId) -> Vec<Action> {
        match self.exchanges.remove(&ex) {
            Some(Exchange::Standalone(stream)) => self.standalone_end(ex, stream, End::default()),
            Some(Exchange::LegacyStream(stream)) => self.legacy_stream_end(stream),
            Some(Exchange::Call(call)) => {
                self.by_request.remove(&call.id);
                match call.waiting_for_stream() {
                    // Trying the URL as an HTTP+SSE endpoint failed: the original
                    // refusal is the answer.
                    true => self.call_refused(*call),
                    false => vec![Action::Fail {
                        id: call.id.clone(),
                        failure: Failure::Unreachable,
                    }],
                }
            }
            Some(Exchange::OneWay(one)) => vec![Action::Notice(Notice::HttpRejected {
                what: one.describe(),
                url: self.shown.clone(),
                detail: "it could not be delivered (the connection failed)".into(),
            })],
            Some(Exchange::Delete) | None => Vec::new(),
        }
    }

    /// The first event of a stream did not come in the time asked for.
    pub fn on_timeout(&mut self, ex: ExchangeId) -> Vec<Action> {
        match self.exchanges.remove(&ex) {
            Some(Exchange::LegacyStream(stream)) => {
                let mut actions = vec![Action::Abort(ex)];
                actions.extend(self.legacy_stream_end(stream));
                actions
            }
            Some(other) => {
                self.exchanges.insert(ex, other);
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// The connection is closing: nothing more is sent or retried. Returns the DELETE
    /// that ends a legacy session, when there is one.
    pub fn close(&mut self) -> Option<(ExchangeId, Request)> {
        self.closed = true;
        self.exchanges.clear();
        self.by_request.clear();
        let session = self.session_id.clone()?;
        if self.mode != Mode::Streamable {
            return None;
        }
        let mut headers = self.base_headers();
        headers.retain(|(n, _)| n != "mcp-session-id");
        headers.push(("mcp-session-id".into(), session.into()));
        let request = Request {
            method: HttpMethod::Delete,
            url: self.url.clone(),
            headers,
            body: None,
            user_headers: true,
            delay: Duration::ZERO,
        };
        Some((self.new_exchange(Exchange::Delete), request))
    }
}
