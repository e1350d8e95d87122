//! Outgoing lines in the layout the connection writes, read without serde.
//!
//! The connection writes every message compactly, members in a fixed order:
//! `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"a://b"}}`. The
//! policy needs a few members of each (see [`Outgoing`](super::message::Outgoing)), and
//! reading them through serde's derived decoder costs more than building the whole
//! HTTP request. This reader walks that layout byte by byte and hands back where the
//! members are.
//!
//! It takes compact JSON only (no whitespace between tokens), strings without escapes,
//! integers without fraction or exponent, nesting no deeper than [`MAX_DEPTH`], and
//! each member it reads at most once. Anything else — which the connection does not
//! write — makes it give up, and the line is read by serde as before; whatever it does
//! take is valid JSON that serde reads to the same members (a test holds the two to
//! that on mutated lines).

use crate::jsonrpc::once;

/// The members the policy reads of one message; `None` where a member is absent.
#[derive(Debug, Default)]
pub(super) struct Members<'a> {
    /// `id`, as its JSON text.
    pub id: Option<&'a [u8]>,
    pub method: Option<&'a str>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    pub version: Option<&'a str>,
    pub name: Option<&'a str>,
    pub uri: Option<&'a str>,
    pub task_id: Option<&'a str>,
    /// `params.arguments`, as its JSON text.
    pub arguments: Option<&'a [u8]>,
    /// `params.requestId`, as its JSON text.
    pub request_id: Option<&'a [u8]>,
}

/// How deep arrays and objects may nest in a line this reader takes (serde_json's own
/// limit is higher: a deeper line goes to it).
const MAX_DEPTH: usize = 32;

/// The members of `line` (one message, perhaps followed by whitespace), when it is in
/// the connection's layout; `None` for anything else.
pub(super) fn read(line: &[u8]) -> Option<Members<'_>> {
    let end = line
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?
        + 1;
    let b = &line[..end];
    // No raw control byte anywhere (so none in a string, and no whitespace to skip)
    // and valid UTF-8: every string without escapes is then valid text as it stands.
    if crate::jsonrpc::has_control_byte(b) {
        return None;
    }
    let text = simdutf8::basic::from_utf8(b).ok()?;
    let mut c = Cursor { b, text, i: 0 };
    let mut m = Members::default();
    let (mut params, mut meta) = (false, false);
    c.object(0, |c, key| match key {
        "id" => once(&mut m.id, c.value(1)?),
        "method" => once(&mut m.method, c.string()?),
        "params" => {
            if std::mem::replace(&mut params, true) {
                return None;
            }
            c.object(1, |c, key| match key {
                "_meta" => {
                    if std::mem::replace(&mut meta, true) {
                        return None;
                    }
                    c.object(2, |c, key| match key {
                        "io.modelcontextprotocol/protocolVersion" => {
                            once(&mut m.version, c.string()?)
                        }
                        _ => c.value(3).map(drop),
                    })
                }
                "name" => once(&mut m.name, c.string()?),
                "uri" => once(&mut m.uri, c.string()?),
                "taskId" => once(&mut m.task_id, c.string()?),
                "arguments" => once(&mut m.arguments, c.value(2)?),
                "requestId" => once(&mut m.request_id, c.value(2)?),
                _ => c.value(2).map(drop),
            })
        }
        _ => c.value(1).map(drop),
    })?;
    (c.i == b.len()).then_some(m)
}

struct Cursor<'a> {
    b: &'a [u8],
    /// The same bytes, valid UTF-8.
    text: &'a str,
    i: usize,
}

impl<'a> Cursor<'a> {
    fn eat(&mut self, byte: u8) -> bool {
        if self.b.get(self.i) == Some(&byte) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// An object at nesting `depth`: each member's key to `member`, which reads its
    /// value.
    fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH || !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.string()?;
            if !self.eat(b':') {
                return None;
            }
            member(self, key)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }

    /// A string without escapes.
    fn string(&mut self) -> Option<&'a str> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.i;
        let len = memchr::memchr2(b'"', b'\\', &self.b[start..])?;
        if self.b[start + len] != b'"' {
            return None;
        }
        self.i = start + len + 1;
        // Quotes are ASCII: both ends fall on char boundaries.
        self.text.get(start..start + len)
    }

    /// Any value at nesting `depth`, as its JSON text.
    fn value(&mut self, depth: usize) -> Option<&'a [u8]> {
        let start = self.i;
        match *self.b.get(self.i)? {
            b'"' => self.string().map(drop)?,
            b'{' => self.object(depth, |c, _| c.value(depth + 1).map(drop))?,
            b'[' => self.array(depth)?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            b'-' | b'0'..=b'9' => self.integer()?,
            _ => return None,
        }
        Some(&self.b[start..self.i])
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH || !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(());
        }
        loop {
            self.value(depth + 1)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b']').then_some(());
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// `-?(0|[1-9][0-9]*)`, at most 18 digits (any integer serde_json reads exactly).
    /// A fraction, an exponent or a longer integer goes to serde.
    fn integer(&mut self) -> Option<()> {
        self.eat(b'-');
        let digits = self.b[self.i..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let leading_zero = digits > 1 && self.b[self.i] == b'0';
        if digits == 0 || digits > 18 || leading_zero {
            return None;
        }
        self.i += digits;
        match self.b.get(self.i) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::read;
    use crate::jsonrpc::{self, RequestId};
    use crate::{ClientConfig, ProtocolVersion};

    /// Lines as the connection writes them, in both eras.
    fn written() -> Vec<Vec<u8>> {
        let meta = crate::negotiation::modern_meta(
            &ClientConfig::default(),
            ProtocolVersion::LATEST_MODERN,
        );
        let meta = serde_json::to_vec(&meta).unwrap();
        let meta = &meta[1..meta.len() - 1];
        let requests = [
            ("resources/read", json!({ "uri": "file:///notes.md" })),
            (
                "tools/call",
                json!({ "name": "echo", "arguments": { "x": [1, true, null, "s", {}] } }),
            ),
            ("prompts/get", json!({ "name": "greet", "arguments": {} })),
            ("tasks/get", json!({ "taskId": "t-1" })),
            ("tools/list", json!({})),
        ];
        let mut lines = Vec::new();
        for (n, (method, params)) in requests.iter().enumerate() {
            let id = RequestId::Number(n as i64 + 7);
            let mut line = Vec::new();
            jsonrpc::write_request(&mut line, &id, method, params);
            lines.push(line);
            let mut line = Vec::new();
            jsonrpc::write_request_with_meta(&mut line, &id, method, params, meta);
            lines.push(line);
        }
        let mut line = Vec::new();
        let cancel = json!({ "requestId": 7, "reason": "stopped" });
        jsonrpc::write_notification(&mut line, "notifications/cancelled", Some(&cancel));
        lines.push(line);
        let mut line = Vec::new();
        jsonrpc::write_notification::<()>(&mut line, "notifications/initialized", None);
        lines.push(line);
        lines
    }

    #[test]
    fn every_line_the_connection_writes_is_read_without_serde() {
        for line in written() {
            let text = String::from_utf8_lossy(&line);
            let m = read(&line).unwrap_or_else(|| panic!("not read: {text}"));
            let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
            let raw = |r: Option<&[u8]>| {
                r.map(|r| serde_json::from_slice::<serde_json::Value>(r).unwrap())
            };
            assert_eq!(raw(m.id), value.get("id").cloned(), "{text}");
            assert_eq!(m.method, value["method"].as_str(), "{text}");
            let params = &value["params"];
            let version = params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
            assert_eq!(m.version, version, "{text}");
            assert_eq!(m.name, params["name"].as_str(), "{text}");
            assert_eq!(m.uri, params["uri"].as_str(), "{text}");
            assert_eq!(m.task_id, params["taskId"].as_str(), "{text}");
            assert_eq!(raw(m.arguments), params.get("arguments").cloned(), "{text}");
            assert_eq!(
                raw(m.request_id),
                params.get("requestId").cloned(),
                "{text}"
            );
        }
    }

    #[test]
    fn what_the_connection_does_not_write_is_left_to_serde() {
        for line in [
            r#" {"id":1,"method":"ping"}"#,
            r#"{"id": 1,"method":"ping"}"#,
            r#"{"id":1,"method":"p\u0069ng"}"#,
            r#"{"id":1.5,"method":"ping"}"#,
            r#"{"id":1e3,"method":"ping"}"#,
            r#"{"id":01,"method":"ping"}"#,
            r#"{"id":1234567890123456789,"method":"ping"}"#,
            r#"{"id":1,"id":2,"method":"ping"}"#,
            r#"{"id":1,"method":null}"#,
            r#"{"id":1,"method":"ping","params":null}"#,
            r#"{"id":1,"method":"ping","params":{"_meta":{},"_meta":{}}}"#,
            r#"{"id":1,"method":"ping","params":{"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}"#,
            r#"{"id":1,"method":"ping"} x"#,
            r#"{"id":1,"method":"ping"}}"#,
            r#"{"id":1,"method":"ping",}"#,
            r#"{"id":tru,"method":"ping"}"#,
            r#"{"id":1,"method":"ping	"}"#,
            r#"[{"id":1}]"#,
        ] {
            assert!(
                read(line.as_bytes()).is_none(),
                "{line} should be left to serde"
            );
        }
        // Trailing whitespace (the line's newline) is fine.
        assert!(read(b"{\"id\":1,\"method\":\"ping\"}\n").is_some());
    }
}
