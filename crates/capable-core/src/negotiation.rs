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

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::capabilities::ServerCapabilities;
use crate::config::{ClientConfig, ProtocolChoice};
use crate::jsonrpc::{self, codes, Incoming, RequestId, RpcError};
use crate::method::Method;
use crate::model::{DiscoverResult, Empty, Implementation, InitializeParams, InitializeResult};
use crate::notice::Notice;
use crate::time;
use crate::version::{self, Era, ProtocolVersion};

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

/// Why a connection could not be established.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The server answered a version capable does not speak (or may not speak under the
    /// host's `--protocol` choice). No `notifications/initialized` was sent.
    #[error(
        "the server answered protocol version {answered} to our proposal of {proposed}; \
         capable supports {}; the connection was closed without sending anything more",
        version::list(supported)
    )]
    UnsupportedVersion {
        /// What capable proposed.
        proposed: ProtocolVersion,
        /// What the server answered.
        answered: String,
        /// What capable would have accepted.
        supported: Vec<ProtocolVersion>,
    },
    /// Modern: the server supports none of the versions capable may speak.
    #[error(
        "no common protocol version: the server supports {}, capable supports {}",
        server.join(", "), version::list(ours)
    )]
    NoCommonVersion {
        /// The server's list.
        server: Vec<String>,
        /// Ours.
        ours: Vec<ProtocolVersion>,
    },
    /// The server answered `initialize` with an error.
    #[error("the server refused initialize: {0}")]
    InitializeRefused(RpcError),
    /// The server refused `initialize` because of the version: its error names the
    /// versions it supports (`data.supported`) or is the unsupported-version error.
    #[error(
        "the server refused initialize for protocol version {proposed}{}: {error}",
        if server.is_empty() { String::new() } else { format!(" (it supports {})", server.join(", ")) }
    )]
    VersionRefused {
        /// What capable proposed.
        proposed: ProtocolVersion,
        /// The versions the server named, if any.
        server: Vec<String>,
        /// The error as sent.
        error: Box<RpcError>,
    },
    /// The handshake got no answer in time.
    #[error("the server did not answer {method} within {}", time::humanize(*after))]
    Timeout {
        /// The request that went unanswered.
        method: Method,
        /// How long the client waited.
        after: Duration,
    },
    /// Modern: the server needs a client capability capable did not declare.
    #[error("the server requires client capabilities capable did not declare: {required}")]
    MissingClientCapability {
        /// `data.requiredCapabilities` as sent.
        required: Value,
    },
    /// The era the host forced is not one the server speaks.
    #[error("the server does not speak the {era} era: {detail}")]
    EraUnavailable {
        /// The era that was forced.
        era: Era,
        /// What the server answered.
        detail: String,
    },
    /// An answer that is not what the protocol says it must be.
    #[error("malformed answer to {method}: {detail}")]
    MalformedAnswer {
        /// The request it answered.
        method: &'static str,
        /// What is wrong with it.
        detail: String,
    },
}

#[derive(Debug)]
enum Stage {
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

impl Negotiating {
    /// Starts negotiating at `now`: writes the first message to `out` — `server/discover`
    /// when the modern era is allowed, else `initialize`; with
    /// [`ClientConfig::era_hint`] `Some(Era::Legacy)` under [`ProtocolChoice::Auto`],
    /// `initialize`.
    pub fn start(config: ClientConfig, now: Instant, out: &mut Vec<u8>) -> Negotiating {
        let mut n = Negotiating {
            stage: Stage::Initializing {
                id: RequestId::Number(0),
                proposed: ProtocolVersion::LATEST_LEGACY,
                late_probe: None,
                may_probe: false,
            },
            deadline: now,
            config,
            next_id: 0,
            notices: Vec::new(),
            early_notifications: Vec::new(),
        };
        let legacy_first =
            n.config.protocol == ProtocolChoice::Auto && n.config.era_hint == Some(Era::Legacy);
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
    pub fn handle_timeout(self, now: Instant, out: &mut Vec<u8>) -> Step {
        if now < self.deadline {
            return Step::Waiting(self);
        }
        match self.stage {
            Stage::Probing {
                ref id, version, ..
            } => {
                let late = Some((id.clone(), version));
                self.fall_back("no answer within the probe timeout".into(), late, now, out)
            }
            Stage::Initializing { .. } => Step::Failed(NegotiationError::Timeout {
                method: Method::Initialize,
                after: self.config.timeouts.request,
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
    pub fn handle_probe_failure(self, why: String, now: Instant, out: &mut Vec<u8>) -> Step {
        if !self.is_probing() {
            return Step::Waiting(self);
        }
        self.fall_back(format!("it failed: {why}"), None, now, out)
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
        out: &mut Vec<u8>,
    ) {
        let id = self.allocate();
        let params = json!({ "_meta": modern_meta(&self.config, version) });
        jsonrpc::write_request(out, &id, "server/discover", &params);
        self.stage = Stage::Probing {
            id,
            version,
            retried,
            after_refusal,
        };
        self.deadline = time::deadline(now, self.config.timeouts.probe);
    }

    fn send_initialize(
        &mut self,
        proposed: ProtocolVersion,
        late_probe: Option<(RequestId, ProtocolVersion)>,
        may_probe: bool,
        now: Instant,
        out: &mut Vec<u8>,
    ) {
        let id = self.allocate();
        let caps = self.config.capabilities.to_value(proposed);
        let params = InitializeParams {
            protocol_version: proposed.as_str(),
            capabilities: &caps,
            client_info: &self.config.client_info,
        };
        jsonrpc::write_request(out, &id, "initialize", &params);
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
        out: &mut Vec<u8>,
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
    pub fn handle(mut self, msg: Incoming, now: Instant, out: &mut Vec<u8>) -> Step {
        match msg {
            Incoming::Request { id, method, .. } => {
                if method == "ping" && self.config.protocol != ProtocolChoice::Modern {
                    jsonrpc::write_result(out, &id, &Empty {});
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

    fn on_initialize_error(
        mut self,
        error: RpcError,
        proposed: ProtocolVersion,
        may_probe: bool,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Step {
        if may_probe {
            // `initialize` went first on a hint only: the server may have become
            // modern. Probe it, once, before calling the refusal final.
            if let Some(version) = self.config.protocol.modern_proposal() {
                self.notices.push(Notice::ModernFallback {
                    why: format!("it answered initialize with error {error}"),
                });
                self.send_discover(version, false, Some((error, proposed)), now, out);
                return Step::Waiting(self);
            }
        }
        Step::Failed(initialize_refused(error, proposed))
    }

    fn on_initialize_result(
        self,
        proposed: ProtocolVersion,
        result: Result<InitializeResult, serde_json::Error>,
        out: &mut Vec<u8>,
    ) -> Step {
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                return Step::Failed(NegotiationError::MalformedAnswer {
                    method: "initialize",
                    detail: e.to_string(),
                })
            }
        };
        let supported: Vec<ProtocolVersion> = ProtocolVersion::of_era(Era::Legacy)
            .filter(|v| self.config.protocol.accepts(*v))
            .collect();
        let version = match result.protocol_version.parse::<ProtocolVersion>() {
            Ok(v) if supported.contains(&v) => v,
            _ => {
                return Step::Failed(NegotiationError::UnsupportedVersion {
                    proposed,
                    answered: result.protocol_version,
                    supported,
                })
            }
        };
        if !result.capabilities.is_object() {
            return Step::Failed(NegotiationError::MalformedAnswer {
                method: "initialize",
                detail: format!("capabilities is not an object: {}", result.capabilities),
            });
        }
        // The first message after a successful answer.
        jsonrpc::write_notification::<()>(out, "notifications/initialized", None);
        let negotiated = Negotiated {
            version,
            server_info: result.server_info,
            capabilities: ServerCapabilities::from_value(result.capabilities),
            instructions: result.instructions,
            server_versions: Vec::new(),
        };
        self.ready(negotiated)
    }

    fn on_discover_result(
        self,
        version: ProtocolVersion,
        value: Option<Value>,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Step {
        let discovered = value.and_then(|v| serde_json::from_value::<DiscoverResult>(v).ok());
        let Some(d) = discovered.filter(|d| d.capabilities.is_object()) else {
            return self.fall_back("the answer is not a DiscoverResult".into(), None, now, out);
        };
        match d.result_type.as_deref() {
            None | Some("complete") => {}
            Some(other) => {
                return Step::Failed(NegotiationError::MalformedAnswer {
                    method: "server/discover",
                    detail: format!("unknown resultType {other:?}"),
                })
            }
        }
        let chosen = if d.supported_versions.iter().any(|s| s == version.as_str()) {
            Some(version)
        } else {
            self.common_modern(&d.supported_versions)
        };
        let Some(chosen) = chosen else {
            // A server that lists no modern version we speak may still speak legacy.
            if self.config.protocol.legacy_proposal().is_some() {
                let why = format!("it supports only {}", d.supported_versions.join(", "));
                return self.fall_back(why, None, now, out);
            }
            return Step::Failed(NegotiationError::NoCommonVersion {
                server: d.supported_versions,
                ours: self.config.protocol.supported(),
            });
        };
        let server_info = d
            .meta
            .as_ref()
            .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
            .and_then(|v| serde_json::from_value::<Implementation>(v.clone()).ok())
            .unwrap_or_default();
        let negotiated = Negotiated {
            version: chosen,
            server_info,
            capabilities: ServerCapabilities::from_value(d.capabilities),
            instructions: d.instructions,
            server_versions: d.supported_versions,
        };
        self.ready(negotiated)
    }

    fn common_modern(&self, server: &[String]) -> Option<ProtocolVersion> {
        ProtocolVersion::of_era(Era::Modern)
            .filter(|v| self.config.protocol.accepts(*v))
            .filter(|v| server.iter().any(|s| s == v.as_str()))
            .max()
    }

    fn on_discover_error(
        mut self,
        error: RpcError,
        retried: bool,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Step {
        match error.code {
            codes::UNSUPPORTED_PROTOCOL_VERSION => {
                // A recognised modern error: the server is modern. Never fall back.
                let server = supported_of(&error);
                match self.common_modern(&server) {
                    // Retry once with a version both sides list; never loop.
                    Some(v) if !retried => {
                        let after_refusal = match &mut self.stage {
                            Stage::Probing { after_refusal, .. } => after_refusal.take(),
                            Stage::Initializing { .. } => None,
                        };
                        self.send_discover(v, true, after_refusal, now, out);
                        Step::Waiting(self)
                    }
                    _ => Step::Failed(NegotiationError::NoCommonVersion {
                        server,
                        ours: self.config.protocol.supported(),
                    }),
                }
            }
            codes::MISSING_CLIENT_CAPABILITY => {
                Step::Failed(NegotiationError::MissingClientCapability {
                    required: error
                        .data
                        .and_then(|d| d.get("requiredCapabilities").cloned())
                        .unwrap_or(Value::Null),
                })
            }
            _ => self.fall_back(format!("it answered with error {error}"), None, now, out),
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

/// The versions an error's `data.supported` lists (an `UnsupportedProtocolVersionError`,
/// or a legacy server refusing `initialize` the way the specification's example does).
fn supported_of(error: &RpcError) -> Vec<String> {
    error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default()
}

/// Why `initialize` was refused, by what the error says: a refusal that names the
/// versions the server supports (`data.supported`) or carries the modern
/// unsupported-version code is about the version; any other is a plain refusal.
fn initialize_refused(error: RpcError, proposed: ProtocolVersion) -> NegotiationError {
    let names_versions = error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .is_some_and(Value::is_array);
    if names_versions || error.code == codes::UNSUPPORTED_PROTOCOL_VERSION {
        NegotiationError::VersionRefused {
            proposed,
            server: supported_of(&error),
            error: Box::new(error),
        }
    } else {
        NegotiationError::InitializeRefused(error)
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

/// Whether a value has the shape of a `DiscoverResult`.
fn is_discover_result(v: &Value) -> bool {
    v.get("capabilities").is_some_and(Value::is_object)
        && v.get("supportedVersions").is_some_and(Value::is_array)
}

/// The `_meta` envelope every modern request carries.
pub(crate) fn modern_meta(config: &ClientConfig, version: ProtocolVersion) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version.as_str(),
        "io.modelcontextprotocol/clientCapabilities": config.capabilities.to_value(version),
        "io.modelcontextprotocol/clientInfo": config.client_info,
    })
}
