//! What an input round's `requestState` holds when the gateway seals it: what any
//! replica needs to carry the host's retry on — whose round it is, which request it was
//! given for, what the server asked — and nothing readable.
//!
//! A 2026-07-28 host answers a round by retrying its request with `inputResponses` and
//! the `requestState` echoed. The replica that gave the round holds the exchange the
//! server's questions wait in, and finds it by [`RoundSeal::state`] (its own name for
//! the round). Any other replica holding the key carries the retry on as the 2026-07-28
//! era itself does: it sends the request again and answers the server's questions
//! that match [`RoundSeal::questions`] from the retry's `inputResponses` (the core's
//! `bridge` decides; see `docs/bridge.md`, "Scaling the gateway").
//!
//! Encoded as the session's state is (a format byte, then postcard) and sealed as
//! [`SealKind::RequestState`]: a session id or a task id never opens as a round's state.
//! [`RoundSeal::open`] refuses a state that is forged or changed, sealed under a key
//! the ring no longer holds, expired, or **another caller's** (issuer and subject); a
//! gateway answers each with `-32602`, nothing sent to the server. The digests are
//! SHA-256 (cut to 16 bytes) of what the host and the server sent: they let a replica
//! check what it is sent, and say nothing of it. A later round of the same request
//! carries the host's answers to the rounds before it ([`RoundSeal::answered`]), which
//! the host gave and which only a replica holding the key can read: a replica that
//! sends the request again answers the server's earlier questions with them.
//!
//! ```
//! use capable_core::internal::seal::{Caller, KeyRing, RoundSeal, SealKey, SealedQuestion};
//! let ring = KeyRing::new(SealKey::from_bytes(&[9; 32]), vec![]);
//! let round = RoundSeal {
//!     expires_at: 2_000,
//!     caller: Caller::default(),
//!     state: "capable-relay-abc-def".into(),
//!     server: None,
//!     request: [1; 16],
//!     questions: vec![SealedQuestion { key: "elicitation-1".into(), asked: [2; 16] }],
//!     answered: vec![],
//! };
//! let state = round.seal(&ring).unwrap();
//! assert!(!state.contains("elicitation"));
//! let mut buffer = Vec::new();
//! assert_eq!(RoundSeal::open(&ring, &state, &Caller::default(), 1_000, &mut buffer).unwrap(), round);
//! assert!(RoundSeal::open(&ring, &state, &Caller::default(), 2_000, &mut buffer).is_err());
//! ```

use super::bound::{Bound, Refusal, Rules};
use super::session::FORMAT;
use super::{Caller, KeyRing, SealError, SealKind, Text};
use serde::{Deserialize, Serialize};

/// The longest sealed `requestState` [`RoundSeal::seal`] makes and [`RoundSeal::open`]
/// reads, in characters: room for a caller, a round of a few dozen questions, and the
/// host's answers of the rounds before it when they are short.
pub const MAX_ROUND_SEAL_LEN: usize = super::MAX_SEALED_LEN;

/// How many bytes of SHA-256 a digest keeps.
pub const DIGEST_LEN: usize = 16;

/// One question of a sealed round: its key, and a digest of what the server asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedQuestion<'a> {
    /// Its key in `inputRequests` (the host's answer comes under it).
    #[serde(borrow)]
    pub key: Text<'a>,
    /// A digest of the question: its method and params.
    pub asked: [u8; DIGEST_LEN],
}

/// The host's answer to a question of an earlier round of the same request (the server
/// asked again after it): what lets another replica answer that question too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedAnswer<'a> {
    /// The question's key in its round.
    #[serde(borrow)]
    pub key: Text<'a>,
    /// A digest of the question: its method and params.
    pub asked: [u8; DIGEST_LEN],
    /// The host's answer, as JSON text.
    #[serde(borrow)]
    pub answer: Text<'a>,
}

/// An input round the gateway handed a host, as sealed into its `requestState`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundSeal<'a> {
    /// Until when the state opens, in seconds since the Unix epoch.
    pub expires_at: u64,
    /// Whose request it was; the state opens for nobody else.
    #[serde(borrow)]
    pub caller: Caller<'a>,
    /// The round's name at the relay that gave it (which finds its exchange by it).
    #[serde(borrow)]
    pub state: Text<'a>,
    /// The server of many the request went to (`None`: the one server behind).
    #[serde(borrow)]
    pub server: Option<Text<'a>>,
    /// A digest of the request the retry must repeat: its method, and its tool, prompt
    /// or URI and arguments.
    pub request: [u8; DIGEST_LEN],
    /// The questions the round put to the host.
    #[serde(borrow)]
    pub questions: Vec<SealedQuestion<'a>>,
    /// The host's answers to the rounds of the same request before this one.
    #[serde(borrow)]
    pub answered: Vec<SealedAnswer<'a>>,
}

/// Why a sealed `requestState` was refused or could not be made; a gateway answers each
/// refusal with `-32602`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoundSealError {
    /// The seal itself was refused (forged, changed, a retired key's, another kind).
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The seal opened, but holds a state of another format (its first byte).
    #[error("the sealed round is of format {0}, not {FORMAT}")]
    Format(u8),
    /// The seal opened, but what it holds does not decode (or could not be encoded).
    #[error("the sealed round does not decode")]
    Decode(#[source] postcard::Error),
    /// The round's time is over.
    #[error("the requestState expired")]
    Expired,
    /// The round is another caller's.
    #[error("the requestState is another caller's")]
    OtherCaller,
    /// The round seals to more than [`MAX_ROUND_SEAL_LEN`] characters.
    #[error("the round seals to {0} characters, more than {MAX_ROUND_SEAL_LEN}")]
    TooLarge(usize),
}

/// How a round's `requestState` is sealed: as [`SealKind::RequestState`], of the
/// session's format, within [`MAX_ROUND_SEAL_LEN`], a fresh text each time.
const RULES: Rules = Rules {
    kind: SealKind::RequestState,
    formats: &[FORMAT],
    max_len: MAX_ROUND_SEAL_LEN,
    stable: false,
};

impl Bound for RoundSeal<'_> {
    fn expires_at(&self) -> u64 {
        self.expires_at
    }

    fn caller(&self) -> &Caller<'_> {
        &self.caller
    }
}

impl From<Refusal> for RoundSealError {
    fn from(refusal: Refusal) -> RoundSealError {
        match refusal {
            Refusal::Seal(e) => RoundSealError::Seal(e),
            Refusal::Format(f) => RoundSealError::Format(f),
            Refusal::Decode(e) => RoundSealError::Decode(e),
            Refusal::Expired => RoundSealError::Expired,
            Refusal::OtherCaller => RoundSealError::OtherCaller,
            Refusal::TooLarge(n) => RoundSealError::TooLarge(n),
        }
    }
}

impl RoundSeal<'_> {
    /// Seals this round under the ring's current key, for the `requestState` a host sees.
    pub fn seal(&self, ring: &KeyRing) -> Result<String, RoundSealError> {
        Ok(RULES.seal(ring, self, FORMAT)?)
    }

    /// Opens a sealed `requestState` presented by `caller` at `now` (seconds since the
    /// Unix epoch), decrypting in `buffer`; refused unless it opens, has not expired and
    /// is `caller`'s.
    pub fn open<'b>(
        ring: &KeyRing,
        sealed: &str,
        caller: &Caller<'_>,
        now: u64,
        buffer: &'b mut Vec<u8>,
    ) -> Result<RoundSeal<'b>, RoundSealError> {
        let (_, round) = RULES.open(ring, sealed, caller, now, buffer)?;
        Ok(round)
    }

    /// The same round, owned: to keep past the buffer it was opened in.
    pub fn into_owned(self) -> RoundSeal<'static> {
        RoundSeal {
            expires_at: self.expires_at,
            caller: self.caller.into_owned(),
            state: self.state.into_owned(),
            server: self.server.map(Text::into_owned),
            request: self.request,
            questions: self
                .questions
                .into_iter()
                .map(|q| SealedQuestion {
                    key: q.key.into_owned(),
                    asked: q.asked,
                })
                .collect(),
            answered: self
                .answered
                .into_iter()
                .map(|a| SealedAnswer {
                    key: a.key.into_owned(),
                    asked: a.asked,
                    answer: a.answer.into_owned(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::{SealKey, TaskSeal};

    fn caller(sub: &str) -> Caller<'static> {
        Caller {
            iss: Some("https://login.example.com".into()),
            sub: Some(Text::from(sub.to_owned())),
            client_id: Some("host".into()),
        }
    }

    fn round() -> RoundSeal<'static> {
        RoundSeal {
            expires_at: 1_800_000_000,
            caller: caller("alice"),
            state: "capable-relay-AAAAAAAA-BBBBBBBBBBBBBBBBBBBBBBBB".into(),
            server: Some("jira".into()),
            request: [3; DIGEST_LEN],
            questions: vec![
                SealedQuestion {
                    key: "elicitation-1".into(),
                    asked: [4; DIGEST_LEN],
                },
                SealedQuestion {
                    key: "sampling-2".into(),
                    asked: [5; DIGEST_LEN],
                },
            ],
            answered: vec![SealedAnswer {
                key: "roots-0".into(),
                asked: [6; DIGEST_LEN],
                answer: r#"{"roots":[{"uri":"file:///secret-project"}]}"#.into(),
            }],
        }
    }

    #[test]
    fn a_round_opens_for_its_caller_until_it_expires_and_says_nothing() {
        let ring = KeyRing::new(SealKey::from_bytes(&[6; 32]), vec![]);
        let state = round().seal(&ring).unwrap();
        assert!(state.len() < 500, "{} characters", state.len());
        for said in [
            "jira",
            "elicitation",
            "capable-relay",
            "alice",
            "secret-project",
        ] {
            assert!(!state.contains(said), "{said} in {state}");
        }
        let mut buffer = Vec::new();
        let now = 1_700_000_000;
        let opened = RoundSeal::open(&ring, &state, &caller("alice"), now, &mut buffer);
        assert_eq!(opened.unwrap().into_owned(), round());
        assert!(matches!(
            RoundSeal::open(&ring, &state, &caller("bob"), now, &mut buffer),
            Err(RoundSealError::OtherCaller)
        ));
        assert!(matches!(
            RoundSeal::open(&ring, &state, &Caller::default(), now, &mut buffer),
            Err(RoundSealError::OtherCaller)
        ));
        assert!(matches!(
            RoundSeal::open(&ring, &state, &caller("alice"), 1_800_000_000, &mut buffer),
            Err(RoundSealError::Expired)
        ));
    }

    #[test]
    fn a_tampered_foreign_or_task_seal_is_refused() {
        let ring = KeyRing::new(SealKey::from_bytes(&[6; 32]), vec![]);
        let alice = caller("alice");
        let mut buffer = Vec::new();
        let state = round().seal(&ring).unwrap();
        let tampered = crate::seal::tampered(&state);
        let other = KeyRing::new(SealKey::from_bytes(&[7; 32]), vec![]);
        let task = TaskSeal {
            expires_at: u64::MAX,
            caller: alice.clone(),
            ..TaskSeal::default()
        }
        .seal(&ring)
        .unwrap();
        for (presented, ring) in [
            ("confirm-1", &ring),
            (tampered.as_str(), &ring),
            (state.as_str(), &other),
            (task.as_str(), &ring),
            (&*"A".repeat(MAX_ROUND_SEAL_LEN + 1), &ring),
        ] {
            assert!(matches!(
                RoundSeal::open(ring, presented, &alice, 0, &mut buffer),
                Err(RoundSealError::Seal(_))
            ));
        }
    }

    #[test]
    fn a_round_too_large_to_hand_out_is_refused_when_sealing() {
        let ring = KeyRing::new(SealKey::from_bytes(&[6; 32]), vec![]);
        let mut large = round();
        large.state = Text::from("x".repeat(MAX_ROUND_SEAL_LEN));
        assert!(matches!(
            large.seal(&ring),
            Err(RoundSealError::TooLarge(_))
        ));
    }
}
