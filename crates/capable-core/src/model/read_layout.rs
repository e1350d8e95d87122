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
//! control byte, valid UTF-8, valid JSON up to the end.
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
use crate::jsonrpc::once;

/// The result in `raw` (its JSON text, possibly followed by whitespace), when it is in
/// the layout this reader takes; `None` for anything else.
pub(crate) fn read_result(raw: &[u8]) -> Option<ReadResourceResult> {
    // The whole payload is checked for UTF-8 once: every string is then a slice of
    // text already known valid (quotes are ASCII, so they fall on char boundaries).
    // Without a raw control byte anywhere (compact JSON has no whitespace), no string
    // needs checking for one either.
    let text = simdutf8::basic::from_utf8(raw).ok()?;
    let mut c = Cursor {
        text,
        b: raw,
        i: 0,
        controls: crate::jsonrpc::has_control_byte(raw),
        shared: None,
    };
    let mut contents = None;
    let mut result_type = None;
    let mut ttl_ms = None;
    let mut cache_scope = None;
    c.object(|c, key| match key {
        b"contents" => once(&mut contents, c.contents()?),
        b"resultType" => once(&mut result_type, c.optional_string()?),
        b"cacheScope" => once(&mut cache_scope, c.optional_string()?),
        b"ttlMs" => once(&mut ttl_ms, c.optional_number()?),
        _ => None,
    })?;
    c.ws();
    if c.i != raw.len() {
        return None;
    }
    Some(ReadResourceResult {
        contents: contents?,
        result_type: result_type.flatten().map(String::from),
        ttl_ms: ttl_ms.flatten(),
        cache_scope: cache_scope.flatten().map(String::from),
        meta: None,
    })
}

struct Cursor<'a> {
    /// The payload, valid UTF-8.
    text: &'a str,
    /// The same, as bytes.
    b: &'a [u8],
    i: usize,
    /// Whether the payload holds a byte below 0x20 somewhere (whitespace, or a raw
    /// control byte, which no string may hold).
    controls: bool,
    /// The one copy of `text[from..]` the result's strings share, and `from`: made
    /// when the first string is read, at its start.
    shared: Option<(Arc<str>, usize)>,
}

impl<'a> Cursor<'a> {
    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
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

    /// An object: each member's key to `member`, which reads its value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.key()?;
            if !self.eat(b':') {
                return None;
            }
            self.ws();
            member(self, key)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }

    /// A key without escapes, as bytes (only the names this reader knows are used,
    /// and those are plain ASCII). Keys are short: a plain loop finds their end.
    fn key(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let rest = &self.b[self.i..];
        let end = crate::jsonrpc::find_quote(rest)?;
        if rest[end] != b'"' {
            return None;
        }
        self.i += end + 1;
        Some(&rest[..end])
    }

    /// `[content, …]`.
    fn contents(&mut self) -> Option<Vec<ResourceContents>> {
        if !self.eat(b'[') {
            return None;
        }
        let mut contents = Vec::with_capacity(1);
        if self.eat(b']') {
            return Some(contents);
        }
        loop {
            contents.push(self.content()?);
            if self.eat(b',') {
                continue;
            }
            return self.eat(b']').then_some(contents);
        }
    }

    /// One content: `uri`, and optionally `mimeType`, `text`, `blob`.
    fn content(&mut self) -> Option<ResourceContents> {
        let (mut uri, mut mime_type, mut text, mut blob) = (None, None, None, None);
        self.object(|c, key| match key {
            b"uri" => once(&mut uri, c.string()?),
            b"mimeType" => once(&mut mime_type, c.optional_string()?),
            b"text" => once(&mut text, c.optional_string()?),
            b"blob" => once(&mut blob, c.optional_string()?),
            _ => None,
        })?;
        Some(ResourceContents {
            uri: uri?,
            mime_type: mime_type.flatten(),
            text: text.flatten(),
            blob: blob.flatten(),
            annotations: None,
            meta: None,
        })
    }

    /// `null` or a string.
    fn optional_string(&mut self) -> Option<Option<SharedStr>> {
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A string. One without escapes is checked (no raw control byte; UTF-8 was
    /// checked for the whole payload) and shared; one with escapes is decoded by
    /// serde_json.
    fn string(&mut self) -> Option<SharedStr> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let rest = &self.b[start..];
        let end = crate::jsonrpc::find_quote(rest)?;
        if rest[end] == b'"' {
            if self.controls && crate::jsonrpc::has_control_byte(&rest[..end]) {
                return None;
            }
            let (all, from) = match &self.shared {
                Some((all, from)) => (all, *from),
                None => {
                    let all = Arc::from(self.text.get(start..)?);
                    (&self.shared.insert((all, start)).0, start)
                }
            };
            // The cursor only moves on: every later string starts after `from`.
            let at = start.checked_sub(from)?;
            let text = SharedStr::slice_of(all, at..at + end)?;
            self.i = start + end + 1;
            return Some(text);
        }
        // Escapes: find the closing quote (a backslash escapes the byte after it), then
        // decode the whole string token exactly as serde_json does.
        let mut at = start + end;
        loop {
            at += 2;
            let next = memchr::memchr2(b'"', b'\\', self.b.get(at..)?)?;
            at += next;
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
}
