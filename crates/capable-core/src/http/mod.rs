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

mod authorizing;
mod call;
mod headers;
mod message;
mod message_layout;
pub mod param_headers;
mod reconnect;
pub mod redact;
pub mod redirect;
mod streams;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use url::Url;

pub use crate::auth::AuthNeed;
use crate::negotiation::Negotiated;
use crate::notice::Notice;
use crate::version::ProtocolVersion;

pub use reconnect::Reconnect;

use call::Call;
use message::{Kind, Outgoing};
use param_headers::ToolHeaders;
use streams::{LegacyStream, Standalone};

/// One HTTP exchange (a request and its answer, its retries included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExchangeId(u64);

/// An HTTP method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpMethod {
    /// GET: an event stream.
    Get,
    /// POST: a message.
    Post,
    /// DELETE: the end of a legacy session.
    Delete,
}

/// A request's JSON-RPC id as a map key: an integer as it is (the ids the connection
/// writes), any other id by its JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum RequestKey {
    Number(i64),
    Text(String),
}

impl RequestKey {
    pub(crate) fn of(id: &Value) -> RequestKey {
        match id.as_i64() {
            Some(n) if id.is_i64() => RequestKey::Number(n),
            _ => RequestKey::Text(id.to_string()),
        }
    }
}

/// A header name or value: MCP's fixed ones borrowed, the rest owned.
pub type HeaderText = std::borrow::Cow<'static, str>;

/// A request for the shell to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The method.
    pub method: HttpMethod,
    /// Where to.
    pub url: Url,
    /// MCP's headers (names in lower case), `Accept` and `Content-Type` included.
    pub headers: Vec<(HeaderText, HeaderText)>,
    /// The body, for a POST.
    pub body: Option<Vec<u8>>,
    /// Whether the host's own headers (`Authorization`, API keys, …) go with it: not
    /// after a redirect to another origin ([`redirect`]).
    pub user_headers: bool,
    /// Wait this long before sending it (a reconnect's delay).
    pub delay: Duration,
}

/// What the shell learns from a response's head.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// The status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Mcp-Session-Id`.
    pub session_id: Option<String>,
    /// Every `WWW-Authenticate` value (read for 401 and 403 only).
    pub www_authenticate: Vec<String>,
    /// `DPoP-Nonce` (RFC 9449 §9).
    pub dpop_nonce: Option<String>,
}

impl Head {
    fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The authorization need in this head, for a session that authorizes.
    fn need(&self, authorizing: bool, url: &Url) -> Option<AuthNeed> {
        if !authorizing {
            return None;
        }
        crate::auth::need::classify(
            self.status,
            &self.www_authenticate,
            self.dpop_nonce.as_deref(),
            url.as_str(),
        )
    }

    fn is_event_stream(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/event-stream"))
    }
}

/// How the shell reads a response's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Whole, at most `limit` bytes, handed to [`HttpSession::on_body`].
    Whole {
        /// The most bytes to read.
        limit: usize,
    },
    /// As an event stream: each event to [`HttpSession::on_event`], then
    /// [`HttpSession::on_end`]. With `first_within`, call [`HttpSession::on_timeout`]
    /// if no event came that soon.
    Events {
        /// How long the first event may take.
        first_within: Option<Duration>,
    },
    /// Read and dropped, then [`HttpSession::on_end`].
    Discard,
}

/// An event of a stream that matters to MCP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// A message (`data` of a `message` event).
    Message(Vec<u8>),
    /// The `endpoint` event of the 2024-11-05 HTTP+SSE transport.
    Endpoint(String),
}

/// How a body or stream ended: what resuming it needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct End {
    /// The id of the last event that carried one.
    pub last_event_id: Option<String>,
    /// The last `retry` the server asked for.
    pub retry: Option<Duration>,
    /// How long the stream was up (from its head to its end), as the shell measured.
    pub lasted: Duration,
}

/// Why a request failed without a JSON-RPC answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The server answered with an HTTP error and no JSON-RPC error.
    Http {
        /// The request's URL.
        url: String,
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The transport could not deliver an answer (a stream broke beyond repair, an
    /// accepted request never answered).
    Broken(String),
    /// The server answered the request with a body that is no JSON-RPC message.
    Malformed {
        /// The request's method.
        method: String,
        /// What is wrong.
        detail: String,
    },
    /// The request could not be made or its answer not read (the connection was
    /// refused, reset or closed midway, the body was too large): the shell holds the
    /// transport's error, which is the reason.
    Unreachable,
}

/// What the shell does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Perform `request` for `exchange` (a new exchange, or the next step of one).
    /// `blocking`: finish it before sending the next outgoing message.
    Send {
        /// Which exchange it belongs to.
        exchange: ExchangeId,
        /// The request.
        request: Request,
        /// Finish it before the next outgoing message.
        blocking: bool,
    },
    /// Stop an exchange and close its stream (the modern way to cancel).
    Abort(ExchangeId),
    /// A message for the client, exactly as it should read it.
    Deliver(Vec<u8>),
    /// The server refused a request for want of authorization: act on `need`, then
    /// call [`HttpSession::authorized`] (the request is replayed) or
    /// [`HttpSession::abandon`] (and fail request `id`, when it has one, with the
    /// reason).
    Authorize {
        /// The held exchange.
        exchange: ExchangeId,
        /// The request's id, as sent (`None`: a notification or the GET stream).
        id: Option<Value>,
        /// What the server said.
        need: AuthNeed,
    },
    /// A request failed without a JSON-RPC answer.
    Fail {
        /// Its id, as sent.
        id: Value,
        /// Why.
        failure: Failure,
    },
    /// Something the host should see.
    Notice(Notice),
    /// The connection cannot go on; with `None`, for the transport failure the shell
    /// just reported ([`HttpSession::on_failure`]).
    End(Option<Failure>),
}

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
    initialize: Option<Vec<u8>>,
    tool_headers: ToolHeaders,
    exchanges: HashMap<ExchangeId, Exchange>,
    /// Requests in flight by their id as sent (its JSON text): for cancellation.
    by_request: HashMap<RequestKey, ExchangeId>,
    next_exchange: u64,
    closed: bool,
    /// 401 and 403 `insufficient_scope` become [`Action::Authorize`].
    authorizing: bool,
}

/// A notification or response POSTed to the server.
struct OneWay {
    method: String,
    initialized: bool,
    msg: Outgoing,
    rounds: crate::auth::Rounds,
    need: Option<AuthNeed>,
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
    pub fn send_request(&mut self, line: &[u8]) -> Option<Vec<Action>> {
        let msg = Outgoing::parse(line)?;
        (msg.kind() == Some(Kind::Request)).then(|| self.send_parsed(msg))
    }

    /// One outgoing message (a line the connection wrote).
    pub fn send(&mut self, line: &[u8]) -> Vec<Action> {
        match Outgoing::parse(line) {
            Some(msg) => self.send_parsed(msg),
            None => Vec::new(),
        }
    }

    fn send_parsed(&mut self, msg: Outgoing) -> Vec<Action> {
        if self.closed {
            return Vec::new();
        }
        match msg.kind() {
            Some(Kind::Request) => self.start_call(msg),
            Some(Kind::Notification) => {
                if let Some(target) = msg.cancelled_id() {
                    return self.cancel(target.clone(), msg);
                }
                self.start_one_way(msg)
            }
            Some(Kind::Response) => self.start_one_way(msg),
            None => Vec::new(),
        }
    }

    /// Cancelling a request in flight: its exchange stops (closing its stream, which
    /// is the modern cancellation); a legacy server is also told with the
    /// notification.
    fn cancel(&mut self, target: Value, msg: Outgoing) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut modern = false;
        if let Some(ex) = self.by_request.remove(&RequestKey::of(&target)) {
            if let Some(Exchange::Call(call)) = self.exchanges.remove(&ex) {
                modern = call.modern;
            }
            actions.push(Action::Abort(ex));
        }
        if !modern && msg.modern_version().is_none() {
            actions.extend(self.start_one_way(msg));
        }
        actions
    }

    fn start_one_way(&mut self, msg: Outgoing) -> Vec<Action> {
        let method = msg.method().unwrap_or("a response").to_owned();
        let initialized = method == "notifications/initialized";
        let request = self.post(&msg, self.message_headers(&msg));
        let exchange = self.new_exchange(Exchange::OneWay(OneWay {
            method,
            initialized,
            msg,
            rounds: Default::default(),
            need: None,
        }));
        vec![Action::Send {
            exchange,
            request,
            blocking: true,
        }]
    }

    /// The response's head arrived: how to read its body.
    pub fn on_head(&mut self, ex: ExchangeId, head: &Head) -> (Body, Vec<Action>) {
        let whole = Body::Whole { limit: self.limit };
        let Some(exchange) = self.exchanges.remove(&ex) else {
            return (Body::Discard, Vec::new());
        };
        match exchange {
            Exchange::Call(call) => self.call_head(ex, call, head),
            Exchange::OneWay(mut one) => {
                let mut actions = Vec::new();
                let ok = head.is_success();
                if ok && one.initialized && self.mode == Mode::Streamable {
                    actions.extend(self.open_standalone());
                }
                one.initialized = ok;
                one.need = head
                    .need(self.authorizing, &self.url)
                    .filter(|n| one.rounds.admit(n.kind));
                self.exchanges.insert(ex, Exchange::OneWay(one));
                let body = if ok { Body::Discard } else { whole };
                (body, actions)
            }
            Exchange::Standalone(stream) => self.standalone_head(ex, stream, head),
            Exchange::LegacyStream(stream) => self.legacy_stream_head(ex, stream, head),
            Exchange::Delete => (Body::Discard, Vec::new()),
        }
    }

    /// A whole body (asked for with [`Body::Whole`]).
    pub fn on_body(&mut self, ex: ExchangeId, body: Vec<u8>) -> Vec<Action> {
        match self.exchanges.remove(&ex) {
            Some(Exchange::Call(call)) => self.call_body(ex, call, body),
            Some(Exchange::OneWay(mut one)) if !one.initialized => match one.need.take() {
                Some(need) => {
                    self.exchanges.insert(ex, Exchange::OneWay(one));
                    vec![Action::Authorize {
                        exchange: ex,
                        id: None,
                        need,
                    }]
                }
                None => vec![Action::Notice(Notice::HttpRejected {
                    what: one.method,
                    url: self.shown.clone(),
                    detail: message::excerpt(&body),
                })],
            },
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
                self.by_request.remove(&RequestKey::of(&call.id));
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
                what: one.method,
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
