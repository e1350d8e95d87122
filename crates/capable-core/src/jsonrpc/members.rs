//! The top-level members of a JSON object, each value as its raw text, with every byte
//! checked on the way: what the cache reads its hints (`ttlMs`, `cacheScope`,
//! `resultType`) from without decoding the whole result.
//!
//! A result's hints sit beside its bulk — a read's text, a list's tools — which a
//! derived decoder of the hints alone still walks through serde's generic skipping,
//! several times the cost of the walk here (strings are skipped a vector search at a
//! time). The walk accepts only valid JSON: UTF-8 (checked once for the whole text), no
//! raw control byte in a string (checked once for the whole text, and string by string
//! only when the text has any, as whitespace), valid escapes, the number grammar, exact literals, at
//! most [`MAX_DEPTH`] levels of nesting (serde_json's own limit is 128), nothing but
//! whitespace after the object. It gives up (`None`) on anything else, and on a key with
//! escapes: the caller then decodes as before, so the outcome never differs from
//! serde's (a test holds the two to that on mutated inputs).

use super::{find_quote, has_control_byte};

/// How deeply values may nest below the object (deeper: the caller decodes).
const MAX_DEPTH: usize = 100;

/// Calls `member` with each key (raw, without escapes) and its value's raw text, in
/// order; `None` if `text` is not one valid JSON object (and whitespace), a key has
/// escapes, or `member` says so.
pub(crate) fn each_member<'a>(
    text: &'a [u8],
    mut member: impl FnMut(&'a [u8], &'a [u8]) -> Option<()>,
) -> Option<()> {
    simdutf8::basic::from_utf8(text).ok()?;
    let mut w = Walk {
        b: text,
        i: 0,
        controls: has_control_byte(text),
    };
    w.ws();
    w.eat(b'{')?;
    w.ws();
    if w.peek() == Some(b'}') {
        w.i += 1;
    } else {
        loop {
            w.ws();
            let key_start = w.i;
            if w.string()? {
                return None;
            }
            let key = &text[key_start + 1..w.i - 1];
            w.ws();
            w.eat(b':')?;
            w.ws();
            let start = w.i;
            w.value(0)?;
            member(key, &text[start..w.i])?;
            w.ws();
            match w.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    w.ws();
    (w.i == text.len()).then_some(())
}

struct Walk<'a> {
    b: &'a [u8],
    i: usize,
    /// Whether the text holds a byte below 0x20 anywhere (whitespace, or a raw
    /// control byte, which no string may hold).
    controls: bool,
}

impl Walk<'_> {
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

    /// One value, `depth` levels below the object.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' if depth >= MAX_DEPTH => None,
            b'{' => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    if self.peek() != Some(b'"') {
                        return None;
                    }
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => continue,
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => continue,
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
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
            out.push((
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ));
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
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(101), "]".repeat(101));
        assert_eq!(members(&deep), None);
        let fine = format!("{{\"a\":{}{}}}", "[".repeat(100), "]".repeat(100));
        assert!(members(&fine).is_some());
        assert_eq!(each_member(b"{\"a\":\"\xff\"}", |_, _| Some(())), None);
    }
}
