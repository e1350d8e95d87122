//! `resources/read` results in the layout servers write, read without serde's generic
//! machinery.
//!
//! Servers write a read as `{"contents":[{"uri":…,"mimeType":…,"text":…}]}`: one flat
//! object of strings, compact, in that order. Decoding that through the derived
//! `Deserialize` costs several times what reading its bytes does (field matching, a
//! UTF-8 check of every string, the generic `Option` and `Vec` visitors), most of a
//! read's client time. This reader takes exactly that layout, a run of literal bytes at
//! a time: `mimeType` optional, `blob` for `text`, either `null`, whitespace after the
//! result; each string without escapes checked on the way (no raw control byte; the
//! text they share is checked for UTF-8 once), each with escapes decoded by serde_json
//! itself. Anything else — another member, another order, whitespace inside, more than
//! one content — makes it give up, and the result goes through serde.
//!
//! The strings of the result are [`SharedStr`] ranges of one copy of the payload from
//! its first string on, made when that string is read: one allocation for the whole
//! result, not one per string (and not the reader's whole buffer kept alive by a read
//! that is kept).

use std::sync::Arc;

use super::string_end::plain_string_end;
use crate::model::{ResourceContents, SharedStr};

/// The contents of `raw` (a result's JSON text, possibly followed by whitespace) when
/// it is in the usual layout, every other member of the result absent; `None` for
/// anything else.
///
/// Not generic, so compiled here once with its helpers inlined into it, whichever
/// crate calls it; the caller builds the result around the contents where it receives
/// them (moving a whole result costs more than building it there).
pub(crate) fn read_contents(raw: &[u8]) -> Option<Vec<ResourceContents>> {
    let mut c = Cursor {
        b: raw,
        i: 0,
        shared: None,
    };
    if !c.literal(b"{\"contents\":[{\"uri\":") {
        return None;
    }
    let (mut uri, mut mime_type, mut text, mut blob) = (None, None, None, None);
    c.string(&mut uri)?;
    if c.literal(b",\"mimeType\":") {
        c.optional_string(&mut mime_type)?;
    }
    if c.literal(b",\"text\":") {
        c.optional_string(&mut text)?;
    } else if c.literal(b",\"blob\":") {
        c.optional_string(&mut blob)?;
    }
    if !c.literal(b"}]}") {
        return None;
    }
    // Whitespace may follow; compact JSON has none, which one look settles.
    if c.b.get(c.i).is_some_and(|&b| b <= b' ') {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = c.b.get(c.i) {
            c.i += 1;
        }
    }
    if c.i != c.b.len() {
        return None;
    }
    Some(vec![flat(uri?, mime_type, text, blob)])
}

/// A content of strings only, as this reader takes them: built in place, in the
/// vector that holds it.
#[inline(always)]
fn flat(
    uri: SharedStr,
    mime_type: Option<SharedStr>,
    text: Option<SharedStr>,
    blob: Option<SharedStr>,
) -> ResourceContents {
    ResourceContents {
        uri,
        mime_type,
        text,
        blob,
        annotations: None,
        meta: None,
    }
}

struct Cursor<'a> {
    /// The payload.
    b: &'a [u8],
    i: usize,
    /// The one copy of `b[from..]` the result's strings share, and `from`: made when
    /// the first string is read, at its start, once that text is known to be UTF-8.
    shared: Option<(Arc<str>, usize)>,
}

impl Cursor<'_> {
    /// Consumes `bytes` if they come next, exactly.
    #[inline(always)]
    fn literal(&mut self, bytes: &[u8]) -> bool {
        let found = self.b[self.i..].starts_with(bytes);
        if found {
            self.i += bytes.len();
        }
        found
    }

    /// `null` (leaving `slot` empty) or a string (into `slot`).
    #[inline(always)]
    fn optional_string(&mut self, slot: &mut Option<SharedStr>) -> Option<()> {
        if self.literal(b"null") {
            return Some(());
        }
        self.string(slot)
    }

    /// A string, into `slot`. One without escapes is checked on the way to its end (no
    /// raw control byte; UTF-8 is checked for the shared copy as a whole) and shared;
    /// one with escapes is decoded by serde_json.
    ///
    /// Inlined where it is read, and written straight into the caller's slot: for a
    /// short string, a call and the moves of a returned `Option<SharedStr>` up to
    /// where it is kept cost more than the string's own work.
    #[inline(always)]
    fn string(&mut self, slot: &mut Option<SharedStr>) -> Option<()> {
        let text = self.b[self.i..].strip_prefix(b"\"")?;
        let start = self.i + 1;
        let len = plain_string_end(text)?;
        if text[len] == b'\\' {
            *slot = Some(self.escaped(start + len)?);
            return Some(());
        }
        let (all, from) = match &self.shared {
            Some(shared) => shared,
            None => self.share(start)?,
        };
        // The cursor only moves on: every later string starts after `from`.
        let at = start.checked_sub(*from)?;
        *slot = SharedStr::slice_of(all, at..at + len);
        self.i = start + len + 1;
        slot.is_some().then_some(())
    }

    /// Makes the one copy the result's strings share: everything from `start` (the
    /// first string's text) on, checked for UTF-8 as a whole. Quotes are ASCII, so every
    /// later string's ends fall on char boundaries of the copy.
    ///
    /// The check goes 64 bytes a step and copies a shorter last part into a buffer of
    /// 64 first, a cost of its own; it starts up to 63 bytes early instead (where
    /// there are that many), so that what it checks is a whole number of steps. Those
    /// bytes come before the first plain string: the result's own structure, or a
    /// string with escapes read before it, which may hold raw non-ASCII text, so the
    /// window moves on to the first byte that starts a character (it never starts
    /// inside one, which would fail the check of valid text). `start`, just after a
    /// quote, is then a char boundary of what was checked.
    fn share(&mut self, start: usize) -> Option<&(Arc<str>, usize)> {
        let mut early = start.min((64 - (self.b.len() - start) % 64) % 64);
        // A continuation byte (0b10xx_xxxx) is never a character's first.
        while early > 0 && self.b[start - early] & 0xc0 == 0x80 {
            early -= 1;
        }
        let checked = simdutf8::basic::from_utf8(&self.b[start - early..]).ok()?;
        let text = checked.get(early..)?;
        Some(self.shared.insert((Arc::from(text), start)))
    }

    /// The rest of a string with escapes, its first backslash at `at`: its closing
    /// quote is found (a backslash escapes the byte after it), then the whole string
    /// token is decoded exactly as serde_json decodes it.
    fn escaped(&mut self, mut at: usize) -> Option<SharedStr> {
        loop {
            at += 2;
            at += memchr::memchr2(b'"', b'\\', self.b.get(at..)?)?;
            if self.b[at] == b'"' {
                break;
            }
        }
        let text = serde_json::from_slice::<String>(&self.b[self.i..=at]).ok()?;
        self.i = at + 1;
        Some(SharedStr::from(text))
    }
}

#[cfg(test)]
mod tests;
