//! Where the client stands, each stage of its life a type of its own.
//!
//! ```text
//!                ┌── initialize (answered) ──> Initializing ── notifications/initialized ──> Legacy
//!   Fresh ───────┤
//!                └── a request with the 2026-07-28 envelope ──> Modern
//!   any ── close ──> Closed
//! ```
//!
//! A legacy client fixes one version and one set of capabilities for the whole
//! session ([`LegacyClient`]); a 2026-07-28 client sends them with every request, and
//! [`ModernClient`] keeps the last ones it sent. Only [`Phase::Legacy`] (and, for a
//! `ping`, [`Phase::Initializing`]) lets the server send requests of its own; only a
//! phase with a version gates notifications.

use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::model::Implementation;
use crate::version::{Era, ProtocolVersion};

/// What a legacy client declared in `initialize`, and the version both sides speak.
#[derive(Clone, Debug, PartialEq)]
pub struct LegacyClient {
    /// The negotiated version.
    pub version: ProtocolVersion,
    /// What it declared, read by key ([`ClientCapabilities::from_value`]).
    pub capabilities: ClientCapabilities,
    /// Its `capabilities` exactly as sent.
    pub declared: Value,
    /// Who it says it is.
    pub client_info: Implementation,
}

/// What a 2026-07-28 client sent with its latest request.
#[derive(Clone, Debug, PartialEq)]
pub struct ModernClient {
    /// The version of its latest request.
    pub version: ProtocolVersion,
    /// What it declared on it, read by key.
    pub capabilities: ClientCapabilities,
    /// Its `io.modelcontextprotocol/clientCapabilities` exactly as sent.
    pub declared: Value,
    /// Its `io.modelcontextprotocol/clientInfo`, when it sent one.
    pub client_info: Option<Implementation>,
}

/// The client's stage (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Phase {
    /// Nothing has told the era yet: no `initialize`, no request with the modern
    /// envelope.
    #[default]
    Fresh,
    /// `initialize` was answered; `notifications/initialized` has not come. Requests
    /// are served already (a client may send them right after the answer).
    Initializing(LegacyClient),
    /// A legacy session.
    Legacy(LegacyClient),
    /// A 2026-07-28 client.
    Modern(ModernClient),
    /// Closed: nothing is routed or written any more.
    Closed,
}

impl Phase {
    /// The era the client speaks, once known.
    pub fn era(&self) -> Option<Era> {
        match self {
            Phase::Initializing(_) | Phase::Legacy(_) => Some(Era::Legacy),
            Phase::Modern(_) => Some(Era::Modern),
            Phase::Fresh | Phase::Closed => None,
        }
    }

    /// The version in force: the negotiated one, or a modern client's latest.
    pub fn version(&self) -> Option<ProtocolVersion> {
        match self {
            Phase::Initializing(c) | Phase::Legacy(c) => Some(c.version),
            Phase::Modern(c) => Some(c.version),
            Phase::Fresh | Phase::Closed => None,
        }
    }

    /// What the client declared (a modern client: on its latest request).
    pub fn capabilities(&self) -> Option<&ClientCapabilities> {
        match self {
            Phase::Initializing(c) | Phase::Legacy(c) => Some(&c.capabilities),
            Phase::Modern(c) => Some(&c.capabilities),
            Phase::Fresh | Phase::Closed => None,
        }
    }

    /// The legacy client, once `initialize` was answered.
    pub fn legacy(&self) -> Option<&LegacyClient> {
        match self {
            Phase::Initializing(c) | Phase::Legacy(c) => Some(c),
            _ => None,
        }
    }

    /// `notifications/initialized` came: an initializing session is ready (any other
    /// phase stays as it is; the answer says whether it moved).
    pub(super) fn initialized(&mut self) -> bool {
        match std::mem::take(self) {
            Phase::Initializing(client) => {
                *self = Phase::Legacy(client);
                true
            }
            other => {
                *self = other;
                false
            }
        }
    }

    /// A request with the modern envelope came: the client is modern, with what it
    /// sent this time. A legacy session stays legacy (the envelope means nothing
    /// there); returns whether the phase is modern now.
    pub(super) fn modern(&mut self, client: ModernClient) -> bool {
        match self {
            Phase::Fresh | Phase::Modern(_) => {
                *self = Phase::Modern(client);
                true
            }
            _ => false,
        }
    }

    /// Whether the phase is [`Phase::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self, Phase::Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legacy() -> LegacyClient {
        LegacyClient {
            version: ProtocolVersion::V2025_11_25,
            capabilities: ClientCapabilities::default(),
            declared: serde_json::json!({}),
            client_info: Implementation::new("host", "1"),
        }
    }

    fn modern() -> ModernClient {
        ModernClient {
            version: ProtocolVersion::V2026_07_28,
            capabilities: ClientCapabilities::default(),
            declared: serde_json::json!({}),
            client_info: None,
        }
    }

    #[test]
    fn initialized_moves_an_initializing_session_only() {
        let mut phase = Phase::Initializing(legacy());
        assert!(phase.initialized());
        assert_eq!(phase, Phase::Legacy(legacy()));
        assert!(!phase.initialized(), "once");
        let mut fresh = Phase::Fresh;
        assert!(!fresh.initialized());
        assert_eq!(fresh, Phase::Fresh);
    }

    #[test]
    fn a_modern_request_makes_a_fresh_client_modern_and_leaves_a_legacy_one() {
        let mut phase = Phase::Fresh;
        assert!(phase.modern(modern()));
        assert_eq!(phase.era(), Some(Era::Modern));
        let mut session = Phase::Legacy(legacy());
        assert!(!session.modern(modern()));
        assert_eq!(session.version(), Some(ProtocolVersion::V2025_11_25));
        assert_eq!(Phase::Closed.era(), None);
    }
}
