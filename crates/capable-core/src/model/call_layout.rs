//! `tools/call` results taken apart member by member, without serde's generic
//! machinery for the result itself.
//!
//! A tool's result is mostly `{"content":[{"type":"text","text":…}],"isError":false}`.
//! Through the derived `Deserialize` (a flattened map for the members it does not name,
//! a `serde_json::Value` per content block) that costs several times what building the
//! blocks does. Here the result is walked once by the checking cursor of
//! `jsonrpc/members.rs` — every byte checked: UTF-8, control bytes, escapes, numbers,
//! literals, nesting — and each part is made directly: a content block that is an
//! object becomes a map of its members, a string without escapes is copied as it is,
//! and every other value (a number, an escaped string, `annotations`,
//! `structuredContent`, `_meta`) is decoded by serde_json from its own text. The result
//! is the value serde makes of the whole.
//!
//! A key with escapes, a duplicate member, `content` that is not an array, `isError`
//! that is not a boolean or `null`, or text that is not plainly valid JSON make it give
//! up, and the result goes through serde as before, which judges it (a test holds the
//! two to the same outcome on mutated results).

use serde_json::{Map, Value};

use super::CallToolResult;
use crate::jsonrpc::{once, Walk};

/// The result in `raw` (its JSON text, possibly followed by whitespace); `None` to
/// leave it to serde.
pub(crate) fn call_result(raw: &[u8]) -> Option<CallToolResult> {
    let mut c = Walk::new(raw)?;
    let mut content = None;
    let mut structured = None;
    let mut is_error = None;
    let mut extra = Map::new();
    c.object(|c, key| match key {
        "content" => once(&mut content, blocks(c)?),
        "structuredContent" => once(
            &mut structured,
            serde_json::from_slice(c.raw_value()?).ok()?,
        ),
        "isError" => once(&mut is_error, boolean(c.raw_value()?)?),
        _ if extra.contains_key(key) => None,
        _ => {
            let value = plain(c)?;
            extra.insert(key.to_owned(), value);
            Some(())
        }
    })?;
    c.end()?;
    Some(CallToolResult {
        content: content.unwrap_or_default(),
        structured_content: structured.flatten(),
        is_error: is_error.flatten(),
        extra,
    })
}

/// `[block, …]`: each object a map of its members, anything else decoded as a value.
fn blocks(c: &mut Walk<'_>) -> Option<Vec<Value>> {
    let mut blocks = Vec::with_capacity(1);
    c.array(|c| {
        let block = match c.peek_value()? {
            b'{' => {
                let mut map = Map::new();
                // A duplicate replaces the value in its first place, as serde_json's
                // map does.
                c.object(|c, key| {
                    let value = plain(c)?;
                    map.insert(key.to_owned(), value);
                    Some(())
                })?;
                Value::Object(map)
            }
            _ => plain(c)?,
        };
        blocks.push(block);
        Some(())
    })?;
    Some(blocks)
}

/// The value at the cursor: a string without escapes copied as it is, a literal as
/// what it is, anything else checked, then decoded by serde_json from its text.
fn plain(c: &mut Walk<'_>) -> Option<Value> {
    if let Some(text) = c.plain_string() {
        return Some(Value::String(text.to_owned()));
    }
    Some(match c.raw_value()? {
        b"null" => Value::Null,
        b"true" => Value::Bool(true),
        b"false" => Value::Bool(false),
        raw => serde_json::from_slice(raw).ok()?,
    })
}

/// `true`, `false` or `null` (what an `Option<bool>` takes).
fn boolean(raw: &[u8]) -> Option<Option<bool>> {
    match raw {
        b"true" => Some(Some(true)),
        b"false" => Some(Some(false)),
        b"null" => Some(None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::call_result;
    use crate::model::CallToolResult;
    use crate::mutate::by_serde;

    #[test]
    fn the_usual_results_are_read_as_serde_reads_them() {
        for raw in [
            r#"{"content":[{"type":"text","text":"ok"}],"isError":false}"#,
            r#"{"content":[]}"#,
            r#"{}"#,
            r#" { "isError" : null , "content" : [ { "text" : "a\nb \u00e9" , "type" : "text" } ] } "#,
            r#"{"content":[{"type":"image","data":"AAEC","mimeType":"image/png","annotations":{"priority":0.5}}],"structuredContent":{"n":1.5e3,"ok":true},"_meta":{"k":[1,-2]},"resultType":"complete"}"#,
            r#"{"content":[1,"two",null,[3]],"isError":true,"extra":"x"}"#,
            r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
            r#"{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}],"structuredContent":null}"#,
        ] {
            let direct = call_result(raw.as_bytes()).map(|r| format!("{r:?}"));
            assert!(direct.is_some(), "{raw} should be read");
            assert_eq!(direct, by_serde::<CallToolResult>(raw.as_bytes()), "{raw}");
        }
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        for raw in [
            r#"{"content":[],"content":[]}"#,
            r#"{"isError":false,"isError":true}"#,
            r#"{"x":1,"x":2}"#,
            r#"{"content":null}"#,
            r#"{"content":{}}"#,
            r#"{"isError":"no"}"#,
            r#"{"c\u006fntent":[]}"#,
            r#"{"content":[{"type":"text","text":"raw	tab"}]}"#,
            r#"{"content":[]} x"#,
            r#"{"content":[{"type":"text",}]}"#,
            r#"[]"#,
            "",
        ] {
            assert!(
                call_result(raw.as_bytes()).is_none(),
                "{raw} should be left to serde"
            );
        }
    }

    /// Mutated results: whatever the direct reader takes, serde takes with the same
    /// value; through a whole response line, the decode gives serde's outcome.
    #[test]
    fn the_reader_never_disagrees_with_serde_on_mutated_results() {
        let seeds = [
            r#"{"content":[{"type":"text","text":"hello \"w\" \n é"}],"isError":false}"#,
            r#"{"content":[{"type":"image","data":"AAEC","mimeType":"image/png"},{"type":"text","text":"x","annotations":{"audience":["user"],"priority":1}}],"structuredContent":{"t":-1.5e2,"ok":true,"n":null},"_meta":{"a":[]}}"#,
            r#" { "isError" : true , "content" : [ 7 , "s" , null ] , "resultType" : "complete" } "#,
        ];
        const BYTES: &[u8] = b"{}[]\",:\\ \t\n0123456789.eE+-abcdefnrtu\x01\x7f\xc3\xa9\xff";
        let read = crate::mutate::agrees_with_serde(
            0x5851_f42d_4c95_7f2d,
            &seeds,
            BYTES,
            50_000,
            call_result,
            CallToolResult::from_payload,
        );
        assert!(read > 5000, "too few mutations read to mean much: {read}");
    }
}
