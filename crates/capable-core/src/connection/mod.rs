//! The ready state: a negotiated connection that issues gated requests, routes every
//! incoming message, times every request out, and knows when it is closed.
//!
//! A [`Connection`] is pure state. The async shell feeds it what happens — received
//! messages ([`Connection::handle`]), the passing of time
//! ([`Connection::handle_timeout`] at [`Connection::poll_timeout`]), the end
//! ([`Connection::close`]) — and sends the bytes it writes into `out`. Each request is
//! registered with a *waiter* `W`, an opaque value of the shell's choosing (a oneshot
//! sender, say); the connection hands it back with the response, found by id (at most
//! one map lookup), or with its timeout. Results stay raw ([`Payload`]) until the
//! caller decodes them into the one type it expects.
//!
//! | file | concern |
//! |---|---|
//! | `outgoing.rs` | requests: the gate, the id, the line, the `_meta` envelope |
//! | `incoming.rs` | answers, server requests and notifications |
//! | `deadlines.rs` | request timeouts and their extension by progress |
//! | `listen.rs` | the notifications of `subscriptions/listen` streams, and their end |
//! | `in_flight.rs` | the requests in flight, by id |
//! | `sent.rs` | the copy of each request as sent, in reused buffers |

mod deadlines;
mod in_flight;
mod incoming;
mod listen;
mod outgoing;
mod sent;

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use serde::Serialize;
use serde_json::Value;

use crate::capabilities::ServerCapabilities;
use crate::config::{ClientConfig, GatePolicy};
use crate::gating::{self, Refusal};
use crate::jsonrpc::{Payload, RequestId, RpcError};
use crate::method::Method;
use crate::model::{Implementation, ProgressParams};
use crate::negotiation::{modern_meta, Established, Negotiated};
use crate::notice::Notice;
use crate::notification::Notification;
use crate::outbox::Outbox;
use crate::version::{Era, ProtocolVersion};
use crate::violation::Violation;

pub use deadlines::{TimedOut, Timeout, Timing};
pub use listen::{Listened, SUBSCRIPTION_ID};

/// Hashes a request id by one multiplication (for maps keyed by our own request ids).
///
/// A hash table takes a bucket from a hash's low bits and, in each bucket, keeps its
/// top seven bits as a tag, so that a lookup compares keys only where the tag matches.
/// The id itself would do for the bucket — ids are sequential, so they spread without
/// any mixing — but the top bits of every small id are zero: all tags would match,
/// and a lookup among the requests in flight would compare every key of a group.
/// Multiplying by an odd constant keeps the low bits of consecutive ids apart (it is a
/// one-to-one map of the low bits) and gives the top bits something of every bit.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        /// 2^64 divided by the golden ratio, made odd.
        const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
        self.0.wrapping_mul(SPREAD)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_i64(&mut self, n: i64) {
        self.0 = n as u64;
    }
}

/// A map keyed by our own request ids, hashed by [`IdHasher`].
pub type IdMap<V> = HashMap<i64, V, BuildHasherDefault<IdHasher>>;

struct Pending<W> {
    method: Method,
    /// The request exactly as sent, kept as evidence should the server break its
    /// contract.
    request: sent::Sent,
    waiter: W,
    /// When it times out; `None` for a request that never does (a listen stream).
    deadline: Option<deadlines::Deadline>,
    /// Whether it asked for progress (its token is its id).
    progress: bool,
    /// Where its answer is kept, when it may be ([`Connection::cache_answer`]).
    cache_key: Option<crate::cache::CacheKey>,
}

/// Why a request failed at the server.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseError {
    /// The server answered with a JSON-RPC error.
    #[error("the server answered with an error: {0}")]
    Rpc(RpcError),
    /// The server declared the method's capability and then answered -32601.
    #[error("{0}")]
    Violation(Box<Violation>),
    /// The server answered with a message that is no valid response (truncated, too
    /// deep, neither result nor error): the request fails at once, not by timeout.
    #[error("the server's answer is not a valid response: {0}")]
    Malformed(String),
}

/// Why a request was not sent. Nothing was written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NotSent {
    /// The gating table refused it.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The connection is closed.
    #[error("the connection is closed")]
    Closed,
}

/// What one incoming message means for the host.
#[derive(Debug)]
pub enum Event<W> {
    /// The answer to one of our requests, with the waiter it was registered with.
    Response {
        /// Our request id.
        id: i64,
        /// The request's method.
        method: Method,
        /// The waiter given to [`Connection::request`].
        waiter: W,
        /// The raw result, or why there is none.
        outcome: Result<Payload, ResponseError>,
    },
    /// Progress on one of our requests (find its waiter with
    /// [`Connection::waiter_mut`]). Its timeout has been restarted, up to the cap.
    Progress {
        /// Our request id.
        id: i64,
        /// The progress.
        progress: ProgressParams,
    },
    /// A server notification for the host.
    Notification {
        /// What it says, typed.
        notification: Notification,
        /// Its method, as sent.
        method: String,
        /// Its params, as sent.
        params: Payload,
    },
    /// An item of the `subscriptions/listen` stream of request `id` (see `listen.rs`),
    /// for that stream's listener.
    Listen {
        /// The listen request's id (the item's `subscriptionId`).
        id: i64,
        /// What arrived.
        item: Listened,
    },
    /// The server ended the listen stream of request `id` (`notifications/cancelled`
    /// for it): the request is over, with its waiter.
    ListenEnded {
        /// The listen request's id.
        id: i64,
        /// The waiter given to [`Connection::listen`].
        waiter: W,
        /// The server's reason (empty when it gave none).
        reason: String,
    },
    /// A server request the host handles (elicitation, sampling, roots), of a kind
    /// the client declared ([`InputKind::check`](crate::input_kind::InputKind::check));
    /// answer it with [`Connection::respond`] or [`Connection::respond_error`].
    ServerRequest {
        /// The server's id.
        id: RequestId,
        /// What it asks for.
        kind: crate::input_kind::InputKind,
        /// Its method.
        method: String,
        /// Its params.
        params: Payload,
        /// The client's request it is about: the one on whose stream it came
        /// (Streamable HTTP's POST stream, by the id the client sent;
        /// [`Connection::handle_on`]). `None` where the transport cannot say (stdio,
        /// the standalone GET stream, HTTP+SSE).
        related: Option<RequestId>,
    },
    /// Nothing for the host: answered internally (a `ping`), dropped with a notice, or
    /// arrived after the connection closed.
    Handled,
}

/// How a log level is asked for ([`Connection::ask_log_level`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    /// Legacy: send `logging/setLevel` with the level now.
    Send,
    /// Modern: kept; every later request carries it in its `_meta`.
    InMeta,
}

/// A request answered with a result ([`Connection::handle_result`]).
#[derive(Debug)]
pub struct Answered<W> {
    /// Our request id.
    pub id: i64,
    /// The request's method.
    pub method: Method,
    /// The waiter given to [`Connection::request`].
    pub waiter: W,
    /// The raw result.
    pub result: Payload,
}

/// A negotiated connection. See the module documentation.
pub struct Connection<W> {
    config: ClientConfig,
    negotiated: Negotiated,
    next_id: i64,
    pending: in_flight::InFlight<Pending<W>>,
    /// Buffers for the copies of requests as sent (see `sent.rs`).
    spares: sent::Spares,
    broken: HashSet<Method>,
    /// The methods [`Connection::check`] lets through, a bit each
    /// ([`Connection::bit`]): worked out once from what was negotiated, which never
    /// changes, less each method marked broken since. A request's gate check is then
    /// one bit test; a refusal is still worked out by the rules, to say why.
    allowed: u32,
    violations: Vec<Violation>,
    notices: Vec<Notice>,
    subscriptions: HashSet<String>,
    /// Legacy: the session is held by other clients too, which may have subscribed
    /// (see [`Connection::share_subscriptions`]).
    subscriptions_shared: bool,
    /// Modern: the members of the `_meta` envelope, pre-serialised once.
    meta_members: Vec<u8>,
    /// Modern: `io.modelcontextprotocol/logLevel` to put on every request.
    log_level: Option<String>,
    /// No deadline of a request in flight is earlier than this (see
    /// [`Connection::poll_timeout`]); `None` when nothing is timed.
    timer_at: Option<std::time::Instant>,
    /// Closed: nothing is sent or routed any more.
    closed: bool,
    /// Results kept while fresh (SEP-2549).
    cache: crate::cache::ResponseCache,
}

impl<W> std::fmt::Debug for Connection<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("version", &self.negotiated.version)
            .field("server", &self.negotiated.server_info)
            .field("pending", &self.pending.len())
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl<W> Connection<W> {
    /// The connection a finished handshake leads to. Notifications the server sent
    /// during the handshake are returned for delivery.
    pub fn new(established: Established) -> (Connection<W>, Vec<(String, Value)>) {
        let Established {
            config,
            negotiated,
            next_id,
            notices,
            early_notifications,
        } = established;
        let meta_members = match negotiated.era() {
            Era::Modern => {
                let meta = serde_json::to_vec(&modern_meta(&config, negotiated.version))
                    .unwrap_or_default();
                // Strip the braces: members only, so more can be added per request.
                meta.get(1..meta.len().saturating_sub(1))
                    .unwrap_or_default()
                    .to_vec()
            }
            Era::Legacy => Vec::new(),
        };
        let mut conn = Connection {
            config,
            negotiated,
            next_id,
            pending: in_flight::InFlight::default(),
            spares: sent::Spares::default(),
            broken: HashSet::new(),
            allowed: 0,
            violations: Vec::new(),
            notices,
            subscriptions: HashSet::new(),
            subscriptions_shared: false,
            meta_members,
            log_level: None,
            timer_at: None,
            closed: false,
            cache: crate::cache::ResponseCache::default(),
        };
        conn.allowed = Method::ALL
            .into_iter()
            .filter(|m| conn.judge(*m).is_ok())
            .fold(0, |allowed, m| allowed | Connection::<W>::bit(m));
        (conn, early_notifications)
    }

    /// What was negotiated.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// The negotiated version.
    pub fn version(&self) -> ProtocolVersion {
        self.negotiated.version
    }

    /// The server's capabilities.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.negotiated.capabilities
    }

    /// The client configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The server's identity.
    pub fn server_info(&self) -> &Implementation {
        &self.negotiated.server_info
    }

    /// The methods the host may call now (the gating table, less methods marked
    /// broken by a violation).
    pub fn actions(&self) -> Vec<Method> {
        gating::actions(self.negotiated.version, &self.negotiated.capabilities)
            .into_iter()
            .filter(|m| !self.broken.contains(m))
            .collect()
    }

    /// Whether `method` may be sent now; the same check every request passes.
    #[inline]
    pub fn check(&self, method: Method) -> Result<(), Refusal> {
        if self.allowed & Self::bit(method) != 0 {
            return Ok(());
        }
        self.judge(method)
    }

    /// `method`'s bit in [`Connection::allowed`].
    fn bit(method: Method) -> u32 {
        const _: () = assert!(Method::ALL.len() <= 32, "a bit per method");
        1 << (method as u32)
    }

    /// A method the server declared and then answered as unknown: refused for the
    /// rest of the session.
    fn mark_broken(&mut self, method: Method) {
        self.broken.insert(method);
        self.allowed &= !Self::bit(method);
    }

    /// The rules [`Connection::check`] applies: the gating table for the negotiated
    /// version and capabilities, the gate policy, and the methods marked broken.
    fn judge(&self, method: Method) -> Result<(), Refusal> {
        if self.broken.contains(&method) {
            return Err(Refusal::MarkedBroken { method });
        }
        if method == Method::Initialize && self.negotiated.era() == Era::Legacy {
            // The handshake sends it, once; a second one would restart the session.
            return Err(Refusal::HandshakeOnly { method });
        }
        let strict = self.config.gate_policy == GatePolicy::Strict;
        let version = self.negotiated.version;
        if let gating::Requirement::Extension(extension @ crate::Extension::Tasks) =
            gating::requirement(method, version)
        {
            // Both sides declare tasks: the server answers tasks methods only to a
            // client that said it handles them.
            if strict && !self.config.capabilities.has_extension(extension) {
                return Err(Refusal::ExtensionNotHandled { method, extension });
            }
        }
        match gating::check(method, version, &self.negotiated.capabilities) {
            Err(r @ Refusal::NotInVersion { .. }) => Err(r),
            Err(r) if strict => Err(r),
            _ => Ok(()),
        }
    }

    /// Contract violations recorded so far.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Warnings gathered so far (drained).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Number of requests in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Modern: the log level to ask for on every request (`None` asks for no logs);
    /// the 2026-07-28 way of `logging/setLevel`.
    pub fn set_modern_log_level(&mut self, level: Option<String>) {
        self.log_level = level;
    }

    /// Asks for the server's log messages at `level` and above, each era its way:
    /// legacy servers get a `logging/setLevel` request, which the caller sends
    /// ([`LogLevel::Send`]; it passes the gating table like any request); in 2026-07-28,
    /// where that method is gone, the level is kept and travels in every later
    /// request's `_meta` ([`LogLevel::InMeta`]) — refused, like the request would be,
    /// when the server did not declare `logging` and the gate is strict.
    pub fn ask_log_level(&mut self, level: &str) -> Result<LogLevel, Refusal> {
        if self.negotiated.era() == Era::Legacy {
            return Ok(LogLevel::Send);
        }
        let declared = self
            .capabilities()
            .has(crate::capabilities::Capability::Logging);
        if !declared && self.config.gate_policy == GatePolicy::Strict {
            return Err(Refusal::CapabilityNotDeclared {
                method: Method::SetLoggingLevel,
                capability: crate::capabilities::Capability::Logging,
            });
        }
        self.log_level = Some(level.to_owned());
        Ok(LogLevel::InMeta)
    }

    /// The legacy session is held by other clients too (gateway replicas continuing
    /// one session): a `resources/subscribe` one of them made is the session's, so an
    /// update of a URI this connection never subscribed to is expected, not noticed
    /// ([`Notice::UnexpectedUpdate`] is for a session of this connection's alone).
    pub fn share_subscriptions(&mut self) {
        self.subscriptions_shared = true;
    }

    /// The URIs of the legacy subscriptions in force (recorded when a
    /// `resources/subscribe` is answered, forgotten when `resources/unsubscribe` is).
    pub fn subscriptions(&self) -> impl Iterator<Item = &str> {
        self.subscriptions.iter().map(String::as_str)
    }

    /// The result kept for `key`, if still fresh at `now` (see [`ResponseCache`](crate::ResponseCache)).
    pub fn cached(
        &self,
        key: &crate::cache::CacheKey,
        now: std::time::Instant,
    ) -> Option<&crate::cache::Cached> {
        self.cache.get(key, now)
    }

    /// Keeps the answer to request `id` under `key` when it arrives (if its hints
    /// allow). A request the caller may not see cached (a retry) is simply not marked;
    /// in the legacy era nothing is ([`crate::cache::applies_to`]).
    pub fn cache_answer(&mut self, id: i64, key: crate::cache::CacheKey) {
        if !crate::cache::applies_to(self.negotiated.era()) {
            return;
        }
        if let Some(p) = self.pending.get_mut(id) {
            p.cache_key = Some(key);
        }
    }

    /// The cache itself, for a host that drops results by hand.
    pub fn cache_mut(&mut self) -> &mut crate::cache::ResponseCache {
        &mut self.cache
    }

    /// Every request in flight, by id, with its waiter.
    pub fn waiters(&self) -> impl Iterator<Item = (i64, &W)> {
        self.pending.iter().map(|(id, p)| (id, &p.waiter))
    }

    /// The waiter of a request in flight.
    pub fn waiter_mut(&mut self, id: i64) -> Option<&mut W> {
        self.pending.get_mut(id).map(|p| &mut p.waiter)
    }

    /// Gives up on a request: forgets it and writes `notifications/cancelled` for it.
    /// Returns its waiter if it was still in flight.
    pub fn cancel(&mut self, id: i64, reason: &str, out: &mut Outbox) -> Option<W> {
        let p = self.pending.remove(id)?;
        self.spares.recycle(p.request);
        self.write_cancelled(id, reason, out);
        Some(p.waiter)
    }

    fn write_cancelled(&self, id: i64, reason: &str, out: &mut Outbox) {
        out.write_cancelled(&RequestId::Number(id), reason);
    }

    /// Forgets a request without telling the server (its answer will not come: the
    /// transport failed it, or the server ended a stream).
    pub fn forget(&mut self, id: i64) -> Option<W> {
        let p = self.pending.remove(id)?;
        self.spares.recycle(p.request);
        Some(p.waiter)
    }

    /// Closes the connection: nothing is sent or routed from now on, no request times
    /// out. Returns the waiter of every request that was in flight, for the shell to
    /// fail with the reason it knows (the host closed, the server exited, …).
    pub fn close(&mut self) -> Vec<W> {
        self.closed = true;
        self.timer_at = None;
        self.pending.drain().map(|p| p.waiter).collect()
    }

    /// Whether [`Connection::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Answers a server request the host handled.
    pub fn respond<R: Serialize + ?Sized>(&mut self, id: &RequestId, result: &R, out: &mut Outbox) {
        if !self.closed {
            out.write_result(id, result);
        }
    }

    /// Answers a server request with an error.
    pub fn respond_error(&mut self, id: &RequestId, error: &RpcError, out: &mut Outbox) {
        if !self.closed {
            out.write_error(id, error);
        }
    }
}
