//! Protocol versions and the two protocol eras.
//!
//! MCP names its revisions by date. Revisions 2024-11-05 through 2025-11-25 form the
//! **legacy** era: a connection starts with an `initialize` handshake that fixes one
//! version and one set of capabilities for its whole life. Revision 2026-07-28 starts the
//! **modern** era: there is no handshake, every request carries its protocol version in
//! `_meta`, and `server/discover` tells what a server offers.
//!
//! capable speaks every released revision. What a revision allows (which methods exist,
//! which capability flags are defined) is asked of [`ProtocolVersion`], never decided by
//! comparing strings elsewhere.

use std::fmt;
use std::str::FromStr;

/// A protocol revision capable knows how to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first release (HTTP+SSE transport, no `completions` flag).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, the `completions` capability, batching.
    V2025_03_26,
    /// 2025-06-18: elicitation, structured tool output, `MCP-Protocol-Version` header.
    V2025_06_18,
    /// 2025-11-25: URL-mode elicitation, tasks, icons; the last legacy revision.
    V2025_11_25,
    /// 2026-07-28: stateless; `server/discover`, `_meta` envelope, `subscriptions/listen`.
    V2026_07_28,
}

/// The two protocol eras. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize` handshake, sessions.
    Legacy,
    /// 2026-07-28 and later: stateless requests, `server/discover`.
    Modern,
}

impl Era {
    /// The lower-case name used in JSON output (`"legacy"`, `"modern"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ProtocolVersion {
    /// Every revision capable speaks, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The newest legacy revision: what capable proposes in `initialize`.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The newest modern revision: what capable sends in `server/discover`.
    pub const LATEST_MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The revision's date string, exactly as it travels on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Which era the revision belongs to.
    pub fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// The revisions of one era, oldest first.
    pub fn of_era(era: Era) -> impl Iterator<Item = ProtocolVersion> {
        Self::ALL.into_iter().filter(move |v| v.era() == era)
    }

    /// Whether servers may send `elicitation/create` (2025-06-18 and later).
    pub fn has_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Whether elicitation has separate `form` and `url` modes (2025-11-25 and later).
    pub fn has_elicitation_modes(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// Whether `completion/complete` may carry the other arguments already given
    /// (`context.arguments`, 2025-06-18 and later).
    pub fn has_completion_context(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Whether `ServerCapabilities.completions` exists. In 2024-11-05 the
    /// `completion/complete` method exists but no flag announces it.
    pub fn has_completions_flag(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Whether a peer may send a JSON-RPC batch, which the receiver must accept
    /// (2025-03-26 only: later revisions removed batching).
    pub fn has_batches(self) -> bool {
        self == ProtocolVersion::V2025_03_26
    }

    /// Whether tasks are part of the core protocol (2025-11-25 only: 2026-07-28 moved
    /// them to the `io.modelcontextprotocol/tasks` extension).
    pub fn has_core_tasks(self) -> bool {
        self == ProtocolVersion::V2025_11_25
    }

    /// Whether HTTP requests after initialization carry `MCP-Protocol-Version`.
    pub fn has_protocol_version_header(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version string that is not one of the revisions capable speaks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol version {0:?}")]
pub struct UnknownVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl serde::Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Lists versions as `"a, b, c"` for error messages.
pub fn list(versions: &[ProtocolVersion]) -> String {
    versions
        .iter()
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_released_revision_and_nothing_else() {
        for v in ProtocolVersion::ALL {
            assert_eq!(v.as_str().parse::<ProtocolVersion>().unwrap(), v);
        }
        assert!("2025-11-24".parse::<ProtocolVersion>().is_err());
        assert!("".parse::<ProtocolVersion>().is_err());
    }

    #[test]
    fn eras_split_at_2026() {
        assert_eq!(
            ProtocolVersion::of_era(Era::Legacy).count(),
            4,
            "four legacy revisions"
        );
        assert_eq!(ProtocolVersion::LATEST_MODERN.era(), Era::Modern);
        assert_eq!(ProtocolVersion::LATEST_LEGACY.era(), Era::Legacy);
    }

    #[test]
    fn features_follow_the_revision() {
        assert!(!ProtocolVersion::V2025_03_26.has_elicitation());
        assert!(ProtocolVersion::V2025_06_18.has_elicitation());
        assert!(!ProtocolVersion::V2024_11_05.has_completions_flag());
        assert!(ProtocolVersion::V2025_03_26.has_completions_flag());
    }
}
