//! The keys a seal is made and opened with: one current key, and the previous ones a
//! rotation keeps for a while.
//!
//! A key is 32 random bytes, written as 64 hex digits or as base64 (standard or URL-safe,
//! padded or not), in a file or an environment variable; surrounding white space is
//! ignored. Its [`KeyId`] is not configured but derived from the key (the first four bytes
//! of a SHA-256 over a label and the key), so two replicas given the same key always agree
//! on its id and an operator cannot pair a key with the wrong id.
//!
//! Rotation: put the new key as current and the old one as previous on every replica;
//! seals made under the old key keep opening until it is removed from the ring, after
//! which they are refused as [`SealError::UnknownKey`](super::SealError::UnknownKey).
//!
//! A key's bytes are never shown: `Debug` prints the id only, and no error repeats the
//! text that was parsed.
//!
//! ```
//! use capable_core::internal::seal::{KeyRing, SealKey};
//! let current = SealKey::parse(&"ab".repeat(32)).unwrap();
//! let previous = SealKey::parse("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").unwrap();
//! let ring = KeyRing::new(current, vec![previous]);
//! assert!(!format!("{ring:?}").contains("abab"));
//! ```

use aes_gcm_siv::aead::KeyInit;
use aes_gcm_siv::Aes256GcmSiv;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::fmt;

/// How many bytes a key has.
pub const KEY_LEN: usize = 32;

/// How many previous keys a ring holds at most: rotation needs one, a slow rollout two.
pub const MAX_PREVIOUS: usize = 4;

/// A key's short name, carried in clear in every seal so the opener picks the right key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub [u8; 4]);

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Why a key's text was refused. The text itself is never repeated.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// Nothing but white space was given.
    #[error("the seal key is empty")]
    Empty,
    /// The text is neither hex nor base64.
    #[error("the seal key is neither hex nor base64")]
    Encoding,
    /// The text decoded, but not to 32 bytes.
    #[error("the seal key is {0} bytes long; it must be exactly 32 (64 hex digits or 44 base64 characters)")]
    Length(usize),
    /// More previous keys than [`MAX_PREVIOUS`].
    #[error("at most {MAX_PREVIOUS} previous seal keys are kept, {0} were given")]
    TooManyPrevious(usize),
}

/// One 32-byte key, ready to seal and open.
#[derive(Clone)]
pub struct SealKey {
    id: KeyId,
    pub(super) cipher: Aes256GcmSiv,
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl SealKey {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: &[u8; KEY_LEN]) -> SealKey {
        let digest = Sha256::new()
            .chain_update(b"capable seal key id v1\0")
            .chain_update(bytes)
            .finalize();
        let id = KeyId([digest[0], digest[1], digest[2], digest[3]]);
        let cipher = Aes256GcmSiv::new(bytes.into());
        SealKey { id, cipher }
    }

    /// A key from the text of a file or an environment variable: 64 hex digits, or base64
    /// of 32 bytes (standard or URL-safe alphabet, with or without padding).
    pub fn parse(text: &str) -> Result<SealKey, KeyError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(KeyError::Empty);
        }
        // Hex digits only (and not the 43 characters of unpadded base64 of 32 bytes,
        // which are hex digits only by a 10^-20 chance): hex, whatever its length, so
        // 32 hex digits are said to be 16 bytes rather than decoded as base64.
        let hex = text.bytes().all(|b| b.is_ascii_hexdigit()) && text.len() != 43;
        let mut bytes = if hex {
            if text.len() != 2 * KEY_LEN {
                return Err(KeyError::Length(text.len() / 2));
            }
            decode_hex(text)
        } else {
            [URL_SAFE_NO_PAD, URL_SAFE, STANDARD_NO_PAD, STANDARD]
                .iter()
                .find_map(|engine| engine.decode(text).ok())
                .ok_or(KeyError::Encoding)?
        };
        let key = <&[u8; KEY_LEN]>::try_from(bytes.as_slice())
            .map(SealKey::from_bytes)
            .map_err(|_| KeyError::Length(bytes.len()));
        bytes.fill(0);
        key
    }

    /// This key's id, as carried in its seals.
    pub fn id(&self) -> KeyId {
        self.id
    }
}

fn decode_hex(text: &str) -> Vec<u8> {
    let nibble = |b: u8| match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    };
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| nibble(pair[0]) << 4 | nibble(pair[1]))
        .collect()
}

/// The current key, which seals, and the previous ones, which still open.
#[derive(Debug, Clone)]
pub struct KeyRing {
    current: SealKey,
    previous: Vec<SealKey>,
}

impl KeyRing {
    /// A ring sealing under `current` and also opening what `previous` sealed. A previous
    /// key equal to the current one is dropped; more than [`MAX_PREVIOUS`] are cut off
    /// (use [`KeyRing::try_new`] to refuse them instead).
    pub fn new(current: SealKey, mut previous: Vec<SealKey>) -> KeyRing {
        previous.retain(|k| k.id != current.id);
        previous.truncate(MAX_PREVIOUS);
        KeyRing { current, previous }
    }

    /// As [`KeyRing::new`], refusing more than [`MAX_PREVIOUS`] previous keys.
    pub fn try_new(current: SealKey, previous: Vec<SealKey>) -> Result<KeyRing, KeyError> {
        if previous.len() > MAX_PREVIOUS {
            return Err(KeyError::TooManyPrevious(previous.len()));
        }
        Ok(KeyRing::new(current, previous))
    }

    /// The key new seals are made with.
    pub fn current(&self) -> &SealKey {
        &self.current
    }

    /// The key with this id, current or previous.
    pub fn find(&self, id: KeyId) -> Option<&SealKey> {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == id)
    }
}
