//! What the host tells the client before connecting.

use std::time::Duration;

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
    /// Any version, proposing this one first in its era: what a bridge asks of the
    /// server behind it when its own client proposed that version (the era hint still
    /// orders the handshake, as under [`ProtocolChoice::Auto`]).
    Prefer(ProtocolVersion),
}

impl ProtocolChoice {
    /// Whether `version` is acceptable under this choice.
    pub fn accepts(self, version: ProtocolVersion) -> bool {
        match self {
            ProtocolChoice::Auto | ProtocolChoice::Prefer(_) => true,
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
            ProtocolChoice::Exact(v) | ProtocolChoice::Prefer(v) if v.era() == Era::Legacy => {
                Some(v)
            }
            ProtocolChoice::Prefer(_) => Some(ProtocolVersion::LATEST_LEGACY),
            _ => None,
        }
    }

    /// The modern version to probe with, if the modern era is allowed at all.
    pub fn modern_proposal(self) -> Option<ProtocolVersion> {
        match self {
            ProtocolChoice::Auto | ProtocolChoice::Modern => Some(ProtocolVersion::LATEST_MODERN),
            ProtocolChoice::Exact(v) | ProtocolChoice::Prefer(v) if v.era() == Era::Modern => {
                Some(v)
            }
            ProtocolChoice::Prefer(_) => Some(ProtocolVersion::LATEST_MODERN),
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

/// How long the client waits, and for what. Every rule that uses these lives in the
/// core: [`Negotiating`](crate::Negotiating) times the handshake,
/// [`Connection`](crate::Connection) times each request (see
/// [`Connection::poll_timeout`](crate::Connection::poll_timeout)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// How long a request (and the `initialize` handshake) may go unanswered.
    /// Default 60 s; a request may ask for its own.
    pub request: Duration,
    /// The most a request may take when its progress notifications keep extending
    /// its timeout (each one restarts it). Default 10 min.
    pub progress_cap: Duration,
    /// How long the modern probe (`server/discover`) may go unanswered before the
    /// client falls back to `initialize`. Default 3 s.
    pub probe: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: Duration::from_secs(60),
            progress_cap: Duration::from_secs(600),
            probe: Duration::from_secs(3),
        }
    }
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
    /// The era this server was found to speak before, if the host remembers one.
    ///
    /// A hint orders the handshake under [`ProtocolChoice::Auto`]; it never forbids
    /// the other era. With `Some(Era::Legacy)` the client starts with `initialize`
    /// (no probe, no probe timeout for a silent legacy server) and still probes
    /// `server/discover` should the server refuse `initialize`; with
    /// `Some(Era::Modern)` or `None` it probes first, as always, and still falls
    /// back to `initialize`. A forced [`ProtocolChoice`] ignores the hint.
    pub era_hint: Option<Era>,
    /// How long to wait for what.
    pub timeouts: Timeouts,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_info: Implementation::new("capable", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            protocol: ProtocolChoice::default(),
            gate_policy: GatePolicy::default(),
            era_hint: None,
            timeouts: Timeouts::default(),
        }
    }
}
