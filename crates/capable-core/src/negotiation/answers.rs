//! What each answer to the handshake means: an `initialize` result or refusal, a
//! `server/discover` result or error. Each leads to the ready state, the next stage
//! (a fallback, a retry with a common version, the probe after a refused `initialize`)
//! or a precise failure.

use std::time::Instant;

use serde_json::Value;

use crate::capabilities::ServerCapabilities;
use crate::jsonrpc::{codes, RpcError};
use crate::model::{DiscoverResult, Implementation, InitializeResult};
use crate::notice::Notice;
use crate::outbox::Outbox;
use crate::version::{Era, ProtocolVersion};

use super::{Negotiated, Negotiating, NegotiationError, Stage, Step};

impl Negotiating {
    pub(super) fn on_initialize_error(
        mut self,
        error: RpcError,
        proposed: ProtocolVersion,
        may_probe: bool,
        now: Instant,
        out: &mut Outbox,
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

    pub(super) fn on_initialize_result(
        self,
        proposed: ProtocolVersion,
        result: Result<InitializeResult, serde_json::Error>,
        out: &mut Outbox,
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
        out.write_initialized();
        let negotiated = Negotiated {
            version,
            server_info: result.server_info,
            capabilities: ServerCapabilities::from_value(result.capabilities),
            instructions: result.instructions,
            server_versions: Vec::new(),
        };
        self.ready(negotiated)
    }

    pub(super) fn on_discover_result(
        self,
        version: ProtocolVersion,
        value: Option<Value>,
        now: Instant,
        out: &mut Outbox,
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

    pub(super) fn common_modern(&self, server: &[String]) -> Option<ProtocolVersion> {
        ProtocolVersion::of_era(Era::Modern)
            .filter(|v| self.config.protocol.accepts(*v))
            .filter(|v| server.iter().any(|s| s == v.as_str()))
            .max()
    }

    pub(super) fn on_discover_error(
        mut self,
        error: RpcError,
        retried: bool,
        now: Instant,
        out: &mut Outbox,
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
pub(super) fn initialize_refused(error: RpcError, proposed: ProtocolVersion) -> NegotiationError {
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

/// Whether a value has the shape of a `DiscoverResult`.
pub(super) fn is_discover_result(v: &Value) -> bool {
    v.get("capabilities").is_some_and(Value::is_object)
        && v.get("supportedVersions").is_some_and(Value::is_array)
}
