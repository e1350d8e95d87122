//! What the policy and the shell say to each other: the requests the shell is told to
//! send ([`Action`]), and what it reports back of each exchange ([`Head`], [`Body`],
//! [`StreamEvent`], [`End`], [`Failure`]).

use std::time::Duration;

use url::Url;

use crate::auth::AuthNeed;
use crate::jsonrpc::RequestId;
use crate::method::Method;
use crate::notice::Notice;

/// One HTTP exchange (a request and its answer, its retries included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExchangeId(pub(super) u64);

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
    /// after a redirect to another origin ([`redirect`](super::redirect)).
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
    pub(super) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The authorization need in this head, for a session that authorizes.
    pub(super) fn need(&self, authorizing: bool, url: &Url) -> Option<AuthNeed> {
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

    pub(super) fn is_event_stream(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/event-stream"))
    }
}

/// How the shell reads a response's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Whole, at most `limit` bytes, handed to [`HttpSession::on_body`](super::HttpSession::on_body).
    Whole {
        /// The most bytes to read.
        limit: usize,
    },
    /// As an event stream: each event to [`HttpSession::on_event`](super::HttpSession::on_event), then
    /// [`HttpSession::on_end`](super::HttpSession::on_end). With `first_within`, call [`HttpSession::on_timeout`](super::HttpSession::on_timeout)
    /// if no event came that soon.
    Events {
        /// How long the first event may take.
        first_within: Option<Duration>,
    },
    /// Read and dropped, then [`HttpSession::on_end`](super::HttpSession::on_end).
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
        method: Method,
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
    /// A message for the client that came on the stream of the client's request
    /// `related` (its id as the client sent it): a server's question there is about
    /// that request (Streamable HTTP: the server sends what belongs to a request on
    /// that request's stream).
    DeliverOn {
        /// The message, exactly as the client should read it.
        message: Vec<u8>,
        /// The client's request on whose stream it came.
        related: RequestId,
    },
    /// The server refused a request for want of authorization: act on `need`, then
    /// call [`HttpSession::authorized`](super::HttpSession::authorized) (the request is replayed) or
    /// [`HttpSession::abandon`](super::HttpSession::abandon) (and fail request `id`, when it has one, with the
    /// reason).
    Authorize {
        /// The held exchange.
        exchange: ExchangeId,
        /// The request's id, as sent (`None`: a notification or the GET stream).
        id: Option<RequestId>,
        /// What the server said.
        need: AuthNeed,
    },
    /// A request failed without a JSON-RPC answer.
    Fail {
        /// Its id, as sent.
        id: RequestId,
        /// Why.
        failure: Failure,
    },
    /// Something the host should see.
    Notice(Notice),
    /// The connection cannot go on; with `None`, for the transport failure the shell
    /// just reported ([`HttpSession::on_failure`](super::HttpSession::on_failure)).
    End(Option<Failure>),
}
