//! A cursor over JSON text that checks every byte it passes: objects member by member,
//! arrays element by element, any value skipped to its raw text. What the cache reads a
//! result's hints (`ttlMs`, `cacheScope`, `resultType`) with, without decoding the whole
//! result ([`each_member`]), and what a tool call's result is taken apart with
//! (`model::call_layout`).
//!
//! A result's hints sit beside its bulk — a read's text, a list's tools — which a
//! derived decoder of the hints alone still walks through serde's generic skipping,
//! several times the cost of this walk (strings are skipped eight bytes at a time, then
//! by a vector search). It accepts only valid JSON: UTF-8 (checked once for the whole
//! text), no raw control byte in a string (checked once for the whole text, and string
//! by string only when the text has any, as whitespace), valid escapes, the number
//! grammar, exact literals, at most [`MAX_DEPTH`] levels of nesting (serde_json's own
//! limit is 128), nothing but whitespace after the value. It gives up (`None`) on
//! anything else, and on a key with escapes: the caller then decodes as before, so the
//! outcome never differs from serde's (tests hold the two to that on mutated inputs).

use super::{find_quote, has_control_byte};

/// How deeply objects and arrays may nest, the outermost included (deeper: the caller
/// decodes).
const MAX_DEPTH: usize = 100;

/// Calls `member` with each key (raw, without escapes) and its value's raw text, in
/// order; `None` if `text` is not one valid JSON object (and whitespace), a key has
/// escapes, or `member` says so.
pub(crate) fn each_member<'a>(
    text: &'a [u8],
    mut member: impl FnMut(&'a str, &'a [u8]) -> Option<()>,
) -> Option<()> {
    let mut c = Walk::new(text)?;
    c.object(|c, key| member(key, c.raw_value()?))?;
    c.end()
}

/// The raw values of the members named `names`, in that order (`None` for one that is
/// absent), read off the object `text` by the checking walk; `None` when the walk gives
/// up on the text or a named member comes twice (serde refuses a duplicate: the caller
/// leaves both cases to it).
pub(crate) fn pick<'a, const N: usize>(
    text: &'a [u8],
    names: [&str; N],
) -> Option<[Option<&'a [u8]>; N]> {
    let mut values = [None; N];
    each_member(text, |key, value| {
        match names.iter().position(|n| *n == key) {
            Some(at) => once(&mut values[at], value),
            None => Some(()),
        }
    })?;
    Some(values)
}

/// A member [`pick`] found, decoded as a derived decoder decodes an `Option` field with
/// a default: absent or `null` is `None`; `None` outside when the value is not a `T`.
pub(crate) fn member<T: serde::de::DeserializeOwned>(value: Option<&[u8]>) -> Option<Option<T>> {
    match value {
        Some(value) => serde_json::from_slice(value).ok(),
        None => Some(None),
    }
}

/// Sets a member's value, unless it was already set: a decoder refuses a duplicate
/// member (serde's derived ones do), and these readers leave one to serde.
pub(crate) fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// The cursor. Each method reads one value at the cursor (after whitespace) and leaves
/// the cursor after it; `None` when the text there is not what it reads, or not valid.
pub(crate) struct Walk<'a> {
    /// The text, checked UTF-8 (strings are cut from it: quotes are ASCII, so they
    /// fall on char boundaries).
    text: &'a str,
    b: &'a [u8],
    i: usize,
    /// Whether the text holds a byte below 0x20 anywhere (whitespace, or a raw
    /// control byte, which no string may hold).
    controls: bool,
    /// How many objects and arrays the cursor is inside.
    depth: usize,
}

impl<'a> Walk<'a> {
    /// A cursor at the start of `text`, if it is UTF-8.
    pub(crate) fn new(text: &'a [u8]) -> Option<Walk<'a>> {
        Some(Walk {
            text: simdutf8::basic::from_utf8(text).ok()?,
            b: text,
            i: 0,
            controls: has_control_byte(text),
            depth: 0,
        })
    }

    /// The next byte that is not whitespace, without moving past it.
    pub(crate) fn peek_value(&mut self) -> Option<u8> {
        self.ws();
        self.peek()
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.ws();
        (self.i == self.b.len()).then_some(())
    }

    /// An object: `member` gets each key (raw, without escapes: a key with escapes
    /// gives up) and must read its value.
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.sequence(b'{', b'}', |c| {
            c.ws();
            let start = c.i;
            if c.peek() != Some(b'"') || c.string()? {
                return None;
            }
            let key = c.text.get(start + 1..c.i - 1)?;
            c.ws();
            c.eat(b':')?;
            member(c, key)
        })
    }

    /// An array: `element` must read each element.
    pub(crate) fn array(&mut self, element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.sequence(b'[', b']', element)
    }

    /// `open`, the items `item` reads, separated by commas, `close`: one level deeper.
    fn sequence(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.ws();
        self.eat(open)?;
        self.enter()?;
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
        } else {
            loop {
                item(self)?;
                self.ws();
                match self.next()? {
                    b',' => continue,
                    b if b == close => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// Any value, checked and skipped: its raw text.
    pub(crate) fn raw_value(&mut self) -> Option<&'a [u8]> {
        self.ws();
        let start = self.i;
        self.value()?;
        Some(&self.b[start..self.i])
    }

    /// A string value without escapes: its text (`None` for any other value, the
    /// cursor left in place).
    pub(crate) fn plain_string(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        if self.peek() == Some(b'"') && self.string() == Some(false) {
            return self.text.get(start + 1..self.i - 1);
        }
        self.i = start;
        None
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// One value.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|c, _| c.raw_value().map(drop)),
            b'[' => self.array(|c| c.raw_value().map(drop)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b
            .get(self.i..)?
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digit()?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.digit()?;
            self.digits();
        }
        Some(())
    }

    fn digit(&mut self) -> Option<()> {
        self.next()?.is_ascii_digit().then_some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// A string, its quotes included; whether it had escapes.
    fn string(&mut self) -> Option<bool> {
        self.eat(b'"')?;
        let mut escaped = false;
        loop {
            let rest = self.b.get(self.i..)?;
            let at = find_quote(rest)?;
            if self.controls && has_control_byte(&rest[..at]) {
                return None;
            }
            self.i += at + 1;
            if rest[at] == b'"' {
                return Some(escaped);
            }
            escaped = true;
            match self.next()? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                b'u' => {
                    let hex = self.b.get(self.i..self.i + 4)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 4;
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::each_member;

    fn members(text: &str) -> Option<Vec<(String, String)>> {
        let mut out = Vec::new();
        each_member(text.as_bytes(), |k, v| {
            out.push((k.to_owned(), String::from_utf8(v.to_vec()).unwrap()));
            Some(())
        })?;
        Some(out)
    }

    #[test]
    fn members_come_with_their_raw_values_in_order() {
        let got = members(
            r#" { "a" : [1, {"x": "y\"z"}, -0.5e+3] ,"b":"\u00e9\n","c":{}, "d":true,"e":null } "#,
        )
        .unwrap();
        let want = [
            ("a", r#"[1, {"x": "y\"z"}, -0.5e+3]"#),
            ("b", r#""\u00e9\n""#),
            ("c", "{}"),
            ("d", "true"),
            ("e", "null"),
        ];
        assert_eq!(got.len(), want.len());
        for ((k, v), (wk, wv)) in got.iter().zip(want) {
            assert_eq!((k.as_str(), v.as_str()), (wk, wv));
        }
        assert_eq!(members("{}"), Some(vec![]));
    }

    #[test]
    fn anything_but_valid_json_is_given_up() {
        for text in [
            "",
            "[]",
            "{",
            "{}x",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":1e}"#,
            r#"{"a":tru}"#,
            r#"{"a":nul}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12g4"}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":[1 2]}"#,
            r#"{"a":{"b"}}"#,
            r#"{"a":{1:2}}"#,
            r#"{"\u0061":1}"#,
            r#"{"a":"unterminated}"#,
        ] {
            assert_eq!(members(text), None, "{text:?}");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100), "]".repeat(100));
        assert_eq!(members(&deep), None);
        let fine = format!("{{\"a\":{}{}}}", "[".repeat(99), "]".repeat(99));
        assert!(members(&fine).is_some());
        assert_eq!(each_member(b"{\"a\":\"\xff\"}", |_, _| Some(())), None);
    }
}
