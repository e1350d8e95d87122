//! What the host tells the client before connecting.

use crate::capabilities::ClientCapabilities;
use crate::model::Implementation;
use crate::version::{Era, ProtocolVersion};

/// Which protocol versions the client may end up speaking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// Probe the modern era, fall back to legacy (the default).
    #[default]
    Auto,
    /// Only the legacy `initialize` handshake; any legacy version the server answers.
    Legacy,
    /// Only the modern era.
    Modern,
    /// Exactly this version and no other.
    Exact(ProtocolVersion),
}

impl ProtocolChoice {
    /// Whether `version` is acceptable under this choice.
    pub fn accepts(self, version: ProtocolVersion) -> bool {
        match self {
            ProtocolChoice::Auto => true,
            ProtocolChoice::Legacy => version.era() == Era::Legacy,
            ProtocolChoice::Modern => version.era() == Era::Modern,
            ProtocolChoice::Exact(v) => v == version,
        }
    }

    /// The versions acceptable under this choice, oldest first.
    pub fn supported(self) -> Vec<ProtocolVersion> {
        ProtocolVersion::ALL
            .into_iter()
            .filter(|v| self.accepts(*v))
            .collect()
    }

    /// The legacy version to propose in `initialize`, if legacy is allowed at all.
    pub fn legacy_proposal(self) -> Option<ProtocolVersion> {
        match self {
            ProtocolChoice::Auto | ProtocolChoice::Legacy => Some(ProtocolVersion::LATEST_LEGACY),
            ProtocolChoice::Exact(v) if v.era() == Era::Legacy => Some(v),
            _ => None,
        }
    }

    /// The modern version to probe with, if the modern era is allowed at all.
    pub fn modern_proposal(self) -> Option<ProtocolVersion> {
        match self {
            ProtocolChoice::Auto | ProtocolChoice::Modern => Some(ProtocolVersion::LATEST_MODERN),
            ProtocolChoice::Exact(v) if v.era() == Era::Modern => Some(v),
            _ => None,
        }
    }
}

impl std::str::FromStr for ProtocolChoice {
    type Err = crate::version::UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "auto" => ProtocolChoice::Auto,
            "legacy" => ProtocolChoice::Legacy,
            "modern" => ProtocolChoice::Modern,
            other => ProtocolChoice::Exact(other.parse()?),
        })
    }
}

/// Whether undeclared methods are refused locally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GatePolicy {
    /// Refuse, send nothing (the default).
    #[default]
    Strict,
    /// Send anyway. A -32601 answer to an undeclared method is then not a violation.
    Lenient,
}

/// The client's side of a connection.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Who the client says it is.
    pub client_info: Implementation,
    /// What the host handles (declared only for installed handlers).
    pub capabilities: ClientCapabilities,
    /// Which versions to speak.
    pub protocol: ProtocolChoice,
    /// Strict or lenient gating.
    pub gate_policy: GatePolicy,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_info: Implementation::new("capable", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            protocol: ProtocolChoice::default(),
            gate_policy: GatePolicy::default(),
        }
    }
}
