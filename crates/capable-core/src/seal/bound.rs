//! What every seal bound to a caller does alike, whatever it holds — a task id the
//! gateway hands out ([`TaskSeal`](super::TaskSeal)), a round's `requestState`
//! ([`RoundSeal`](super::RoundSeal)): the state is a format byte, then postcard; it is
//! sealed as its own [`SealKind`], never longer than its kind allows; and it opens
//! only within that length, of a format its kind knows, read whole, unexpired, and for
//! the caller it was sealed for (issuer and subject). Each kind keeps an error type of
//! its own (each is answered as its kind is); the refusals are these.

use serde::{Deserialize, Serialize};

use super::{open_into, seal, seal_stable, Caller, KeyRing, SealError, SealKind};

/// A state sealed for one caller until a time.
pub(super) trait Bound {
    /// Until when it opens, in seconds since the Unix epoch.
    fn expires_at(&self) -> u64;
    /// Whom it opens for.
    fn caller(&self) -> &Caller<'_>;
}

/// Why a caller-bound seal was not made or not opened.
pub(super) enum Refusal {
    /// The seal itself (forged, changed, a retired key's, another kind).
    Seal(SealError),
    /// It opened, of a format its kind does not know (the first byte).
    Format(u8),
    /// What it holds does not decode (or could not be encoded).
    Decode(postcard::Error),
    /// Its time is over.
    Expired,
    /// It is another caller's.
    OtherCaller,
    /// It seals to this many characters, more than its kind allows.
    TooLarge(usize),
}

/// How a kind seals: as what, the formats it knows (the first is not implied: each
/// seal names its own), at most how long, and whether one state always seals to one
/// text ([`seal_stable`]: a task id named alike by every replica) or to a fresh one.
pub(super) struct Rules {
    pub kind: SealKind,
    pub formats: &'static [u8],
    pub max_len: usize,
    pub stable: bool,
}

impl Rules {
    /// `state` sealed under the ring's current key, behind format byte `format`.
    pub fn seal<T: Serialize + ?Sized>(
        &self,
        ring: &KeyRing,
        state: &T,
        format: u8,
    ) -> Result<String, Refusal> {
        let plaintext = postcard::to_extend(state, vec![format]).map_err(Refusal::Decode)?;
        let sealer = if self.stable { seal_stable } else { seal };
        let sealed = sealer(ring, self.kind, &plaintext).map_err(|e| match e {
            SealError::TooLarge(n) => Refusal::TooLarge(62 + n.div_ceil(3) * 4),
            e => Refusal::Seal(e),
        })?;
        if sealed.len() > self.max_len {
            return Err(Refusal::TooLarge(sealed.len()));
        }
        Ok(sealed)
    }

    /// `sealed` opened for `caller` at `now`, decrypted in `buffer`: its format byte and
    /// its state.
    pub fn open<'b, T: Deserialize<'b> + Bound>(
        &self,
        ring: &KeyRing,
        sealed: &str,
        caller: &Caller<'_>,
        now: u64,
        buffer: &'b mut Vec<u8>,
    ) -> Result<(u8, T), Refusal> {
        if sealed.len() > self.max_len {
            return Err(Refusal::Seal(SealError::Malformed));
        }
        let plaintext = open_into(ring, self.kind, sealed, buffer).map_err(Refusal::Seal)?;
        let (&format, state) = plaintext.split_first().ok_or(Refusal::Format(0))?;
        if !self.formats.contains(&format) {
            return Err(Refusal::Format(format));
        }
        let (value, rest): (T, _) = postcard::take_from_bytes(state).map_err(Refusal::Decode)?;
        if !rest.is_empty() {
            return Err(Refusal::Decode(postcard::Error::DeserializeBadEncoding));
        }
        if value.expires_at() <= now {
            return Err(Refusal::Expired);
        }
        if !value.caller().same(caller) {
            return Err(Refusal::OtherCaller);
        }
        Ok((format, value))
    }
}
