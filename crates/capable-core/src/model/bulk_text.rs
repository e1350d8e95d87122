//! Decoding the long strings of a result — a resource's `text`, a `blob` — cheaply.
//!
//! Read as a string, serde_json looks at every byte of a long text for the closing
//! quote, an escape or a raw control character, eight bytes a step. Read as bytes it
//! finds the closing quote or an escape with a vectorised search and leaves two checks
//! out: raw control characters and UTF-8. This decoder asks for bytes and makes the
//! UTF-8 check itself; [`Payload::decode`](crate::Payload::decode) makes both for the
//! whole payload before any decode (a raw control byte or invalid UTF-8 sends it
//! through the full, strict parse), so the field is exactly as strict as a plain
//! `String` and several times cheaper to read.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::SharedStr;

/// For `#[serde(default, deserialize_with = "bulk_text::optional")]` on an
/// `Option<SharedStr>`: `null` is `None`, a string is `Some`.
pub(crate) fn optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SharedStr>, D::Error> {
    Ok(Option::<BulkText>::deserialize(d)?.map(|t| t.0))
}

struct BulkText(SharedStr);

impl<'de> Deserialize<'de> for BulkText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(TextVisitor).map(BulkText)
    }
}

struct TextVisitor;

impl TextVisitor {
    fn utf8<E: de::Error>(bytes: &[u8]) -> Result<SharedStr, E> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(SharedStr::from(text)),
            Err(e) => Err(E::custom(format!("invalid UTF-8 in a string: {e}"))),
        }
    }
}

impl<'de> Visitor<'de> for TextVisitor {
    type Value = SharedStr;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    // Deserializers that hand out strings (a `serde_json::Value`, say) checked them.
    fn visit_str<E: de::Error>(self, v: &str) -> Result<SharedStr, E> {
        Ok(SharedStr::from(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<SharedStr, E> {
        Ok(SharedStr::from(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<SharedStr, E> {
        Self::utf8(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<SharedStr, E> {
        Self::utf8(&v)
    }
}

#[cfg(test)]
mod tests {
    use crate::model::ReadResourceResult;
    use crate::Incoming;

    /// Decodes a `resources/read` response line the way the client does.
    fn read(line: &str) -> Result<ReadResourceResult, String> {
        match Incoming::parse(line.as_bytes().to_vec()).map_err(|e| e.to_string())? {
            Incoming::Result { result, .. } => result.decode().map_err(|e| e.to_string()),
            other => Err(format!("not a result: {other:?}")),
        }
    }

    fn line(text_json: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"contents":[{{"uri":"a://b","text":{text_json}}}]}}}}"#
        )
    }

    #[test]
    fn text_decodes_exactly_as_a_string_would() {
        for text in [
            "plain",
            "",
            "line one\nline two\t\"quoted\" \\ back",
            "ünïcödé ✓ 🦀",
            "\u{1}\u{1f} control characters, escaped on the wire",
        ] {
            let wire = serde_json::to_string(text).unwrap();
            let got = read(&line(&wire)).unwrap();
            assert_eq!(got.contents[0].text.as_deref(), Some(text), "{wire}");
        }
        let got = read(&line(r#""\u00e9\ud83e\udd80""#)).unwrap();
        assert_eq!(got.contents[0].text.as_deref(), Some("é🦀"));
        let got = read(&line("null")).unwrap();
        assert_eq!(got.contents[0].text, None);
    }

    #[test]
    fn text_is_refused_where_a_string_would_be() {
        for bad in [
            "\"raw \u{1} control\"",
            "\"raw\ttab\"",
            "\"escaped \\n and raw \u{2} control\"",
            r#""\ud800 lone surrogate""#,
            r#""\x""#,
            "[104, 105]",
            "42",
            r#""unterminated"#,
        ] {
            assert!(read(&line(bad)).is_err(), "{bad:?} should be refused");
        }
        // Invalid UTF-8 on the wire.
        let mut bytes = line("\"ab\"").into_bytes();
        let at = bytes.iter().position(|&b| b == b'a').unwrap();
        bytes[at] = 0xff;
        let parsed = Incoming::parse(bytes).unwrap();
        let Incoming::Result { result, .. } = parsed else {
            panic!("not a result")
        };
        assert!(result.decode::<ReadResourceResult>().is_err());
    }
}
