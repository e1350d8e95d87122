//! What a task id the gateway hands out holds, sealed: which server runs the task, the
//! server's own task id, who started it and until when it may be asked about — so that
//! `tasks/get`, `tasks/result` and `tasks/cancel` on any replica reach the right server
//! with the server's id, and nobody else's task id opens for a caller.
//!
//! The state is encoded as the session's is (a format byte, then postcard) and sealed as
//! [`SealKind::Task`]: a session id never opens as a task id, nor a task id as a
//! session. The format byte also says whose the task is ([`TaskSeal::own`]): `2` (the
//! session's [`FORMAT`], the first task ids') a server's task, `3` (`OWN_FORMAT`) a
//! task of the gateway's own (one it made and answers for itself) — so a replica that
//! predates own tasks refuses such an id as an unknown task rather than ask a server
//! about it, and a server's task id keeps the bytes it always had. [`TaskSeal::open`] refuses a task id that is forged or changed, sealed under
//! a key the ring no longer holds, expired, or **another caller's** (issuer and
//! subject): a gateway answers every one as the spec answers an unknown task
//! (`-32602`), nothing sent to the server. At most [`MAX_TASK_SEAL_LEN`] characters.
//! Sealing is deterministic ([`seal_stable`]): one task, one id, on every replica — a
//! host finds the id it was given in every answer about its task.
//!
//! ```
//! use capable_core::internal::seal::{Caller, KeyRing, SealKey, TaskSeal, TaskSealError};
//! let ring = KeyRing::new(SealKey::from_bytes(&[9; 32]), vec![]);
//! let alice = Caller { sub: Some("alice".into()), ..Caller::default() };
//! let task = TaskSeal {
//!     expires_at: 2_000,
//!     caller: alice.clone(),
//!     server: "jira".into(),
//!     task_id: "786512e2-9e0d-44bd-8f29-789f320fe840".into(),
//!     own: false,
//! };
//! let id = task.seal(&ring).unwrap();
//! let mut buffer = Vec::new();
//! assert_eq!(TaskSeal::open(&ring, &id, &alice, 1_000, &mut buffer).unwrap(), task);
//! let bob = Caller { sub: Some("bob".into()), ..Caller::default() };
//! assert!(matches!(
//!     TaskSeal::open(&ring, &id, &bob, 1_000, &mut buffer),
//!     Err(TaskSealError::OtherCaller)
//! ));
//! ```

use super::bound::{Bound, Refusal, Rules};
use super::session::FORMAT;
use super::{Caller, KeyRing, SealError, SealKind, Text};
use serde::{Deserialize, Serialize};

/// The longest sealed task id [`TaskSeal::seal`] makes and [`TaskSeal::open`] reads, in
/// characters: room for a caller, a server's name and a server's task id of a few
/// hundred characters each.
pub const MAX_TASK_SEAL_LEN: usize = 1024;

/// The format byte of a sealed task of the gateway's own ([`TaskSeal::own`]); a
/// server's task is of the session's [`FORMAT`].
pub const OWN_FORMAT: u8 = FORMAT + 1;

/// A task at a server behind the gateway, as sealed into the task id the host sees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSeal<'a> {
    /// Until when the task id opens, in seconds since the Unix epoch.
    pub expires_at: u64,
    /// Who started the task; the task id opens for nobody else.
    #[serde(borrow)]
    pub caller: Caller<'a>,
    /// The server (its name in the gateway) that runs the task.
    #[serde(borrow)]
    pub server: Text<'a>,
    /// The server's own task id (or, [`own`](Self::own), the gateway's).
    #[serde(borrow)]
    pub task_id: Text<'a>,
    /// The task is the gateway's own, not the server's: sealed as the format byte
    /// (`OWN_FORMAT`), not among the fields.
    #[serde(skip)]
    pub own: bool,
}

/// Why a sealed task id was refused or could not be made; a gateway answers each refusal
/// as an unknown task.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskSealError {
    /// The seal itself was refused (forged, changed, a retired key's, not a task id).
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The seal opened, but holds a state of another format (its first byte).
    #[error("the sealed task is of format {0}, not {FORMAT} or {OWN_FORMAT}")]
    Format(u8),
    /// The seal opened, but what it holds does not decode (or could not be encoded).
    #[error("the sealed task does not decode")]
    Decode(#[source] postcard::Error),
    /// The task id's time is over.
    #[error("the task id expired")]
    Expired,
    /// The task id is another caller's.
    #[error("the task id is another caller's")]
    OtherCaller,
    /// The task seals to more than [`MAX_TASK_SEAL_LEN`] characters.
    #[error("the task seals to {0} characters, more than {MAX_TASK_SEAL_LEN}")]
    TooLarge(usize),
}

/// How a task id is sealed: as [`SealKind::Task`], of a server's or the gateway's own
/// format, within [`MAX_TASK_SEAL_LEN`], one task one id ([`seal_stable`](super::seal_stable)).
const RULES: Rules = Rules {
    kind: SealKind::Task,
    formats: &[FORMAT, OWN_FORMAT],
    max_len: MAX_TASK_SEAL_LEN,
    stable: true,
};

impl Bound for TaskSeal<'_> {
    fn expires_at(&self) -> u64 {
        self.expires_at
    }

    fn caller(&self) -> &Caller<'_> {
        &self.caller
    }
}

impl From<Refusal> for TaskSealError {
    fn from(refusal: Refusal) -> TaskSealError {
        match refusal {
            Refusal::Seal(e) => TaskSealError::Seal(e),
            Refusal::Format(f) => TaskSealError::Format(f),
            Refusal::Decode(e) => TaskSealError::Decode(e),
            Refusal::Expired => TaskSealError::Expired,
            Refusal::OtherCaller => TaskSealError::OtherCaller,
            Refusal::TooLarge(n) => TaskSealError::TooLarge(n),
        }
    }
}

impl TaskSeal<'_> {
    /// Seals this task under the ring's current key, for the task id a host sees: the
    /// same id each time (on every replica holding the key), so that every answer about
    /// a task names it as the host knows it ([`seal_stable`](super::seal_stable)).
    pub fn seal(&self, ring: &KeyRing) -> Result<String, TaskSealError> {
        let format = if self.own { OWN_FORMAT } else { FORMAT };
        Ok(RULES.seal(ring, self, format)?)
    }

    /// Opens a sealed task id presented by `caller` at `now` (seconds since the Unix
    /// epoch), decrypting in `buffer`; refused unless it opens, has not expired and is
    /// `caller`'s.
    pub fn open<'b>(
        ring: &KeyRing,
        sealed: &str,
        caller: &Caller<'_>,
        now: u64,
        buffer: &'b mut Vec<u8>,
    ) -> Result<TaskSeal<'b>, TaskSealError> {
        let (format, mut task): (u8, TaskSeal<'b>) =
            RULES.open(ring, sealed, caller, now, buffer)?;
        task.own = format == OWN_FORMAT;
        Ok(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::{SealKey, SessionSeal};

    fn caller(sub: &str) -> Caller<'static> {
        Caller {
            iss: Some("https://login.example.com".into()),
            sub: Some(Text::from(sub.to_owned())),
            client_id: Some("host".into()),
        }
    }

    fn task() -> TaskSeal<'static> {
        TaskSeal {
            expires_at: 1_800_000_000,
            caller: caller("alice"),
            server: "jira".into(),
            task_id: "786512e2-9e0d-44bd-8f29-789f320fe840".into(),
            own: false,
        }
    }

    #[test]
    fn a_task_of_the_gateways_own_says_so_and_is_another_id_than_a_servers() {
        let ring = KeyRing::new(SealKey::from_bytes(&[6; 32]), vec![]);
        let mut own = task();
        own.own = true;
        let id = own.seal(&ring).unwrap();
        assert_ne!(id, task().seal(&ring).unwrap(), "the kind is sealed");
        let mut buffer = Vec::new();
        let opened = TaskSeal::open(&ring, &id, &caller("alice"), 0, &mut buffer).unwrap();
        assert!(opened.own);
        assert_eq!(opened, own);
        let server = task().seal(&ring).unwrap();
        let opened = TaskSeal::open(&ring, &server, &caller("alice"), 0, &mut buffer).unwrap();
        assert!(!opened.own);
        // Still bound to its caller.
        assert!(matches!(
            TaskSeal::open(&ring, &id, &caller("bob"), 0, &mut buffer),
            Err(TaskSealError::OtherCaller)
        ));
    }

    #[test]
    fn a_task_id_opens_for_its_caller_until_it_expires_and_says_nothing() {
        let ring = KeyRing::new(SealKey::from_bytes(&[6; 32]), vec![]);
        let id = task().seal(&ring).unwrap();
        assert!(id.len() < 256, "{} characters", id.len());
        // One task, one id: sealed again (here, or by another replica), the same.
        assert_eq!(task().seal(&ring).unwrap(), id);
        let mut later = task();
        later.expires_at += 1;
        assert_ne!(later.seal(&ring).unwrap(), id);
        assert!(!id.contains("jira") && !id.contains("786512e2"));
        let mut buffer = Vec::new();
        let now = 1_700_000_000;
        assert_eq!(
            TaskSeal::open(&ring, &id, &caller("alice"), now, &mut buffer).unwrap(),
            task()
        );
        // Another client of the same person: the same caller.
        let mut other_host = caller("alice");
        other_host.client_id = Some("other".into());
        assert!(TaskSeal::open(&ring, &id, &other_host, now, &mut buffer).is_ok());
        assert!(matches!(
            TaskSeal::open(&ring, &id, &caller("bob"), now, &mut buffer),
            Err(TaskSealError::OtherCaller)
        ));
        assert!(matches!(
            TaskSeal::open(&ring, &id, &Caller::default(), now, &mut buffer),
            Err(TaskSealError::OtherCaller)
        ));
        assert!(matches!(
            TaskSeal::open(&ring, &id, &caller("alice"), 1_800_000_000, &mut buffer),
            Err(TaskSealError::Expired)
        ));
    }

    #[test]
    fn a_forged_tampered_foreign_or_session_seal_is_refused() {
        let ring = KeyRing::new(SealKey::from_bytes(&[6; 32]), vec![]);
        let alice = caller("alice");
        let mut buffer = Vec::new();
        let id = task().seal(&ring).unwrap();
        // One character changed (in the middle: every bit of it counts).
        let tampered = crate::seal::tampered(&id);
        let other = KeyRing::new(SealKey::from_bytes(&[7; 32]), vec![]);
        let session = SessionSeal {
            expires_at: u64::MAX,
            ..SessionSeal::default()
        }
        .seal(&ring)
        .unwrap();
        for (presented, ring) in [
            ("786512e2-9e0d-44bd-8f29-789f320fe840", &ring),
            (tampered.as_str(), &ring),
            (id.as_str(), &other),
            (session.as_str(), &ring),
            (&*"A".repeat(MAX_TASK_SEAL_LEN + 1), &ring),
        ] {
            assert!(matches!(
                TaskSeal::open(ring, presented, &alice, 0, &mut buffer),
                Err(TaskSealError::Seal(_))
            ));
        }
    }

    #[test]
    fn a_task_too_large_to_hand_out_is_refused_when_sealing() {
        let ring = KeyRing::new(SealKey::from_bytes(&[6; 32]), vec![]);
        let mut large = task();
        large.task_id = Text::from("x".repeat(MAX_TASK_SEAL_LEN));
        assert!(matches!(large.seal(&ring), Err(TaskSealError::TooLarge(_))));
    }
}
