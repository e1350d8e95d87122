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
//! [`Negotiating`] exists only until the server answers; [`Connection`] exists only
//! after. A host therefore cannot issue a request before the handshake completes: there
//! is no value to call it on. Before the answer the only thing the client writes is a
//! reply to a server `ping`.

use serde_json::{json, Value};

use crate::capabilities::ServerCapabilities;
use crate::config::{ClientConfig, ProtocolChoice};
use crate::jsonrpc::{self, codes, Incoming, RequestId, RpcError};
use crate::model::{DiscoverResult, Empty, Implementation, InitializeParams, InitializeResult};
use crate::notice::Notice;
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
    },
    /// `initialize` sent proposing `proposed`.
    Initializing {
        id: RequestId,
        proposed: ProtocolVersion,
    },
}

/// The client between its first message and the server's answer.
#[derive(Debug)]
pub struct Negotiating {
    config: ClientConfig,
    stage: Stage,
    next_id: i64,
    notices: Vec<Notice>,
    early_notifications: Vec<(String, Value)>,
    /// The probe that timed out (its id and version): a late `DiscoverResult` still
    /// makes the connection modern, even while `initialize` is pending.
    late_probe: Option<(RequestId, ProtocolVersion)>,
}

/// The outcome of one step of the handshake.
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
    /// Starts negotiating: writes the first message (`server/discover` when the modern
    /// era is allowed, else `initialize`) to `out`.
    pub fn start(config: ClientConfig, out: &mut Vec<u8>) -> Negotiating {
        let mut n = Negotiating {
            stage: Stage::Initializing {
                id: RequestId::Number(0),
                proposed: ProtocolVersion::LATEST_LEGACY,
            },
            config,
            next_id: 0,
            notices: Vec::new(),
            early_notifications: Vec::new(),
            late_probe: None,
        };
        match n.config.protocol.modern_proposal() {
            Some(version) => n.send_discover(version, false, out),
            None => {
                let proposed = n
                    .config
                    .protocol
                    .legacy_proposal()
                    .unwrap_or(ProtocolVersion::LATEST_LEGACY);
                n.send_initialize(proposed, out);
            }
        }
        n
    }

    /// Whether the client is waiting on the modern probe (the shell then arms the probe
    /// timeout and calls [`Negotiating::probe_timed_out`] when it fires).
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

    /// Warnings gathered so far (drained).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    fn allocate(&mut self) -> RequestId {
        let id = RequestId::Number(self.next_id);
        self.next_id += 1;
        id
    }

    fn send_discover(&mut self, version: ProtocolVersion, retried: bool, out: &mut Vec<u8>) {
        let id = self.allocate();
        let params = json!({ "_meta": modern_meta(&self.config, version) });
        jsonrpc::write_request(out, &id, "server/discover", &params);
        self.stage = Stage::Probing {
            id,
            version,
            retried,
        };
    }

    fn send_initialize(&mut self, proposed: ProtocolVersion, out: &mut Vec<u8>) {
        let id = self.allocate();
        let caps = self.config.capabilities.to_value(proposed);
        let params = InitializeParams {
            protocol_version: proposed.as_str(),
            capabilities: &caps,
            client_info: &self.config.client_info,
        };
        jsonrpc::write_request(out, &id, "initialize", &params);
        self.stage = Stage::Initializing { id, proposed };
    }

    /// The modern probe got no answer in time: fall back to `initialize` if legacy is
    /// allowed.
    pub fn probe_timed_out(mut self, out: &mut Vec<u8>) -> Step {
        if let Stage::Probing { id, version, .. } = &self.stage {
            self.late_probe = Some((id.clone(), *version));
        }
        self.fall_back("no answer within the probe timeout".into(), out)
    }

    fn fall_back(mut self, why: String, out: &mut Vec<u8>) -> Step {
        match self.config.protocol.legacy_proposal() {
            Some(proposed) => {
                self.notices.push(Notice::LegacyFallback { why });
                self.send_initialize(proposed, out);
                Step::Waiting(self)
            }
            None => Step::Failed(NegotiationError::EraUnavailable {
                era: Era::Modern,
                detail: format!("server/discover: {why}"),
            }),
        }
    }

    /// Handles one message from the server.
    pub fn handle(mut self, msg: Incoming, out: &mut Vec<u8>) -> Step {
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
                if let Some((probe, version)) = self.late_probe.clone() {
                    // A slow modern server answering the probe after the fallback: it
                    // is modern (a dual-era server may now refuse `initialize`).
                    if id == probe {
                        let value = result.decode::<Value>().ok();
                        if value.as_ref().is_some_and(is_discover_result) {
                            self.late_probe = None;
                            return self.on_discover_result(version, value, out);
                        }
                    }
                }
                if id != *self.current_id() {
                    self.notices.push(Notice::UnknownResponseId { id });
                    return Step::Waiting(self);
                }
                match self.stage {
                    Stage::Probing { version, .. } => {
                        self.on_discover_result(version, result.decode::<Value>().ok(), out)
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
                    Stage::Probing { .. } => self.on_discover_error(error, out),
                    Stage::Initializing { .. } => {
                        Step::Failed(NegotiationError::InitializeRefused(error))
                    }
                }
            }
        }
    }

    fn current_id(&self) -> &RequestId {
        match &self.stage {
            Stage::Probing { id, .. } | Stage::Initializing { id, .. } => id,
        }
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
        out: &mut Vec<u8>,
    ) -> Step {
        let discovered = value.and_then(|v| serde_json::from_value::<DiscoverResult>(v).ok());
        let Some(d) = discovered.filter(|d| d.capabilities.is_object()) else {
            return self.fall_back("the answer is not a DiscoverResult".into(), out);
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
                return self.fall_back(why, out);
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

    fn on_discover_error(mut self, error: RpcError, out: &mut Vec<u8>) -> Step {
        let Stage::Probing { retried, .. } = self.stage else {
            unreachable!("on_discover_error is only called while probing")
        };
        match error.code {
            codes::UNSUPPORTED_PROTOCOL_VERSION => {
                // A recognised modern error: the server is modern. Never fall back.
                let server: Vec<String> = error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(|s| serde_json::from_value(s.clone()).ok())
                    .unwrap_or_default();
                match self.common_modern(&server) {
                    // Retry once with a version both sides list; never loop.
                    Some(v) if !retried => {
                        self.send_discover(v, true, out);
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
            _ => self.fall_back(format!("it answered with error {error}"), out),
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
