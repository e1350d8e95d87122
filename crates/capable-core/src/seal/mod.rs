//! Sealed state: what a gateway replica hands a host (a session id, a task id, an input
//! round's `requestState`) carrying, encrypted and authenticated, what any other replica
//! holding the same key needs to continue — no shared store.
//!
//! A seal is URL-safe base64 (no padding, so it fits an HTTP header and a JSON string
//! unescaped) of
//!
//! ```text
//! version (1) | kind (1) | key id (4) | nonce (12) | ciphertext (n) | tag (16)
//! ```
//!
//! sealed with AES-256-GCM-SIV (RFC 8452) under a random 12-byte nonce (a task id,
//! which must stay one id, under a fixed one: [`seal_stable`]). GCM-SIV resists
//! nonce reuse: two seals that drew the same nonce reveal only whether their plaintexts
//! are equal, nothing of either, so random nonces stay safe at any volume a gateway
//! seals at (and AES runs on the processor's own instructions: an open of a session
//! is a few thousand instructions). The whole header (version, kind, key id, nonce) is
//! the associated data, so a seal of one [`SealKind`] never opens as another and no
//! header byte can be changed unnoticed. 34 bytes of overhead: 46 characters plus 4/3
//! of the plaintext. Version 1 (XChaCha20-Poly1305, 24-byte nonces) is no longer read:
//! its seals are [`SealError::Malformed`], and a host whose session id was one
//! initializes again.
//!
//! Opening never panics and reads at most [`MAX_SEALED_LEN`] characters; every refusal
//! is a [`SealError`] that says why without repeating the input. A gateway answers all of
//! them the same way (a legacy session's 404 makes the host initialize again).
//!
//! ```
//! use capable_core::internal::seal::{KeyRing, SealError, SealKey, SealKind, open, seal};
//! let ring = KeyRing::new(SealKey::from_bytes(&[7; 32]), vec![]);
//! let id = seal(&ring, SealKind::Session, b"upstream=abc").unwrap();
//! assert_eq!(open(&ring, SealKind::Session, &id).unwrap(), b"upstream=abc");
//! assert_eq!(open(&ring, SealKind::Task, &id), Err(SealError::WrongKind));
//! ```

mod bound;
mod key;
mod round;
mod session;
mod task;
mod text;

pub use key::{KeyError, KeyId, KeyRing, SealKey, KEY_LEN, MAX_PREVIOUS};
pub use round::{
    RoundSeal, RoundSealError, SealedAnswer, SealedQuestion, DIGEST_LEN, MAX_ROUND_SEAL_LEN,
};
pub use session::{Caller, SessionSeal, SessionSealError, Upstream, MAX_SESSION_SEAL_LEN};
pub use task::{TaskSeal, TaskSealError, MAX_TASK_SEAL_LEN};
pub use text::Text;

use aes_gcm_siv::aead::{Aead, AeadInOut, Payload};
use aes_gcm_siv::{Nonce, Tag};
use base64_simd::URL_SAFE_NO_PAD;

/// The format's version, the seal's first byte.
pub const VERSION: u8 = 2;

/// The longest seal [`open`] reads, in characters; [`seal`] refuses a plaintext that
/// would make a longer one.
pub const MAX_SEALED_LEN: usize = 4096;

const HEADER_LEN: usize = 1 + 1 + 4 + NONCE_LEN;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// The largest plaintext [`seal`] accepts: what fits in [`MAX_SEALED_LEN`] characters.
pub const MAX_PLAINTEXT_LEN: usize = MAX_SEALED_LEN / 4 * 3 - HEADER_LEN - TAG_LEN;

/// What a seal stands for; a seal made as one kind is refused as any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SealKind {
    /// A legacy session, sealed into its `Mcp-Session-Id`.
    Session,
    /// A task the gateway handed out, sealed into its task id.
    Task,
    /// An input round's `requestState`.
    RequestState,
    /// A caller's token of a server of `user` credentials, kept in the gateway's file.
    UserToken,
}

impl SealKind {
    fn byte(self) -> u8 {
        match self {
            SealKind::Session => 1,
            SealKind::Task => 2,
            SealKind::RequestState => 3,
            SealKind::UserToken => 4,
        }
    }
}

/// Why a seal was refused, or could not be made.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SealError {
    /// Not a seal: not URL-safe base64, too short or too long, or an unknown version.
    #[error("not a sealed value")]
    Malformed,
    /// Sealed under a key this ring does not hold: another deployment's, or one retired.
    #[error("sealed under an unknown or retired key ({0})")]
    UnknownKey(KeyId),
    /// The seal was changed after it was made, or was never made with this key.
    #[error("the sealed value was tampered with")]
    Tampered,
    /// A seal of another kind (a task id offered as a session id, say).
    #[error("a sealed value of another kind")]
    WrongKind,
    /// The plaintext is larger than [`MAX_PLAINTEXT_LEN`].
    #[error("{0} bytes is too much to seal (at most {MAX_PLAINTEXT_LEN})")]
    TooLarge(usize),
    /// The system's random source failed, so no nonce could be drawn.
    #[error("no random nonce: {0}")]
    Random(String),
}

/// Seals `plaintext` as `kind` under the ring's current key: a fresh random nonce each
/// time, so two seals of the same state differ.
pub fn seal(ring: &KeyRing, kind: SealKind, plaintext: &[u8]) -> Result<String, SealError> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|e| SealError::Random(e.to_string()))?;
    seal_under(ring, kind, plaintext, nonce)
}

/// Seals `plaintext` as `kind` under the ring's current key, the same way each time:
/// one state, one seal (under one key). For a name that must not change each time it
/// is handed out (a task id, which every answer about the task repeats, on whichever
/// replica): GCM-SIV under a fixed nonce is a deterministic AEAD, which reveals only
/// whether two seals hold the same state — here, that they name the same task.
pub fn seal_stable(ring: &KeyRing, kind: SealKind, plaintext: &[u8]) -> Result<String, SealError> {
    seal_under(ring, kind, plaintext, [0; NONCE_LEN])
}

/// Seals `plaintext` as `kind` under the ring's current key and `nonce`.
fn seal_under(
    ring: &KeyRing,
    kind: SealKind,
    plaintext: &[u8],
    nonce: [u8; NONCE_LEN],
) -> Result<String, SealError> {
    if plaintext.len() > MAX_PLAINTEXT_LEN {
        return Err(SealError::TooLarge(plaintext.len()));
    }
    let key = ring.current();
    let mut header = [0u8; HEADER_LEN];
    header[0] = VERSION;
    header[1] = kind.byte();
    header[2..6].copy_from_slice(&key.id().0);
    header[6..].copy_from_slice(&nonce);
    let nonce = Nonce::try_from(&header[6..]).map_err(|_| SealError::Malformed)?;
    let body = key
        .cipher
        .encrypt(
            &nonce,
            Payload {
                msg: plaintext,
                aad: &header,
            },
        )
        .map_err(|_| SealError::TooLarge(plaintext.len()))?;
    let mut raw = Vec::with_capacity(HEADER_LEN + body.len());
    raw.extend_from_slice(&header);
    raw.extend_from_slice(&body);
    Ok(URL_SAFE_NO_PAD.encode_to_string(raw))
}

/// Opens a seal of `kind` with whichever key of the ring made it.
pub fn open(ring: &KeyRing, kind: SealKind, sealed: &str) -> Result<Vec<u8>, SealError> {
    let mut buffer = Vec::new();
    open_into(ring, kind, sealed, &mut buffer).map(<[u8]>::to_vec)
}

/// Opens a seal of `kind` as [`open`] does, decoding and decrypting in `buffer` (cleared
/// first, reusable from one open to the next): the plaintext is the slice returned, a
/// part of `buffer`, with nothing copied or allocated once `buffer` is large enough.
pub fn open_into<'b>(
    ring: &KeyRing,
    kind: SealKind,
    sealed: &str,
    buffer: &'b mut Vec<u8>,
) -> Result<&'b [u8], SealError> {
    if sealed.len() > MAX_SEALED_LEN {
        return Err(SealError::Malformed);
    }
    let len = URL_SAFE_NO_PAD
        .decoded_length(sealed.as_bytes())
        .map_err(|_| SealError::Malformed)?;
    buffer.clear();
    buffer.resize(len, 0);
    let decoded = URL_SAFE_NO_PAD
        .decode(
            sealed.as_bytes(),
            base64_simd::Out::from_slice(buffer.as_mut_slice()),
        )
        .map_err(|_| SealError::Malformed)?
        .len();
    buffer.truncate(decoded);
    if buffer.len() < HEADER_LEN + TAG_LEN || buffer[0] != VERSION {
        return Err(SealError::Malformed);
    }
    let (header, rest) = buffer.split_at_mut(HEADER_LEN);
    if header[1] != kind.byte() {
        return Err(if matches!(header[1], 1..=4) {
            SealError::WrongKind
        } else {
            SealError::Malformed
        });
    }
    let id = KeyId([header[2], header[3], header[4], header[5]]);
    let key = ring.find(id).ok_or(SealError::UnknownKey(id))?;
    let nonce = Nonce::try_from(&header[6..]).map_err(|_| SealError::Malformed)?;
    let (body, tag) = rest.split_at_mut(rest.len() - TAG_LEN);
    let tag = Tag::try_from(&*tag).map_err(|_| SealError::Malformed)?;
    key.cipher
        .decrypt_inout_detached(&nonce, header, body.into(), &tag)
        .map_err(|_| SealError::Tampered)?;
    Ok(&buffer[HEADER_LEN..buffer.len() - TAG_LEN])
}

/// `seal` with one character in its middle changed (every bit of a seal counts): for
/// the tests of each kind's refusals.
#[cfg(test)]
pub(crate) fn tampered(seal: &str) -> String {
    let mut bytes = seal.as_bytes().to_vec();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).expect("a seal is ASCII")
}

#[cfg(test)]
mod tests;
