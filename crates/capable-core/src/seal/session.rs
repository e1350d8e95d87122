//! What a legacy session's seal holds: everything a replica needs to continue a session
//! another replica began, so the `Mcp-Session-Id` itself carries it and no store does.
//!
//! The state is a compact binary encoding (postcard: the fields in order, no names,
//! lengths as varints) after a format byte ([`FORMAT`]), then sealed as
//! [`SealKind::Session`]. Opening it builds no JSON values: every string is
//! [`Text`] borrowed from the opened buffer, and the nested documents (the host's
//! `capabilities` and `clientInfo`, each server's `serverInfo` and `capabilities`) stay
//! the JSON text they were sealed as, parsed only where they are used — once, by the
//! replica that restores the session. A seal of another format (the JSON of format 1,
//! or one a later version makes) is refused ([`SessionSealError::Format`]): a gateway
//! answers it `404` and the host initializes again.
//!
//! A typical session — a caller with issuer, subject and client id, the negotiated
//! version, the host's capabilities and client info, a log level and two upstream HTTP
//! sessions with what their handshakes settled — seals to under 1,024 characters;
//! [`SessionSeal::seal`] refuses state that would pass [`MAX_SESSION_SEAL_LEN`], so the
//! header stays well under what servers and proxies accept.
//!
//! ```
//! use capable_core::internal::seal::{KeyRing, SealKey, SessionSeal};
//! let ring = KeyRing::new(SealKey::from_bytes(&[9; 32]), vec![]);
//! let state = SessionSeal { version: "2025-06-18".into(), expires_at: 2_000, ..SessionSeal::default() };
//! let id = state.seal(&ring).unwrap();
//! let mut buffer = Vec::new(); // reusable from one open to the next
//! assert_eq!(SessionSeal::open(&ring, &id, 1_000, &mut buffer).unwrap(), state);
//! assert!(SessionSeal::open(&ring, &id, 2_000, &mut buffer).is_err()); // expired
//! ```

use super::{open_into, seal, KeyRing, SealError, SealKind, Text};
use serde::{Deserialize, Serialize};

/// The longest sealed session id [`SessionSeal::seal`] makes, in characters: the most
/// [`open`](SessionSeal::open) reads, and a quarter of the 16 KiB a load balancer such
/// as HAProxy holds a request's head in by default (`tune.bufsize`, less
/// `tune.maxrewrite`).
pub const MAX_SESSION_SEAL_LEN: usize = super::MAX_SEALED_LEN;

/// The state's format, the plaintext's first byte: 2, the binary state (1 was JSON,
/// whose plaintext began with `{`).
pub const FORMAT: u8 = 2;

/// Who opened the session (or started the task), as the gateway's inbound
/// authentication established it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller<'a> {
    /// The token's issuer (`iss`).
    #[serde(borrow)]
    pub iss: Option<Text<'a>>,
    /// The token's subject (`sub`).
    #[serde(borrow)]
    pub sub: Option<Text<'a>>,
    /// The OAuth client the token was issued to.
    #[serde(borrow)]
    pub client_id: Option<Text<'a>>,
}

impl Caller<'_> {
    /// The same caller, owned: to keep past what it was borrowed from.
    pub fn into_owned(self) -> Caller<'static> {
        Caller {
            iss: self.iss.map(Text::into_owned),
            sub: self.sub.map(Text::into_owned),
            client_id: self.client_id.map(Text::into_owned),
        }
    }

    /// Whether `other` is the same identity: issuer and subject (the client a token was
    /// issued to may differ between a person's hosts).
    pub fn same(&self, other: &Caller<'_>) -> bool {
        self.iss == other.iss && self.sub == other.sub
    }
}

/// An upstream HTTP server's session, sealed so that a replica continuing the host's
/// session re-attaches to it: the server's `Mcp-Session-Id` and what the handshake
/// settled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upstream<'a> {
    /// The server's name in the gateway.
    #[serde(borrow)]
    pub server: Text<'a>,
    /// The server's `Mcp-Session-Id`.
    #[serde(borrow)]
    pub session_id: Text<'a>,
    /// The version negotiated with the server.
    #[serde(borrow)]
    pub version: Text<'a>,
    /// The server's `serverInfo`, as JSON text.
    #[serde(borrow)]
    pub server_info: Option<Text<'a>>,
    /// The server's `capabilities`, as JSON text.
    #[serde(borrow)]
    pub capabilities: Option<Text<'a>>,
}

/// A legacy session's state, as sealed into its `Mcp-Session-Id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSeal<'a> {
    /// When the session ends, in seconds since the Unix epoch.
    pub expires_at: u64,
    /// The caller the session belongs to; a request from anyone else is refused.
    #[serde(borrow)]
    pub caller: Caller<'a>,
    /// The protocol version negotiated with the host.
    #[serde(borrow)]
    pub version: Text<'a>,
    /// The capabilities the host declared in `initialize`, as JSON text.
    #[serde(borrow)]
    pub capabilities: Option<Text<'a>>,
    /// The host's `clientInfo`, as JSON text.
    #[serde(borrow)]
    pub client_info: Option<Text<'a>>,
    /// The level the host set with `logging/setLevel`, if it did.
    #[serde(borrow)]
    pub log_level: Option<Text<'a>>,
    /// Per upstream HTTP server, the session it gave the gateway, so that a replica
    /// continuing the session goes on in the server's session rather than opening
    /// another.
    #[serde(borrow)]
    pub upstream: Vec<Upstream<'a>>,
}

/// Why a sealed session id was refused or could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionSealError {
    /// The seal itself was refused (or could not be made).
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The seal opened, but holds a state of a format this version does not read (its
    /// first byte): format 1's JSON, or a later one.
    #[error("the sealed session is of format {0}, not {FORMAT}")]
    Format(u8),
    /// The seal opened, but what it holds does not decode as a session's state (or it
    /// could not be encoded).
    #[error("the sealed session does not decode")]
    Decode(#[source] postcard::Error),
    /// The session's time is over.
    #[error("the session expired")]
    Expired,
    /// The state seals to more than [`MAX_SESSION_SEAL_LEN`] characters.
    #[error("the session seals to {0} characters, more than {MAX_SESSION_SEAL_LEN}")]
    TooLarge(usize),
}

impl SessionSeal<'_> {
    /// Seals this state under the ring's current key, for a `Mcp-Session-Id`.
    pub fn seal(&self, ring: &KeyRing) -> Result<String, SessionSealError> {
        let plaintext =
            postcard::to_extend(self, vec![FORMAT]).map_err(SessionSealError::Decode)?;
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

    /// Opens a sealed session id, decrypting in `buffer` (reusable), the state's strings
    /// borrowed from it; `now` is seconds since the Unix epoch, and a session whose
    /// `expires_at` is not after it is refused as expired.
    pub fn open<'b>(
        ring: &KeyRing,
        sealed: &str,
        now: u64,
        buffer: &'b mut Vec<u8>,
    ) -> Result<SessionSeal<'b>, SessionSealError> {
        if sealed.len() > MAX_SESSION_SEAL_LEN {
            return Err(SealError::Malformed.into());
        }
        let plaintext = open_into(ring, SealKind::Session, sealed, buffer)?;
        let (&format, state) = plaintext.split_first().ok_or(SessionSealError::Format(0))?;
        if format != FORMAT {
            return Err(SessionSealError::Format(format));
        }
        let (state, rest): (SessionSeal<'b>, _) =
            postcard::take_from_bytes(state).map_err(SessionSealError::Decode)?;
        if !rest.is_empty() {
            return Err(SessionSealError::Decode(
                postcard::Error::DeserializeBadEncoding,
            ));
        }
        if state.expires_at <= now {
            return Err(SessionSealError::Expired);
        }
        Ok(state)
    }
}

impl SessionSeal<'static> {
    /// A session as a real host opens it, expiring at `expires_at`: a signed-in caller,
    /// the capabilities and `clientInfo` a desktop host sends, two HTTP servers' sessions
    /// with what their handshakes settled. What the size and cost figures of the docs
    /// are about: the tests, the `seal_open` example and the gateway's bench seal it.
    pub fn typical(expires_at: u64) -> SessionSeal<'static> {
        let upstream = |server: &'static str, id, version, info, caps| Upstream {
            server: server.into(),
            session_id: Text::from(id),
            version: Text::from(version),
            server_info: Some(Text::from(info)),
            capabilities: Some(Text::from(caps)),
        };
        SessionSeal {
        caller: Caller {
            iss: Some("https://login.example.com/realms/engineering".into()),
            sub: Some("f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d".into()),
            client_id: Some("claude-desktop".into()),
        },
        version: "2025-11-25".into(),
        capabilities: Some(
            r#"{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}"#
                .into(),
        ),
        client_info: Some(r#"{"name":"claude-ai","title":"Claude","version":"0.1.0"}"#.into()),
        log_level: Some("info".into()),
        upstream: vec![
            upstream(
                "github",
                "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                "2025-06-18",
                r#"{"name":"github-mcp","version":"1.2.0"}"#,
                r#"{"tools":{"listChanged":true},"resources":{"subscribe":true}}"#,
            ),
            upstream(
                "jira",
                "a1b2c3d4e5f60718293a4b5c6d7e8f90",
                "2025-11-25",
                r#"{"name":"jira","version":"0.9"}"#,
                r#"{"tools":{}}"#,
            ),
        ],
        expires_at,
    }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::SealKey;

    #[test]
    fn a_typical_session_round_trips_in_under_a_kilobyte() {
        let ring = KeyRing::new(SealKey::from_bytes(&[3; 32]), vec![]);
        let state = SessionSeal::typical(1_800_000_000);
        let id = state.seal(&ring).unwrap();
        assert!(id.len() <= 1024, "{} characters", id.len());
        assert!(!id.contains("claude") && !id.contains("github"));
        let mut buffer = Vec::new();
        let opened = SessionSeal::open(&ring, &id, 1_700_000_000, &mut buffer).unwrap();
        assert_eq!(opened, state);
        // Nothing copied: the strings are the opened buffer's.
        assert!(matches!(opened.version.0, std::borrow::Cow::Borrowed(_)));
        assert!(matches!(
            opened.upstream[1].capabilities.as_ref().unwrap().0,
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn an_expired_or_foreign_session_is_refused() {
        let ring = KeyRing::new(SealKey::from_bytes(&[3; 32]), vec![]);
        let id = SessionSeal::typical(1_800_000_000).seal(&ring).unwrap();
        let mut buffer = Vec::new();
        assert!(matches!(
            SessionSeal::open(&ring, &id, 1_800_000_000, &mut buffer),
            Err(SessionSealError::Expired)
        ));
        let other = KeyRing::new(SealKey::from_bytes(&[4; 32]), vec![]);
        assert!(matches!(
            SessionSeal::open(&other, &id, 0, &mut buffer),
            Err(SessionSealError::Seal(SealError::UnknownKey(_)))
        ));
        let task = crate::seal::seal(&ring, SealKind::Task, b"{}").unwrap();
        assert!(matches!(
            SessionSeal::open(&ring, &task, 0, &mut buffer),
            Err(SessionSealError::Seal(SealError::WrongKind))
        ));
    }

    #[test]
    fn a_seal_of_the_json_format_or_of_garbage_is_refused_cleanly() {
        let ring = KeyRing::new(SealKey::from_bytes(&[3; 32]), vec![]);
        let mut buffer = Vec::new();
        // What format 1 sealed: JSON with one-letter names.
        let v1 = br#"{"w":{},"v":"2025-06-18","e":1800000000}"#;
        let id = crate::seal::seal(&ring, SealKind::Session, v1).unwrap();
        assert!(matches!(
            SessionSeal::open(&ring, &id, 0, &mut buffer),
            Err(SessionSealError::Format(b'{'))
        ));
        for plaintext in [
            &b""[..],
            &[FORMAT],
            &[FORMAT, 0xff, 0xff, 0xff],
            &[FORMAT, 1, 0, 0, 9],
        ] {
            let id = crate::seal::seal(&ring, SealKind::Session, plaintext).unwrap();
            assert!(SessionSeal::open(&ring, &id, 0, &mut buffer).is_err());
        }
        // A whole state with a byte more after it.
        let mut plaintext =
            postcard::to_extend(&SessionSeal::typical(1_800_000_000), vec![FORMAT]).unwrap();
        plaintext.push(0);
        let id = crate::seal::seal(&ring, SealKind::Session, &plaintext).unwrap();
        assert!(matches!(
            SessionSeal::open(&ring, &id, 0, &mut buffer),
            Err(SessionSealError::Decode(_))
        ));
    }

    #[test]
    fn state_too_large_for_a_header_is_refused_when_sealing() {
        let ring = KeyRing::new(SealKey::from_bytes(&[3; 32]), vec![]);
        let mut state = SessionSeal::typical(1_800_000_000);
        state.upstream = (0..80)
            .map(|i| Upstream {
                server: Text::from(format!("server-{i}")),
                session_id: Text::from("x".repeat(36)),
                version: "2025-06-18".into(),
                ..Upstream::default()
            })
            .collect();
        assert!(matches!(
            state.seal(&ring),
            Err(SessionSealError::TooLarge(_))
        ));
    }
}
