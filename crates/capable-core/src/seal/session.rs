//! What a legacy session's seal holds: everything a replica needs to continue a session
//! another replica began, so the `Mcp-Session-Id` itself carries it and no store does.
//!
//! The state is encoded as JSON with one-letter field names (compact, and readable by
//! any later version that adds fields), then sealed as [`SealKind::Session`]. A typical
//! session — a caller with issuer, subject and client id, the negotiated version, the
//! host's capabilities and client info, a log level and two upstream HTTP sessions
//! with what their handshakes settled — seals to under 1,536 characters; [`SessionSeal::seal`] refuses state that would pass
//! [`MAX_SESSION_SEAL_LEN`], so the header stays well under what servers and proxies
//! accept.
//!
//! ```
//! use capable_core::internal::seal::{KeyRing, SealKey, SessionSeal};
//! let ring = KeyRing::new(SealKey::from_bytes(&[9; 32]), vec![]);
//! let state = SessionSeal { version: "2025-06-18".into(), expires_at: 2_000, ..SessionSeal::default() };
//! let id = state.seal(&ring).unwrap();
//! assert_eq!(SessionSeal::open(&ring, &id, 1_000).unwrap(), state);
//! assert!(SessionSeal::open(&ring, &id, 2_000).is_err()); // expired
//! ```

use super::{open, seal, KeyRing, SealError, SealKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The longest sealed session id [`SessionSeal::seal`] makes, in characters: the most
/// [`open`] reads, and a quarter of the 16 KiB a load balancer such as HAProxy holds a
/// request's head in by default (`tune.bufsize`, less `tune.maxrewrite`).
pub const MAX_SESSION_SEAL_LEN: usize = super::MAX_SEALED_LEN;

/// Who opened the session, as the gateway's inbound authentication established it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    /// The token's issuer (`iss`).
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// The token's subject (`sub`).
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// The OAuth client the token was issued to.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// A legacy session's state, as sealed into its `Mcp-Session-Id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSeal {
    /// The caller the session belongs to; a request from anyone else is refused.
    #[serde(rename = "w", default)]
    pub caller: Caller,
    /// The protocol version negotiated with the host.
    #[serde(rename = "v")]
    pub version: String,
    /// The capabilities the host declared in `initialize`.
    #[serde(rename = "c", default, skip_serializing_if = "Value::is_null")]
    pub capabilities: Value,
    /// The host's `clientInfo`.
    #[serde(rename = "n", default, skip_serializing_if = "Value::is_null")]
    pub client_info: Value,
    /// The level the host set with `logging/setLevel`, if it did.
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// Per upstream HTTP server (by name), what the gateway needs to re-attach to the
    /// session that server gave it: its `Mcp-Session-Id` and what the handshake settled
    /// (the client's `Resumption`, as JSON), so that a replica continuing the session
    /// goes on in the server's session rather than opening another.
    #[serde(rename = "u", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub upstream: BTreeMap<String, Value>,
    /// When the session ends, in seconds since the Unix epoch.
    #[serde(rename = "e")]
    pub expires_at: u64,
}

/// Why a sealed session id was refused or could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionSealError {
    /// The seal itself was refused (or could not be made).
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The seal opened, but what it holds is not a session's state (a bug or a format
    /// this version does not read).
    #[error("the sealed session does not decode")]
    Decode(#[source] serde_json::Error),
    /// The session's time is over.
    #[error("the session expired")]
    Expired,
    /// The state seals to more than [`MAX_SESSION_SEAL_LEN`] characters.
    #[error("the session seals to {0} characters, more than {MAX_SESSION_SEAL_LEN}")]
    TooLarge(usize),
}

impl SessionSeal {
    /// Seals this state under the ring's current key, for a `Mcp-Session-Id`.
    pub fn seal(&self, ring: &KeyRing) -> Result<String, SessionSealError> {
        let plaintext = serde_json::to_vec(self).map_err(SessionSealError::Decode)?;
        let sealed = seal(ring, SealKind::Session, &plaintext).map_err(|e| match e {
            // Past what any seal holds: said as the length it would have had.
            SealError::TooLarge(n) => SessionSealError::TooLarge(62 + n.div_ceil(3) * 4),
            e => e.into(),
        })?;
        if sealed.len() > MAX_SESSION_SEAL_LEN {
            return Err(SessionSealError::TooLarge(sealed.len()));
        }
        Ok(sealed)
    }

    /// Opens a sealed session id; `now` is seconds since the Unix epoch, and a session
    /// whose `expires_at` is not after it is refused as expired.
    pub fn open(ring: &KeyRing, sealed: &str, now: u64) -> Result<SessionSeal, SessionSealError> {
        if sealed.len() > MAX_SESSION_SEAL_LEN {
            return Err(SealError::Malformed.into());
        }
        let plaintext = open(ring, SealKind::Session, sealed)?;
        let state: SessionSeal =
            serde_json::from_slice(&plaintext).map_err(SessionSealError::Decode)?;
        if state.expires_at <= now {
            return Err(SessionSealError::Expired);
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::SealKey;
    use serde_json::json;

    /// A session as a real host opens it: what the size figure in the docs is about.
    pub(crate) fn typical() -> SessionSeal {
        SessionSeal {
            caller: Caller {
                iss: Some("https://login.example.com/realms/engineering".into()),
                sub: Some("f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d".into()),
                client_id: Some("claude-desktop".into()),
            },
            version: "2025-11-25".into(),
            capabilities: json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}),
            client_info: json!({"name": "claude-ai", "title": "Claude", "version": "0.1.0"}),
            log_level: Some("info".into()),
            upstream: BTreeMap::from([
                (
                    "github".into(),
                    json!({"s": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "v": "2025-06-18",
                        "i": {"name": "github-mcp", "version": "1.2.0"},
                        "c": {"tools": {"listChanged": true}, "resources": {"subscribe": true}}}),
                ),
                (
                    "jira".into(),
                    json!({"s": "a1b2c3d4e5f60718293a4b5c6d7e8f90", "v": "2025-11-25",
                        "i": {"name": "jira", "version": "0.9"}, "c": {"tools": {}}}),
                ),
            ]),
            expires_at: 1_800_000_000,
        }
    }

    #[test]
    fn a_typical_session_round_trips_in_under_a_kilobyte_and_a_half() {
        let ring = KeyRing::new(SealKey::from_bytes(&[3; 32]), vec![]);
        let state = typical();
        let id = state.seal(&ring).unwrap();
        assert!(id.len() <= 1536, "{} characters", id.len());
        assert!(!id.contains("claude") && !id.contains("github"));
        assert_eq!(SessionSeal::open(&ring, &id, 1_700_000_000).unwrap(), state);
    }

    #[test]
    fn an_expired_or_foreign_session_is_refused() {
        let ring = KeyRing::new(SealKey::from_bytes(&[3; 32]), vec![]);
        let id = typical().seal(&ring).unwrap();
        assert!(matches!(
            SessionSeal::open(&ring, &id, 1_800_000_000),
            Err(SessionSealError::Expired)
        ));
        let other = KeyRing::new(SealKey::from_bytes(&[4; 32]), vec![]);
        assert!(matches!(
            SessionSeal::open(&other, &id, 0),
            Err(SessionSealError::Seal(SealError::UnknownKey(_)))
        ));
        let task = crate::seal::seal(&ring, SealKind::Task, b"{}").unwrap();
        assert!(matches!(
            SessionSeal::open(&ring, &task, 0),
            Err(SessionSealError::Seal(SealError::WrongKind))
        ));
    }

    #[test]
    fn state_too_large_for_a_header_is_refused_when_sealing() {
        let ring = KeyRing::new(SealKey::from_bytes(&[3; 32]), vec![]);
        let mut state = typical();
        state.upstream = (0..80)
            .map(|i| {
                (
                    format!("server-{i}"),
                    json!({"s": "x".repeat(36), "v": "2025-06-18"}),
                )
            })
            .collect();
        assert!(matches!(
            state.seal(&ring),
            Err(SessionSealError::TooLarge(_))
        ));
    }
}
