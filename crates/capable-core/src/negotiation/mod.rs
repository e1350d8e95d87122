//! The negotiating state: from the first message to a ready [`Connection`] or a refusal.
//!
//! ```text
//!            ┌─────────── server/discover ───────────┐  (modern allowed)
//!  start ────┤                                       ├──> Ready(modern)
//!            │  error other than a modern one,       │
//!            │  non-DiscoverResult, or no answer     │
//!            └──> initialize ──> result ─────────────┴──> Ready(legacy), after
//!                                                          notifications/initialized
//!                      └──> unsupported version ──> Failed (nothing more is sent)
//! ```
//!
//! Each stage has its deadline: the probe timeout while `server/discover` is
//! unanswered, the request timeout while `initialize` is. The shell asks
//! [`Negotiating::poll_timeout`] when to give up and calls
//! [`Negotiating::handle_timeout`] then; the rules stay here.
//!
//! [`Negotiating`] exists only until the server answers; [`Connection`] exists only
//! after. A host therefore cannot issue a request before the handshake completes: there
//! is no value to call it on. Before the answer the only thing the client writes is a
//! reply to a server `ping`.
//!
//! [`Connection`]: crate::Connection

mod answers;
mod error;
mod resumed;

use std::time::Instant;

use serde_json::{json, Value};

use crate::capabilities::ServerCapabilities;
use crate::config::{ClientConfig, ProtocolChoice};
use crate::jsonrpc::{self, Incoming, RequestId, RpcError};
use crate::method::Method;
use crate::model::{Empty, Implementation, InitializeParams, InitializeResult};
use crate::notice::Notice;
use crate::outbox::Outbox;
use crate::time;
use crate::version::{Era, ProtocolVersion};

use answers::{initialize_refused, is_discover_result};
pub use error::NegotiationError;

/// What the handshake settled: version, era and everything the server said about itself.
#[derive(Clone, Debug)]
pub struct Negotiated {
    /// The version both sides speak.
    pub version: ProtocolVersion,
    /// Who the server says it is.
    pub server_info: Implementation,
    /// What the server declared.
    pub capabilities: ServerCapabilities,
    /// The server's usage hints.
    pub instructions: Option<String>,
    /// Modern only: every version the server listed in `server/discover`.
    pub server_versions: Vec<String>,
}

impl Negotiated {
    /// The era of the negotiated version.
    pub fn era(&self) -> Era {
        self.version.era()
    }
}

#[derive(Debug)]
pub(super) enum Stage {
    /// `server/discover` sent with `version`; `retried` once after -32022.
    Probing {
        id: RequestId,
        version: ProtocolVersion,
        retried: bool,
        /// The probe follows a refused `initialize` (sent first on the era hint): if
        /// the server is not modern either, that refusal is the answer.
        after_refusal: Option<(RpcError, ProtocolVersion)>,
    },
    /// `initialize` sent proposing `proposed`.
    Initializing {
        id: RequestId,
        proposed: ProtocolVersion,
        /// The probe that timed out (its id and version): a late `DiscoverResult`
        /// still makes the connection modern, even while `initialize` is pending.
        late_probe: Option<(RequestId, ProtocolVersion)>,
        /// `initialize` went first on the host's era hint, so a refusal of it may
        /// still lead to the modern probe (once).
        may_probe: bool,
    },
}

/// The client between its first message and the server's answer.
#[derive(Debug)]
pub struct Negotiating {
    config: ClientConfig,
    stage: Stage,
    /// When the current stage gives up (see [`Negotiating::poll_timeout`]).
    deadline: Instant,
    /// When the handshake began: a timeout says how long it took in all.
    started: Instant,
    next_id: i64,
    notices: Vec<Notice>,
    early_notifications: Vec<(String, Value)>,
}

/// The outcome of one step of the handshake.
// The state moves through each step by value, a few times per connection; boxing it
// would only add an allocation per message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Step {
    /// Still negotiating.
    Waiting(Negotiating),
    /// Negotiated: turn it into a [`Connection`](crate::Connection). For legacy
    /// versions `notifications/initialized` has been written to `out` as its first
    /// message.
    Ready(Box<Established>),
    /// Refused. Nothing more must be sent; close the transport.
    Failed(NegotiationError),
}

/// How the transport failed a handshake request it got no JSON-RPC answer to
/// ([`Negotiating::handle_failure`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestFailure {
    /// Authorization failed, or is needed and impossible here.
    Authorization,
    /// The way to the server said it is down or unreachable: HTTP 502, 503 or 504 with no
    /// JSON-RPC answer, from a proxy, a load balancer or the server's own front. That says
    /// nothing of the server's era, so a probe failed this way ends the handshake with the
    /// transport's error: it neither falls back to `initialize` (and never gets the server
    /// remembered as legacy) nor calls the server one that "does not speak" the modern era.
    Unavailable,
    /// Anything else: an HTTP status with no JSON-RPC answer, a stream that broke.
    Transport,
}

/// What a handshake request the transport failed leads to
/// ([`Negotiating::handle_failure`]).
// As for `Step`: moved by value a few times per connection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum AfterFailure {
    /// The handshake goes on (or fails by its own rules): its next step.
    Step(Step),
    /// The failure ends the handshake; the transport's own error is the answer.
    /// Nothing more must be sent.
    Ends,
}

impl Negotiating {
    /// Starts negotiating at `now`: writes the first message to `out` — `server/discover`
    /// when the modern era is allowed, else `initialize`; with
    /// [`ClientConfig::era_hint`] `Some(Era::Legacy)` under [`ProtocolChoice::Auto`]
    /// (or [`ProtocolChoice::Prefer`]),
    /// `initialize`.
    pub fn start(config: ClientConfig, now: Instant, out: &mut Outbox) -> Negotiating {
        let mut n = Negotiating {
            stage: Stage::Initializing {
                id: RequestId::Number(0),
                proposed: ProtocolVersion::LATEST_LEGACY,
                late_probe: None,
                may_probe: false,
            },
            deadline: now,
            started: now,
            config,
            next_id: 0,
            notices: Vec::new(),
            early_notifications: Vec::new(),
        };
        let legacy_first = matches!(
            n.config.protocol,
            ProtocolChoice::Auto | ProtocolChoice::Prefer(_)
        ) && n.config.era_hint == Some(Era::Legacy);
        match n.config.protocol.modern_proposal() {
            Some(version) if !legacy_first => n.send_discover(version, false, None, now, out),
            _ => {
                let proposed = n
                    .config
                    .protocol
                    .legacy_proposal()
                    .unwrap_or(ProtocolVersion::LATEST_LEGACY);
                n.send_initialize(proposed, None, legacy_first, now, out);
            }
        }
        n
    }

    /// Whether the client is waiting on the modern probe.
    pub fn is_probing(&self) -> bool {
        matches!(self.stage, Stage::Probing { .. })
    }

    /// The version the client is currently proposing.
    pub fn proposed(&self) -> ProtocolVersion {
        match self.stage {
            Stage::Probing { version, .. } => version,
            Stage::Initializing { proposed, .. } => proposed,
        }
    }

    /// When the current stage gives up: the probe timeout while probing, the request
    /// timeout while `initialize` is unanswered. Call [`Negotiating::handle_timeout`]
    /// then, unless an answer came first.
    pub fn poll_timeout(&self) -> Instant {
        self.deadline
    }

    /// The current stage's time is up (`now` ≥ [`Negotiating::poll_timeout`]; earlier
    /// calls change nothing). An unanswered probe falls back to `initialize` when
    /// legacy is allowed; an unanswered `initialize` fails the handshake.
    pub fn handle_timeout(self, now: Instant, out: &mut Outbox) -> Step {
        if now < self.deadline {
            return Step::Waiting(self);
        }
        match self.stage {
            Stage::Probing {
                after_refusal: None,
                ..
            } if self.config.protocol.legacy_proposal().is_none() => {
                Step::Failed(NegotiationError::Timeout {
                    method: Method::Discover,
                    after: now.saturating_duration_since(self.started),
                })
            }
            Stage::Probing {
                ref id, version, ..
            } => {
                let late = Some((id.clone(), version));
                self.fall_back("no answer within the probe timeout".into(), late, now, out)
            }
            Stage::Initializing { .. } => Step::Failed(NegotiationError::Timeout {
                method: Method::Initialize,
                // The whole handshake: a probe that went unanswered first counts too.
                after: now.saturating_duration_since(self.started),
            }),
        }
    }

    /// A line that is not a usable message. When it answers the request in flight (a
    /// malformed, truncated or too deeply nested response), the probe falls back as for
    /// any answer that is not modern, and `initialize` fails at once; anything else is
    /// skipped with a notice.
    pub fn handle_unreadable(
        mut self,
        line: &[u8],
        error: &jsonrpc::FramingError,
        now: Instant,
        out: &mut Outbox,
    ) -> Step {
        if jsonrpc::answered_id(line).as_ref() != Some(self.current_id()) {
            self.notices.push(Notice::SkippedLine {
                reason: error.to_string(),
            });
            return Step::Waiting(self);
        }
        match self.stage {
            Stage::Probing { .. } => {
                self.fall_back(format!("its answer is unreadable: {error}"), None, now, out)
            }
            Stage::Initializing { .. } => Step::Failed(NegotiationError::MalformedAnswer {
                method: "initialize",
                detail: error.to_string(),
            }),
        }
    }

    /// Whether `id` is the modern probe in flight.
    pub fn is_probe(&self, id: &RequestId) -> bool {
        matches!(&self.stage, Stage::Probing { id: probe, .. } if probe == id)
    }

    /// The transport failed the probe without a JSON-RPC answer (an HTTP error with an
    /// empty or unrecognised body): not a modern answer, so the client falls back to
    /// `initialize` as for any other — or fails when only the modern era is allowed.
    pub fn handle_probe_failure(self, why: String, now: Instant, out: &mut Outbox) -> Step {
        if !self.is_probing() {
            return Step::Waiting(self);
        }
        self.fall_back(format!("it failed: {why}"), None, now, out)
    }

    /// The transport failed handshake request `id` at `now` without a JSON-RPC answer
    /// (`why` in words). A failed probe is a non-modern answer like any other: the
    /// handshake goes on with `initialize` ([`handle_probe_failure`]). A failed
    /// authorization says nothing about the era, and a failed `initialize` leaves
    /// nothing to try: either ends the handshake, with the transport's own error as
    /// the answer ([`AfterFailure::Ends`]), as does a way to the server that says it is
    /// down ([`RequestFailure::Unavailable`]).
    ///
    /// [`handle_probe_failure`]: Negotiating::handle_probe_failure
    pub fn handle_failure(
        self,
        id: &RequestId,
        failure: RequestFailure,
        why: String,
        now: Instant,
        out: &mut Outbox,
    ) -> AfterFailure {
        if failure != RequestFailure::Transport || !self.is_probe(id) {
            return AfterFailure::Ends;
        }
        AfterFailure::Step(self.handle_probe_failure(why, now, out))
    }

    /// Warnings gathered so far (drained).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    fn allocate(&mut self) -> RequestId {
        let id = RequestId::Number(self.next_id);
        self.next_id += 1;
        id
    }

    fn send_discover(
        &mut self,
        version: ProtocolVersion,
        retried: bool,
        after_refusal: Option<(RpcError, ProtocolVersion)>,
        now: Instant,
        out: &mut Outbox,
    ) {
        let id = self.allocate();
        let meta = serde_json::to_vec(&modern_meta(&self.config, version)).unwrap_or_default();
        // Its members only (the braces stripped), as every modern request's `_meta`.
        let members = meta
            .get(1..meta.len().saturating_sub(1))
            .unwrap_or_default();
        out.write_request_with_meta(&id, Method::Discover, &Empty {}, members, Some(version));
        // Only a probe that can fall back gives up early: when the modern era is all
        // the host allows, `server/discover` is the handshake and waits as long as any
        // request (a server may be slow to start: `npx`, `uvx`, an interpreter).
        let wait = match after_refusal.is_none() && self.config.protocol.legacy_proposal().is_none()
        {
            true => self.config.timeouts.request,
            false => self.config.timeouts.probe,
        };
        self.stage = Stage::Probing {
            id,
            version,
            retried,
            after_refusal,
        };
        self.deadline = time::deadline(now, wait);
    }

    fn send_initialize(
        &mut self,
        proposed: ProtocolVersion,
        late_probe: Option<(RequestId, ProtocolVersion)>,
        may_probe: bool,
        now: Instant,
        out: &mut Outbox,
    ) {
        let id = self.allocate();
        let caps = self.config.capabilities.to_value(proposed);
        let params = InitializeParams {
            protocol_version: proposed.as_str(),
            capabilities: &caps,
            client_info: &self.config.client_info,
        };
        out.write_request(&id, Method::Initialize, &params);
        self.stage = Stage::Initializing {
            id,
            proposed,
            late_probe,
            may_probe,
        };
        self.deadline = time::deadline(now, self.config.timeouts.request);
    }

    fn fall_back(
        mut self,
        why: String,
        late_probe: Option<(RequestId, ProtocolVersion)>,
        now: Instant,
        out: &mut Outbox,
    ) -> Step {
        if let Stage::Probing {
            after_refusal: Some((error, proposed)),
            ..
        } = self.stage
        {
            // `initialize` was refused before this probe: no second `initialize`.
            return Step::Failed(initialize_refused(error, proposed));
        }
        match self.config.protocol.legacy_proposal() {
            Some(proposed) => {
                self.notices.push(Notice::LegacyFallback { why });
                self.send_initialize(proposed, late_probe, false, now, out);
                Step::Waiting(self)
            }
            None => Step::Failed(NegotiationError::EraUnavailable {
                era: Era::Modern,
                detail: format!("server/discover: {why}"),
            }),
        }
    }

    /// Handles one message from the server, arrived at `now`.
    pub fn handle(mut self, msg: Incoming, now: Instant, out: &mut Outbox) -> Step {
        match msg {
            Incoming::Request { id, method, .. } => {
                if method == "ping" && self.config.protocol != ProtocolChoice::Modern {
                    out.write_result(&id, &Empty {});
                } else {
                    self.notices.push(Notice::RequestBeforeReady { method });
                }
                Step::Waiting(self)
            }
            Incoming::Notification { method, params } => {
                let value = params.decode_or_default::<Value>().unwrap_or(Value::Null);
                self.early_notifications.push((method, value));
                Step::Waiting(self)
            }
            Incoming::Result { id, result } => {
                if let Stage::Initializing {
                    late_probe: Some((probe, version)),
                    ..
                } = &self.stage
                {
                    // A slow modern server answering the probe after the fallback: it
                    // is modern (a dual-era server may now refuse `initialize`).
                    if id == *probe {
                        let version = *version;
                        let value = result.decode::<Value>().ok();
                        if value.as_ref().is_some_and(is_discover_result) {
                            return self.on_discover_result(version, value, now, out);
                        }
                    }
                }
                if id != *self.current_id() {
                    self.notices.push(Notice::UnknownResponseId { id });
                    return Step::Waiting(self);
                }
                match self.stage {
                    Stage::Probing { version, .. } => {
                        self.on_discover_result(version, result.decode::<Value>().ok(), now, out)
                    }
                    Stage::Initializing { proposed, .. } => self.on_initialize_result(
                        proposed,
                        result.decode::<InitializeResult>(),
                        out,
                    ),
                }
            }
            Incoming::Error { id, error, .. } => {
                if id.as_ref().is_some_and(|id| id != self.current_id()) {
                    self.notices.push(Notice::UnknownResponseId {
                        id: id.unwrap_or(RequestId::Number(-1)),
                    });
                    return Step::Waiting(self);
                }
                match self.stage {
                    Stage::Probing { retried, .. } => {
                        self.on_discover_error(error, retried, now, out)
                    }
                    Stage::Initializing {
                        proposed,
                        may_probe,
                        ..
                    } => self.on_initialize_error(error, proposed, may_probe, now, out),
                }
            }
        }
    }

    fn current_id(&self) -> &RequestId {
        match &self.stage {
            Stage::Probing { id, .. } | Stage::Initializing { id, .. } => id,
        }
    }

    fn ready(self, negotiated: Negotiated) -> Step {
        Step::Ready(Box::new(Established {
            config: self.config,
            negotiated,
            next_id: self.next_id,
            notices: self.notices,
            early_notifications: self.early_notifications,
        }))
    }
}

/// A finished handshake, ready to become a [`Connection`](crate::Connection).
#[derive(Debug)]
pub struct Established {
    pub(crate) config: ClientConfig,
    /// What was negotiated.
    pub negotiated: Negotiated,
    pub(crate) next_id: i64,
    pub(crate) notices: Vec<Notice>,
    /// Notifications the server sent before the handshake finished (e.g. logging).
    pub early_notifications: Vec<(String, Value)>,
}

/// The `_meta` envelope every modern request carries.
pub(crate) fn modern_meta(config: &ClientConfig, version: ProtocolVersion) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version.as_str(),
        "io.modelcontextprotocol/clientCapabilities": config.capabilities.to_value(version),
        "io.modelcontextprotocol/clientInfo": config.client_info,
    })
}
