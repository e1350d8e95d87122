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
            Read::Contents(contents) => ReadResourceResult {
                contents,
                result_type: None,
                ttl_ms: None,
                cache_scope: None,
                meta: None,
            },
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
        return Some(Read::Contents(contents));
    }
    // From the start again, keeping the copy `usual` may have made: it starts at the
    // first string, where the member loops find the first string too.
    c.i = 0;
    c.members().map(Read::Result)
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
    /// Its contents: the result's other members are absent. Inlined into `read`, its
    /// one caller, so that the contents are built where `read` returns them.
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
        if !self.literal(b"}]}") {
            return None;
        }
        self.ws();
        if self.i != self.b.len() {
            return None;
        }
        Some(vec![ResourceContents {
            uri: uri?,
            mime_type,
            text,
            blob,
            annotations: None,
            meta: None,
        }])
    }

    /// The result read member by member: in any order, with whitespace anywhere.
    fn members(&mut self) -> Option<ReadResourceResult> {
        let (mut contents, mut ttl_ms, mut cache_scope, mut result_type) = (None, None, None, None);
        let mut seen = Seen::default();
        let mut more = self.open(b'{', b'}')?;
        while more {
            let key = self.key(&RESULT_KEYS)?;
            seen.first_time(key)?;
            match key {
                0 => contents = Some(self.contents()?),
                1 => ttl_ms = self.optional_number()?,
                2 => self.optional_string(&mut cache_scope)?,
                _ => self.optional_string(&mut result_type)?,
            }
            more = self.next(b'}')?;
        }
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
        let mut seen = Seen::default();
        let mut more = self.open(b'{', b'}')?;
        while more {
            let key = self.key(&CONTENT_KEYS)?;
            seen.first_time(key)?;
            match key {
                0 => self.string(&mut uri)?,
                1 => self.optional_string(&mut mime_type)?,
                2 => self.optional_string(&mut text)?,
                _ => self.optional_string(&mut blob)?,
            }
            more = self.next(b'}')?;
        }
        contents.push(ResourceContents {
            uri: uri?,
            mime_type,
            text,
            blob,
            annotations: None,
            meta: None,
        });
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
mod tests {
    use super::read_result;
    use crate::model::ReadResourceResult;
    use crate::mutate::by_serde;

    #[test]
    fn the_usual_layout_is_read_as_serde_reads_it() {
        for raw in [
            r#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hello"}]}"#,
            r#"{"contents":[]}"#,
            r#" { "contents" : [ { "text" : "x" , "uri" : "a://b" } ] } "#,
            r#"{"contents":[{"uri":"a://b","blob":"AAEC","mimeType":null}],"ttlMs":5,"cacheScope":"public","resultType":"complete"}"#,
            r#"{"ttlMs":1.5e3,"contents":[{"uri":"a://b","text":null},{"uri":"c://d","text":"é ✓ 🦀"}]}"#,
            r#"{"contents":[{"uri":"a://b","text":"line\none \"q\" \\ \u00e9\ud83e\udd80 \u0001"}]}"#,
            r#"{"contents":[{"uri":"a\/b","text":"\\"}],"ttlMs":null}"#,
        ] {
            let read = read_result(raw.as_bytes()).map(|r| format!("{r:?}"));
            assert!(read.is_some(), "{raw} should be read");
            assert_eq!(
                read,
                by_serde::<ReadResourceResult>(raw.as_bytes()),
                "{raw}"
            );
        }
    }

    #[test]
    fn the_strings_of_a_read_share_one_copy_of_it() {
        let raw = br#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hi"},{"uri":"c","text":"e\u0301"}]}"#;
        let read = read_result(raw).unwrap();
        let [first, second] = &read.contents[..] else {
            panic!("two contents: {read:?}")
        };
        let text = first.text.as_ref().unwrap();
        assert!(first.uri.shares_text_with(text));
        assert!(first
            .uri
            .shares_text_with(first.mime_type.as_ref().unwrap()));
        assert!(first.uri.shares_text_with(&second.uri));
        // A string with escapes is decoded on its own.
        let decoded = second.text.as_ref().unwrap();
        assert_eq!(decoded, "e\u{301}");
        assert!(!first.uri.shares_text_with(decoded));
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        for raw in [
            r#"{"contents":[{"uri":"a://b","annotations":{"priority":1}}]}"#,
            r#"{"contents":[{"uri":"a://b","_meta":{}}]}"#,
            r#"{"contents":[],"_meta":{"x":1}}"#,
            r#"{"contents":[{"uri":"a://b","uri":"c://d"}]}"#,
            r#"{"contents":[{"uri":"a://b"}],"contents":[]}"#,
            r#"{"contents":[{"mimeType":"text/plain"}]}"#,
            r#"{"contents":[{"uri":"a://b","text":"raw	tab"}]}"#,
            r#"{"contents":[{"uri":"a://b","text":"\ud800"}]}"#,
            r#"{"contents":[{"uri":"a://b","text":42}]}"#,
            r#"{"contents":[{"uri":"a://b"}]} x"#,
            r#"{"contents":[{"uri":"a://b"},]}"#,
            r#"{"contents":[{"uri":"a://b"}],"ttlMs":1e999}"#,
            r#"{"other":1,"contents":[]}"#,
            r#"{"contents":[{"uri":"a://b"}]"#,
            r#"{"contents":[{"u\u0072i":"a://b"}]}"#,
            r#"[]"#,
            "",
        ] {
            assert!(
                read_result(raw.as_bytes()).is_none(),
                "{raw} should be left to serde"
            );
        }
        // Invalid UTF-8 in a string.
        let mut bad = br#"{"contents":[{"uri":"a://b","text":"ab"}]}"#.to_vec();
        let at = bad.iter().rposition(|&b| b == b'a').unwrap();
        bad[at] = 0xff;
        assert!(read_result(&bad).is_none());
    }

    /// A string with escapes and raw non-ASCII text before the first plain one (as some
    /// encoders write a URI): the check of the shared copy, which starts a little
    /// early, never starts inside one of its characters. Every length moves where it
    /// would start.
    #[test]
    fn raw_non_ascii_before_the_first_plain_string_is_read() {
        for pad in 0..80 {
            let uri = format!("a\\u0026{}é✓", "x".repeat(pad));
            for text in ["short", &"t".repeat(100 + pad)] {
                let raw = format!(
                    r#"{{"contents":[{{"uri":"{uri}","mimeType":"text/plain","text":"{text}"}}]}}"#
                );
                let read = read_result(raw.as_bytes()).map(|r| format!("{r:?}"));
                assert!(read.is_some(), "{raw} should be read");
                assert_eq!(
                    read,
                    by_serde::<ReadResourceResult>(raw.as_bytes()),
                    "{raw}"
                );
            }
        }
    }

    /// The usual layout in all its forms, and what makes the reader leave it for the
    /// member loops part way (the copy made by then is kept): read as serde reads it.
    #[test]
    fn the_usual_layout_and_its_near_misses_are_read_as_serde_reads_them() {
        for raw in [
            r#"{"contents":[{"uri":"a://b"}]}"#,
            r#"{"contents":[{"uri":"a://b","mimeType":null,"text":null}]}"#,
            r#"{"contents":[{"uri":"a://b","blob":"AAEC"}]}"#,
            r#"{"contents":[{"uri":"a://b","mimeType":"x/y","blob":null}]}"#,
            "{\"contents\":[{\"uri\":\"a://b\",\"text\":\"x\"}]}\r\n ",
            r#"{"contents":[{"uri":"a://b","text":"x","blob":"y"}]}"#,
            r#"{"contents":[{"uri":"a://b","text":"x","mimeType":"y"}]}"#,
            r#"{"contents":[{"uri":"a://b","mimeType":"x"},{"uri":"c","text":"d"}]}"#,
            r#"{"contents":[{"uri":"a://b","text":"x"}],"ttlMs":5}"#,
            r#"{"contents":[{"uri":"a://b","text":"x"} ]}"#,
            r#"{"contents":[{"uri":"a\"b","mimeType":"\u0041","text":"\n"}]}"#,
            r#"{"contents":[{"uri":"é\n","mimeType":"x","text":"y"}]}"#,
            r#"{"contents":[{"uri":"🦀\n","text":"é"}],"cacheScope":"é"}"#,
        ] {
            let read = read_result(raw.as_bytes()).map(|r| format!("{r:?}"));
            assert!(read.is_some(), "{raw} should be read");
            assert_eq!(
                read,
                by_serde::<ReadResourceResult>(raw.as_bytes()),
                "{raw}"
            );
        }
        for raw in [
            r#"{"contents":[{"uri":null}]}"#,
            r#"{"contents":[{"uri":"a://b","text":"x"}]}}"#,
            r#"{"contents":[{"uri":"a://b","text":"x"}]"#,
            r#"{"contents":[{"uri":"a://b","text":"x"},]}"#,
            r#"{"contents":[{"uri":"a://b","text":"x","text":"y"}]}"#,
            r#"{"contents":[{"uri":"a://b","te\u0078t":"x"}]}"#,
            "{\"contents\":[{\"uri\":\"a://b\",\"text\":\"\u{7f}\u{1}\"}]}",
        ] {
            assert!(
                read_result(raw.as_bytes()).is_none(),
                "{raw} should be left to serde"
            );
        }
    }

    /// Texts short and long, with a byte of each kind that matters at places around
    /// the word and block boundaries of the string search, in several layouts: what
    /// the reader takes is what serde makes of it, and it takes every valid one.
    #[test]
    fn strings_of_every_length_and_content_agree_with_serde() {
        let layouts: [fn(&str) -> String; 5] = [
            |t| {
                format!(
                    r#"{{"contents":[{{"uri":"a://b","mimeType":"text/plain","text":"{t}"}}]}}"#
                )
            },
            |t| format!(r#"{{"contents":[{{"uri":"{t}","mimeType":"{t}","blob":"{t}"}}]}}"#),
            |t| format!("{{ \"contents\" : [ {{ \"uri\" : \"a\",\n\t\"text\" : \"{t}\" }} ] }}\n"),
            |t| format!(r#"{{"contents":[{{"text":"{t}","uri":"a://b"}}],"cacheScope":"{t}"}}"#),
            |t| format!(r#"{{"resultType":"{t}","contents":[{{"uri":"a://b","text":"{t}"}}]}}"#),
        ];
        // (what is put in the text, whether the text is then still valid JSON; serde
        // reads a raw control byte in `text` as bytes, leaving the check of it to
        // `Payload::decode`, so its verdict is not asked for here)
        let specials = [
            ("é", true),
            ("🦀", true),
            ("\\\"", true),
            ("\\\\", true),
            ("\\u00e9", true),
            ("\\ud83e\\udd80", true),
            ("\u{1}", false),
            ("\t", false),
            ("\u{1f}", false),
            ("\"", false),
            ("\\", false),
            ("\\x", false),
            ("\\ud800", false),
        ];
        for len in [
            0usize, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 100, 127, 128, 129, 300,
        ] {
            for at in [0, len / 3, len / 2, len.saturating_sub(1), len] {
                for (special, valid) in specials {
                    let mut text = "x".repeat(len);
                    text.insert_str(at, special);
                    for layout in layouts {
                        let raw = layout(&text);
                        let read = read_result(raw.as_bytes()).map(|r| format!("{r:?}"));
                        if valid {
                            assert!(read.is_some(), "{raw:?} should be read");
                            assert_eq!(read, by_serde::<ReadResourceResult>(raw.as_bytes()));
                        } else {
                            assert_eq!(read, None, "{raw:?} should be left to serde");
                        }
                    }
                }
            }
        }
    }

    /// Mutated reads: whatever the reader accepts, serde accepts with the same value.
    #[test]
    fn the_reader_never_disagrees_with_serde_on_mutated_reads() {
        let seeds = [
            r#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hello \"w\" \n é"}]}"#,
            r#"{"contents":[{"uri":"a://b","blob":"AAEC"}],"ttlMs":5,"cacheScope":"private"}"#,
            r#"{"contents":[{"uri":"a://b","text":null},{"uri":"c","mimeType":null}],"resultType":"complete"}"#,
        ];
        const BYTES: &[u8] = b"{}[]\",:\\ \t\r\n0123456789abcdeunl\x01\x7f\xc3\xa9\xff";
        let read = crate::mutate::agrees_with_serde(
            0x9e37_79b9_7f4a_7c15,
            &seeds,
            BYTES,
            50_000,
            read_result,
            ReadResourceResult::from_payload,
        );
        assert!(read > 2000, "too few mutations read to mean much: {read}");
    }

    /// The same, on reads whose strings are long enough for the vector search, in the
    /// usual layout and around it.
    #[test]
    fn the_reader_never_disagrees_with_serde_on_mutated_long_reads() {
        let text = "x".repeat(90);
        let seeds = [
            format!(r#"{{"contents":[{{"uri":"a://{text}","mimeType":"text/plain","text":"{text}é{text}\"{text}"}}]}}"#),
            format!(r#"{{"contents":[{{"uri":"a://b","text":"{text}"}},{{"uri":"c","blob":"{text}"}}],"ttlMs":5}}"#),
            format!("{{ \"contents\" : [ {{ \"uri\" : \"{text}\" , \"text\" : \"{text}\\n{text}\" }} ] }}"),
        ];
        let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
        const BYTES: &[u8] = b"{}[]\",:\\ \t\r\n0123456789abcdeunl\x01\x1f\x7f\xc3\xa9\xff";
        let read = crate::mutate::agrees_with_serde(
            0x2545_f491_4f6c_dd1d,
            &seeds,
            BYTES,
            50_000,
            read_result,
            ReadResourceResult::from_payload,
        );
        assert!(read > 2000, "too few mutations read to mean much: {read}");
    }
}
