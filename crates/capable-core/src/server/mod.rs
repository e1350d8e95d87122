//! The server side, sans-IO: the mirror of the client's [`Connection`].
//!
//! A [`ServerConnection`] is what a server (the fixture, the bridge's face to its host)
//! keeps about one client, and every rule of what it answers and what it may send:
//!
//! - **Negotiation in both eras.** A legacy `initialize` is answered by the engine
//!   (the client's version when the server offers it, else its latest, or a refusal
//!   that names the versions it speaks); a 2026-07-28 request must carry the `_meta`
//!   envelope (its version one the server offers, else `-32022` with the list; its
//!   client capabilities, else `-32602`), and `server/discover` is answered by the
//!   engine.
//! - **The gating table, from the server's side.** A request for a method the server
//!   did not declare is answered `-32601` before the application sees it; only what
//!   passes reaches it, as an [`Event::Request`].
//! - **What the server may send.** Notifications pass the same table the other way
//!   ([`ServerConnection::notify`]): a `list_changed` only when declared, an update
//!   only for a subscribed URI (or a listen stream that asked), progress only for a
//!   request that asked, a log line only at a level the client wants. Requests to the
//!   client ([`ServerConnection::request`]) only for what it declared, legacy only.
//! - **Ids both ways.** The client's requests in flight by their id (a late answer
//!   to a cancelled one writes nothing); the server's own by a fresh integer id, each
//!   with a waiter `W` of the application's and a deadline
//!   ([`ServerConnection::poll_timeout`], [`ServerConnection::handle_timeout`]).
//! - **Cancellation both ways.** The client's `notifications/cancelled` is an
//!   [`Event::Cancelled`] (or ends a listen stream); the server's own requests are
//!   cancelled with [`ServerConnection::cancel`] or by their deadline.
//!
//! | file | concern |
//! |---|---|
//! | `phase.rs` | the client's stages as types: fresh, initializing, legacy, modern, closed |
//! | `negotiate.rs` | `initialize`, `server/discover`, the modern envelope |
//! | `incoming.rs` | every client message: requests gated and routed, notifications, answers |
//! | `notify.rs` | what the server may send, and where: progress, lists, updates, logs |
//! | `listen.rs` | the client's interest: legacy subscriptions, modern listen streams |
//! | `requests.rs` | the server's own requests: the client's gate, ids, deadlines |
//! | `rounds.rs` | a relayed legacy server's questions to a 2026-07-28 client, as `input_required` rounds |
//! | `era.rs` | a relayed legacy server's result as a 2026-07-28 client must get it |
//! | `merge.rs` | what many servers served as one declare |
//! | `fanout.rs` | a client's resource subscriptions carried out at many servers served as one |
//! | `streams.rs` | over Streamable HTTP: which stream each message goes on, events kept for resumption |
//! | `http_post.rs` | over Streamable HTTP: a POST without a session judged — its era, its headers against its body |
//! | `param_rules.rs` | over Streamable HTTP: a `tools/call`'s `Mcp-Param-*` headers against its arguments |
//!
//! ```
//! use capable_core::internal::server::{Event, ServerConfig, ServerConnection};
//! use capable_core::{Incoming, Outbox};
//! use capable_core::model::Implementation;
//! use serde_json::json;
//!
//! let config = ServerConfig::new(Implementation::new("docs", "1.0"), json!({"resources": {}}));
//! let mut server = ServerConnection::<()>::new(config);
//! let mut out = Outbox::new();
//! let message = |v: serde_json::Value| Incoming::parse(v.to_string().into_bytes()).unwrap();
//!
//! // The engine answers `initialize` with the client's version.
//! server.handle(message(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
//!     "protocolVersion": "2025-06-18", "capabilities": {},
//!     "clientInfo": {"name": "host", "version": "1"}}})), &mut out);
//! assert!(String::from_utf8_lossy(&out).contains(r#""protocolVersion":"2025-06-18""#));
//! out.clear();
//!
//! // A read is the application's to answer…
//! let read = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "docs://a"}});
//! let Event::Request(request) = server.handle(message(read), &mut out) else { panic!() };
//! server.respond(&request.id, &json!({"contents": []}), &mut out);
//! // …a call of a tool the server never declared is not: -32601, and no event.
//! let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}});
//! assert!(matches!(server.handle(message(call), &mut out), Event::Handled));
//! assert!(String::from_utf8_lossy(&out).contains("-32601"));
//! ```
//!
//! [`Connection`]: crate::Connection

mod era;
pub mod fanout;
mod http_post;
mod incoming;
mod listen;
pub mod merge;
mod negotiate;
mod notify;
mod param_rules;
mod phase;
mod requests;
mod rounds;
pub mod streams;

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::capabilities::ServerCapabilities;
use crate::config::ProtocolChoice;
use crate::connection::IdMap;
use crate::jsonrpc::{Payload, RequestId, RpcError};
use crate::method::Method;
use crate::model::Implementation;
use crate::outbox::Outbox;
use crate::version::ProtocolVersion;

pub use era::modern_result;
pub use http_post::{
    decoded as decoded_header, judge_post, judge_post_declared, PostHeaders, Verdict,
};
pub use listen::Interest;
pub use negotiate::{choose_version, Hello};
pub use notify::{LogLevel, Withheld};
pub use param_rules::ParamRules;
pub use phase::{LegacyClient, ModernClient, Phase};
pub use requests::{client_allows, Expired, NotAllowed, ServerMethod};
pub use rounds::{same_request, Lapsed, Next, Retry, Rounds};

/// What a server says about itself, and how long it waits.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Who the server says it is (`serverInfo`).
    pub server_info: Implementation,
    /// What it declares: the gating table reads it for every request it accepts and
    /// every notification it sends.
    pub capabilities: ServerCapabilities,
    /// Its `instructions`.
    pub instructions: Option<String>,
    /// Which versions it speaks (both eras by default).
    pub protocol: ProtocolChoice,
    /// How long a request of its own may go unanswered. Default 60 s.
    pub request_timeout: Duration,
    /// How long its `server/discover` answer stays fresh (`ttlMs`). Default 0.
    pub discover_ttl: Duration,
}

impl ServerConfig {
    /// A server named `server_info` that declares `capabilities` (a JSON object, kept
    /// exactly), speaking both eras.
    pub fn new(server_info: Implementation, capabilities: Value) -> ServerConfig {
        ServerConfig {
            server_info,
            capabilities: ServerCapabilities::from_value(capabilities),
            instructions: None,
            protocol: ProtocolChoice::Auto,
            request_timeout: Duration::from_secs(60),
            discover_ttl: Duration::ZERO,
        }
    }
}

/// A client request for the application to answer ([`ServerConnection::respond`],
/// [`ServerConnection::respond_error`]). It passed the gate: the server declared its
/// method, in the version it came under.
#[derive(Debug)]
pub struct ClientRequest {
    /// The client's id.
    pub id: RequestId,
    /// Its method.
    pub method: Method,
    /// Its params as sent (the `_meta` envelope included).
    pub params: Payload,
    /// The version it came under: the negotiated one (legacy), its own (modern).
    pub version: ProtocolVersion,
    /// Whether it asked for progress (`_meta.progressToken`): see
    /// [`ServerConnection::progress`].
    pub wants_progress: bool,
    /// The log level it asks for (2026-07-28 `io.modelcontextprotocol/logLevel`).
    pub log_level: Option<LogLevel>,
}

/// What one client message means for the application.
#[derive(Debug)]
pub enum Event<W> {
    /// A request to answer.
    Request(ClientRequest),
    /// The client cancelled its request `id` (never to be answered now: a late answer
    /// writes nothing).
    Cancelled {
        /// The request.
        id: RequestId,
        /// Its reason, when it gave one.
        reason: Option<String>,
    },
    /// The answer to one of the server's own requests, with its waiter.
    Response {
        /// The server's id.
        id: i64,
        /// Its method.
        method: ServerMethod,
        /// The waiter given to [`ServerConnection::request`].
        waiter: W,
        /// The result, or the client's error.
        outcome: Result<Payload, RpcError>,
    },
    /// `notifications/initialized`: the legacy session is fully up.
    Initialized,
    /// What the client wants to hear of changed (a listen stream opened or closed):
    /// the union of it now.
    Interest(Interest),
    /// Any other client notification (`notifications/roots/list_changed`, an
    /// extension's), as sent.
    Notification {
        /// Its method.
        method: String,
        /// Its params.
        params: Payload,
    },
    /// Nothing for the application: answered by the engine, refused, or noted.
    Handled,
}

/// Something the client did that the server tolerated (or refused), worth a log line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientNotice {
    /// A line that is not a usable JSON-RPC message.
    #[error("skipped a line from the client that is not a JSON-RPC message: {reason}")]
    SkippedLine {
        /// Why.
        reason: String,
    },
    /// An answer to no request of the server's in flight (a late one, or an unknown
    /// id).
    #[error("dropped the client's answer to request {id}, which is not in flight")]
    UnknownResponse {
        /// The id it carried.
        id: RequestId,
    },
    /// A listen stream acknowledged without some of its `resourceSubscriptions`: they
    /// are of no server here that takes subscriptions (see
    /// [`ServerConnection::set_subscribable`]).
    #[error("acknowledged the client's listen stream without {}: no server here takes subscriptions of them", uris.join(", "))]
    NotSubscribable {
        /// The URIs left out.
        uris: Vec<String>,
    },
    /// A request refused before the application saw it, and why.
    #[error("refused the client's {method} ({code}): {message}")]
    Refused {
        /// Its method, as sent.
        method: String,
        /// The error code written.
        code: i64,
        /// The error message written.
        message: String,
    },
}

/// The client's request in flight, as far as the engine keeps it.
#[derive(Debug)]
struct Inbound {
    method: Method,
    /// Its `_meta.progressToken`, as sent.
    progress_token: Option<Value>,
    /// Modern: the log level it asked for.
    log_level: Option<LogLevel>,
    /// The URI of a legacy (un)subscribe, the level of `logging/setLevel`: what its
    /// success changes.
    target: Option<String>,
}

/// One client, from the server's side. See the module documentation.
pub struct ServerConnection<W> {
    config: ServerConfig,
    phase: Phase,
    /// The client's requests the application is answering, by the client's ids (which
    /// it chooses: the hasher is seeded per process, as the standard one is, and
    /// cheaper on these short keys).
    inbound: HashMap<RequestId, Inbound, foldhash::fast::RandomState>,
    /// The server's own requests in flight.
    outbound: IdMap<requests::Outbound<W>>,
    next_id: i64,
    /// Modern: the listen streams open.
    listens: Vec<listen::Listen>,
    /// Legacy: the URIs subscribed to.
    subscriptions: BTreeSet<String>,
    /// Legacy: the server behind keeps the client's subscriptions and log level (see
    /// [`ServerConnection::keep_state_upstream`]).
    state_upstream: bool,
    /// Legacy: the level `logging/setLevel` asked for.
    log_level: Option<LogLevel>,
    notices: Vec<ClientNotice>,
    /// The envelope a 2026-07-28 client's phase was last built from.
    seen: Option<negotiate::Seen>,
    /// No deadline of the server's requests is earlier (see `requests.rs`).
    timer_at: Option<Instant>,
    /// Which URIs a listen stream may hold (see [`ServerConnection::set_subscribable`]).
    subscribable: Option<Subscribable>,
    /// Its clients cannot be told apart (see [`ServerConnection::set_shared`]).
    shared: bool,
    /// Which notifications of no protocol may pass (see
    /// [`ServerConnection::set_custom_notifications`]).
    custom: Option<Custom>,
}

/// Whether a notification that is no method of the protocol's may go to the client, by
/// its method (see [`ServerConnection::set_custom_notifications`]).
pub type Custom = Box<dyn Fn(&str) -> bool + Send>;

/// Whether a URI can be subscribed to (see [`ServerConnection::set_subscribable`]).
pub type Subscribable = Box<dyn Fn(&str) -> bool + Send>;

impl<W> std::fmt::Debug for ServerConnection<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConnection")
            .field("server", &self.config.server_info)
            .field("phase", &self.phase)
            .field("inbound", &self.inbound.len())
            .field("outbound", &self.outbound.len())
            .finish_non_exhaustive()
    }
}

impl<W> ServerConnection<W> {
    /// A server for one client, before its first message.
    pub fn new(config: ServerConfig) -> ServerConnection<W> {
        ServerConnection {
            config,
            phase: Phase::Fresh,
            inbound: HashMap::default(),
            outbound: IdMap::default(),
            next_id: 0,
            listens: Vec::new(),
            subscriptions: BTreeSet::new(),
            state_upstream: false,
            log_level: None,
            notices: Vec::new(),
            seen: None,
            timer_at: None,
            subscribable: None,
            shared: false,
            custom: None,
        }
    }

    /// Narrows `resources.subscribe` to the URIs `subscribable` accepts: a server in
    /// front of several, only some of which take subscriptions, declares the flag and
    /// tells which URIs it honours. A 2026-07-28 client's listen stream is acknowledged
    /// with those of its `resourceSubscriptions` alone, and only they are of
    /// [`ServerConnection::interest`]. Without it, every URI is.
    pub fn set_subscribable(&mut self, subscribable: Subscribable) {
        self.subscribable = Some(subscribable);
    }

    /// The engine faces 2026-07-28 clients it cannot tell apart — a bridge's hosts over
    /// HTTP, which have no session: its requests in flight may be several clients'.
    /// What belongs to a request but names none (a log line of a server behind that
    /// cannot say whose request it logs for) then goes to a request only when it is
    /// the only one in flight; else it is withheld ([`Withheld::Unattributable`]),
    /// never guessed: one client never gets another's.
    pub fn set_shared(&mut self, shared: bool) {
        self.shared = shared;
    }

    /// A legacy client's subscriptions and log level are kept by the server behind,
    /// not here: a `notifications/resources/updated` it sends goes to the client
    /// whatever this engine's own record of subscriptions says, a log line whatever
    /// level `logging/setLevel` asked of this engine (what the server declared still
    /// gates both).
    ///
    /// The rule, for a relay: an upstream session that is this client session's alone,
    /// to which every `resources/subscribe`, `resources/unsubscribe` and
    /// `logging/setLevel` of the client's went as it came, sends updates for this
    /// client's subscriptions only, and log lines at the level it asked for — the
    /// server's record is the client's. It may be the only complete one: gateway
    /// replicas continuing one session each see some of its requests, and the replica
    /// that holds the client's stream need not be the one that saw the subscribe.
    /// Never for an upstream several clients share, nor one the relay subscribes on
    /// for the client (its own subscriptions of other clients' would leak).
    pub fn keep_state_upstream(&mut self) {
        self.state_upstream = true;
    }

    /// Lets notifications that are no method of the protocol's (a server's own, `x/…`)
    /// go to the client when `allow` says so of their method. Without it none goes
    /// ([`Withheld::Custom`]): what the client gets is what the protocol defines and
    /// the server declared, nothing else.
    pub fn set_custom_notifications(&mut self, allow: Custom) {
        self.custom = Some(allow);
    }

    /// Whether the engine faces clients it cannot tell apart
    /// ([`ServerConnection::set_shared`]).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// What the server says about itself.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Declares anew, for a server whose abilities change (a bridge whose servers come,
    /// go and restart). A 2026-07-28 client is stateless: its next `server/discover`
    /// reads the new declaration, and every later request and notification is gated by
    /// it. A legacy client keeps what `initialize` told it for the whole session (a
    /// server may not change its capabilities under it). Returns whether the
    /// declaration changed.
    pub fn redeclare(
        &mut self,
        capabilities: ServerCapabilities,
        instructions: Option<String>,
    ) -> bool {
        let now = matches!(self.phase, Phase::Fresh | Phase::Modern(_));
        let changed =
            self.config.capabilities != capabilities || self.config.instructions != instructions;
        if now && changed {
            self.config.capabilities = capabilities;
            self.config.instructions = instructions;
        }
        now && changed
    }

    /// Where the client stands.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// How many of the client's requests the application has yet to answer.
    pub fn in_flight(&self) -> usize {
        self.inbound.len()
    }

    /// Whether the client's request `id` is still to be answered (not answered, not
    /// cancelled).
    pub fn is_in_flight(&self, id: &RequestId) -> bool {
        self.inbound.contains_key(id)
    }

    /// What the engine noted so far (drained).
    pub fn take_notices(&mut self) -> Vec<ClientNotice> {
        std::mem::take(&mut self.notices)
    }

    /// Answers the client's request `id` with `result`. Nothing is written for a
    /// request that is not in flight (answered already, cancelled, never sent);
    /// returns whether it was. A legacy `resources/subscribe` answered takes effect
    /// here (its updates may go out from now on), as does `resources/unsubscribe`
    /// and `logging/setLevel`.
    pub fn respond<R: Serialize + ?Sized>(
        &mut self,
        id: &RequestId,
        result: &R,
        out: &mut Outbox,
    ) -> bool {
        let Some(inbound) = self.take_inbound(id) else {
            return false;
        };
        self.on_success(inbound);
        out.write_result(id, result);
        true
    }

    /// Answers the client's request `id` with `raw`, a legacy server's result of
    /// `method`, as a 2026-07-28 client must get it ([`modern_result`]), written
    /// straight into `out` (see [`ServerConnection::respond`]).
    pub fn respond_from_legacy(
        &mut self,
        id: &RequestId,
        method: Method,
        raw: &serde_json::value::RawValue,
        out: &mut Outbox,
    ) -> bool {
        let Some(inbound) = self.take_inbound(id) else {
            return false;
        };
        self.on_success(inbound);
        out.write_result_with(id, |bytes| era::write_modern_result(bytes, method, raw));
        true
    }

    /// Answers the client's request `id` with `error` (see [`ServerConnection::respond`]).
    pub fn respond_error(&mut self, id: &RequestId, error: &RpcError, out: &mut Outbox) -> bool {
        if self.take_inbound(id).is_none() {
            return false;
        }
        out.write_error(id, error);
        true
    }

    fn take_inbound(&mut self, id: &RequestId) -> Option<Inbound> {
        if self.phase.is_closed() {
            return None;
        }
        self.inbound.remove(id)
    }

    /// Closes: nothing is routed or written from now on. Returns the waiter of every
    /// request of the server's still in flight.
    pub fn close(&mut self) -> Vec<W> {
        self.phase = Phase::Closed;
        self.timer_at = None;
        self.inbound.clear();
        self.listens.clear();
        self.outbound.drain().map(|(_, o)| o.waiter).collect()
    }

    /// Writes an error for request `id` the engine refused, and notes it.
    fn refuse(&mut self, id: &RequestId, method: &str, error: RpcError, out: &mut Outbox) {
        self.notices.push(ClientNotice::Refused {
            method: method.to_owned(),
            code: error.code,
            message: error.message.clone(),
        });
        out.write_error(id, &error);
    }
}

/// A JSON-RPC error with no data.
fn error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
        data: None,
    }
}
