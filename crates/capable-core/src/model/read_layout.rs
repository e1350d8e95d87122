//! `resources/read` results in the layout servers write, decoded without serde's
//! generic machinery.
//!
//! Servers write a read as `{"contents":[{"uri":…,"mimeType":…,"text":…}]}`: flat
//! objects of strings. Decoding that through the derived `Deserialize` costs several
//! times what reading its bytes does (field matching, a UTF-8 check of every string,
//! the generic `Option` and `Vec` visitors), most of a read's client time. This reader
//! takes exactly that layout — members in any order, whitespace between tokens, the
//! optional `resultType`, `ttlMs` and `cacheScope`, escapes in strings (each escaped
//! string decoded by serde_json itself) — and checks every byte it accepts: no raw
//! control byte, valid UTF-8, valid JSON up to the end. The compact layout in the
//! usual order is matched first, a run of literal bytes at a time; any other goes
//! through loops over the members.
//!
//! The strings of the result are [`SharedStr`] ranges of one copy of the payload from
//! its first string on, made when that string is read: one allocation for the whole
//! result, not one per string (and not the reader's whole buffer kept alive by a read
//! that is kept).
//!
//! Anything else (another member such as `annotations` or `_meta`, a duplicate, a
//! value of another type, trailing bytes, an error) makes it give up, and the result
//! goes through serde as before. It never decides anything serde would decide
//! differently: what it accepts, serde accepts with the same value, and whatever it
//! does not accept, serde judges (a test holds the two to that on mutated inputs).

use std::sync::Arc;

use super::{ReadResourceResult, ResourceContents, SharedStr};
use crate::jsonrpc::plain_string_end;

/// The members of a result this reader takes, each with the quote that closes its key.
const RESULT_KEYS: [&[u8]; 4] = [b"contents\"", b"ttlMs\"", b"cacheScope\"", b"resultType\""];
/// The members of a content this reader takes, likewise.
const CONTENT_KEYS: [&[u8]; 4] = [b"uri\"", b"mimeType\"", b"text\"", b"blob\""];

/// What the reader made of a result.
///
/// The reader is not generic, so it is compiled here once, its helpers inlined into
/// it, whichever crate calls it; the caller (generic over its error type, so compiled
/// where it is used) only wraps what it returns.
pub(crate) enum Read {
    /// The usual layout (see `Cursor::usual`): its contents, every other member absent.
    /// The caller builds the result around them where it receives it: moving a whole
    /// result (some 160 bytes) from the reader's `Option` into the caller's `Result`
    /// costs more than building it there.
    Contents(Vec<ResourceContents>),
    /// Any other layout the reader takes.
    Result(ReadResourceResult),
}

impl Read {
    /// The result.
    #[inline]
    pub(crate) fn into_result(self) -> ReadResourceResult {
        match self {
            Read::Contents(contents) => ReadResourceResult::of_contents(contents),
            Read::Result(result) => result,
        }
    }
}

/// What the reader makes of `raw` (a result's JSON text, possibly followed by
/// whitespace) when it is in a layout the reader takes; `None` for anything else.
pub(crate) fn read(raw: &[u8]) -> Option<Read> {
    let mut c = Cursor {
        b: raw,
        i: 0,
        shared: None,
    };
    if let Some(contents) = c.usual() {
        // Stopped short of the end: other members follow the contents.
        if c.i < c.b.len() {
            return c.after_contents(contents);
        }
        return Some(Read::Contents(contents));
    }
    // From the start again, keeping the copy `usual` may have made: it starts at the
    // first string, where the member loops find the first string too.
    c.i = 0;
    c.members(None).map(Read::Result)
}

/// The result in `raw`, when it is in a layout the reader takes.
#[cfg(test)]
pub(crate) fn read_result(raw: &[u8]) -> Option<ReadResourceResult> {
    read(raw).map(Read::into_result)
}

/// Which members of an object came already: a decoder refuses a duplicate (serde's
/// derived ones do), and this reader leaves one to serde.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    /// Notes member `at`; `None` if it came before.
    fn first_time(&mut self, at: usize) -> Option<()> {
        let bit = 1 << at;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

/// A content of strings only, as this reader takes them.
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
    /// Skips JSON whitespace. Compact JSON has none: one look at the next byte settles
    /// that.
    fn ws(&mut self) {
        if self.b.get(self.i).is_some_and(|&b| b <= b' ') {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
                self.i += 1;
            }
        }
    }

    /// Consumes `byte` if it comes next (after whitespace).
    fn eat(&mut self, byte: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&byte) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// `open`, then whether an item follows (`false`: `close` came at once).
    fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        if !self.eat(open) {
            return None;
        }
        Some(!self.eat(close))
    }

    /// After an item: whether another follows (a comma), or `close` came.
    fn next(&mut self, close: u8) -> Option<bool> {
        if self.eat(b',') {
            return Some(true);
        }
        self.eat(close).then_some(false)
    }

    /// An object whose keys are all among `names`, each at most once, in any order:
    /// `member` reads the value of each, given which name its key is.
    #[inline(always)]
    fn object(
        &mut self,
        names: &[&[u8]],
        member: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        let more = self.open(b'{', b'}')?;
        self.rest_of_object(names, Seen::default(), more, member)
    }

    /// The rest of an object read by [`object`](Cursor::object): `seen` are the
    /// members read so far, `more` whether another follows.
    #[inline(always)]
    fn rest_of_object(
        &mut self,
        names: &[&[u8]],
        mut seen: Seen,
        mut more: bool,
        mut member: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        while more {
            let key = self.key(names)?;
            seen.first_time(key)?;
            member(self, key)?;
            more = self.next(b'}')?;
        }
        Some(())
    }

    /// A member's key, when it is one of `names` as written (a key with escapes, or any
    /// other, gives up), then the colon: which of `names` it is. Inlined, so that each
    /// name is compared as the constant it is rather than by a call to `memcmp`.
    #[inline(always)]
    fn key(&mut self, names: &[&[u8]]) -> Option<usize> {
        if !self.eat(b'"') {
            return None;
        }
        let rest = &self.b[self.i..];
        let at = names.iter().position(|name| rest.starts_with(name))?;
        self.i += names[at].len();
        if !self.eat(b':') {
            return None;
        }
        self.ws();
        Some(at)
    }

    /// The layout nearly every server writes, compact and in this order:
    /// `{"contents":[{"uri":…,"mimeType":…,"text":…}]}`, `mimeType` optional, `blob`
    /// for `text`. Matched a run of literal bytes at a time, which costs a fraction of
    /// the member loops' byte-by-byte steps; `None` on the first byte that differs.
    /// Its contents; the result's other members are absent (the cursor then stands at
    /// the end), or follow them (the cursor stands at the comma after them). Inlined
    /// into `read`, its one caller, so that the contents are built where `read`
    /// returns them.
    #[inline(always)]
    fn usual(&mut self) -> Option<Vec<ResourceContents>> {
        if !self.literal(b"{\"contents\":[{\"uri\":") {
            return None;
        }
        let (mut uri, mut mime_type, mut text, mut blob) = (None, None, None, None);
        self.string(&mut uri)?;
        if self.literal(b",\"mimeType\":") {
            self.optional_string(&mut mime_type)?;
        }
        if self.literal(b",\"text\":") {
            self.optional_string(&mut text)?;
        } else if self.literal(b",\"blob\":") {
            self.optional_string(&mut blob)?;
        }
        if self.literal(b"}]}") {
            self.ws();
            if self.i != self.b.len() {
                return None;
            }
        } else if !(self.literal(b"}]") && self.b.get(self.i) == Some(&b',')) {
            return None;
        }
        Some(vec![flat(uri?, mime_type, text, blob)])
    }

    /// The rest of a result whose contents `usual` read, other members following them
    /// (a 2026-07-28 server's `resultType`, `ttlMs`, `cacheScope`): read on from
    /// there, the contents' text not scanned again. Kept out of `read`, whose usual
    /// path stays as short as it was.
    #[cold]
    #[inline(never)]
    fn after_contents(&mut self, contents: Vec<ResourceContents>) -> Option<Read> {
        self.members(Some(contents)).map(Read::Result)
    }

    /// The result read member by member: in any order, with whitespace anywhere.
    /// `read_first`: its contents, when `usual` read them (the cursor then stands just
    /// after them), else `None` (the cursor at the start).
    fn members(&mut self, read_first: Option<Vec<ResourceContents>>) -> Option<ReadResourceResult> {
        let mut seen = Seen::default();
        let more = match read_first {
            Some(_) => {
                seen.first_time(0)?;
                self.next(b'}')?
            }
            None => self.open(b'{', b'}')?,
        };
        let (mut contents, mut ttl_ms, mut cache_scope, mut result_type) =
            (read_first, None, None, None);
        self.rest_of_object(&RESULT_KEYS, seen, more, |c, key| {
            match key {
                0 => contents = Some(c.contents()?),
                1 => ttl_ms = c.optional_number()?,
                2 => c.optional_string(&mut cache_scope)?,
                _ => c.optional_string(&mut result_type)?,
            }
            Some(())
        })?;
        self.ws();
        if self.i != self.b.len() {
            return None;
        }
        Some(ReadResourceResult {
            contents: contents?,
            result_type: result_type.map(String::from),
            ttl_ms,
            cache_scope: cache_scope.map(String::from),
            meta: None,
        })
    }

    /// Consumes `bytes` if they come next, exactly.
    fn literal(&mut self, bytes: &[u8]) -> bool {
        let found = self.b[self.i..].starts_with(bytes);
        if found {
            self.i += bytes.len();
        }
        found
    }

    /// `[content, …]`.
    fn contents(&mut self) -> Option<Vec<ResourceContents>> {
        if !self.open(b'[', b']')? {
            return Some(Vec::new());
        }
        let mut contents = Vec::with_capacity(1);
        loop {
            self.content(&mut contents)?;
            if !self.next(b']')? {
                return Some(contents);
            }
        }
    }

    /// One content, onto `contents`: `uri`, and optionally `mimeType`, `text`, `blob`.
    fn content(&mut self, contents: &mut Vec<ResourceContents>) -> Option<()> {
        let (mut uri, mut mime_type, mut text, mut blob) = (None, None, None, None);
        self.object(&CONTENT_KEYS, |c, key| match key {
            0 => c.string(&mut uri),
            1 => c.optional_string(&mut mime_type),
            2 => c.optional_string(&mut text),
            _ => c.optional_string(&mut blob),
        })?;
        contents.push(flat(uri?, mime_type, text, blob));
        Some(())
    }

    /// `null` (leaving `slot` empty) or a string (into `slot`).
    #[inline(always)]
    fn optional_string(&mut self, slot: &mut Option<SharedStr>) -> Option<()> {
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
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

    /// `null` or a number, read by serde_json.
    fn optional_number(&mut self) -> Option<Option<f64>> {
        let rest = &self.b[self.i..];
        let len = rest
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            .unwrap_or(rest.len());
        let value = serde_json::from_slice::<Option<f64>>(&rest[..len]).ok()?;
        self.i += len;
        Some(value)
    }
}

#[cfg(test)]
mod tests;
