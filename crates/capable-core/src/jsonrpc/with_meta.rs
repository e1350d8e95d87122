//! Params that gain a `_meta` object as they are written: what a relay sends when it
//! adds members of its own (a trace's `traceparent`) to params it has already checked,
//! without making and checking a second params text.

use super::write::Params;

/// `params` with a `_meta` object made of `members` (already-written `"key":value`
/// pairs, comma-separated, valid JSON as they are) written as their first member.
///
/// Made for params without a top-level `_meta` of their own (a relay that found none):
/// their text is written after the `_meta` object as it is, never read into members.
/// Params that carry their own `_meta` get one merged `_meta` instead (these members
/// first; theirs after, ours winning a clash), as
/// [`write_request_with_meta`](super::write_request_with_meta) does. Params that are
/// no object (never MCP's) are written as they are, without the members.
///
/// ```
/// # use capable_core::internal::jsonrpc::{write_request, RequestId, WithMeta};
/// let params = serde_json::json!({"uri": "file:///a"});
/// let mut line = Vec::new();
/// let with = WithMeta::new(r#""traceparent":"00-…-01""#.as_bytes(), &params);
/// write_request(&mut line, &RequestId::Number(1), "resources/read", &with);
/// assert_eq!(
///     String::from_utf8(line).unwrap(),
///     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\
///      \"params\":{\"_meta\":{\"traceparent\":\"00-…-01\"},\"uri\":\"file:///a\"}}\n"
/// );
/// ```
#[derive(Debug)]
pub struct WithMeta<'a, P: ?Sized> {
    members: &'a [u8],
    params: &'a P,
    /// The params may carry a `_meta` of their own (to be merged).
    theirs: bool,
}

impl<'a, P: Params + ?Sized> WithMeta<'a, P> {
    /// `params` with `members` put first in their `_meta`: JSON text, written as it
    /// is (the caller wrote it, never checked again).
    pub fn new(members: &'a [u8], params: &'a P) -> WithMeta<'a, P> {
        WithMeta {
            members,
            params,
            theirs: true,
        }
    }

    /// [`WithMeta::new`] for params the caller knows carry no top-level `_meta` (it
    /// looked): their text is never searched for one. (Params that do would be
    /// written with two.)
    pub fn unmerged(members: &'a [u8], params: &'a P) -> WithMeta<'a, P> {
        WithMeta {
            members,
            params,
            theirs: false,
        }
    }
}

impl<P: Params + ?Sized> Params for WithMeta<'_, P> {
    fn write_json(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(b"{\"_meta\":{");
        out.extend_from_slice(self.members);
        out.push(b'}');
        let at = out.len();
        self.params.write_json(out);
        if self.theirs && super::write::merge_own_meta(out, start, at, self.members).is_some() {
            return;
        }
        let skip = |from: usize| {
            out[from..]
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .map(|n| from + n)
        };
        let open = skip(at).filter(|&i| out[i] == b'{');
        match open.and_then(|i| skip(i + 1).map(|next| (i, out[next]))) {
            // `{}`: nothing after `_meta`.
            Some((_, b'}')) => {
                out.truncate(at);
                out.push(b'}');
            }
            // `{…}`: its members follow `_meta`.
            Some((i, _)) => out[i] = b',',
            // No object: the params as they are.
            None => {
                out.copy_within(at.., start);
                out.truncate(out.len() - (at - start));
            }
        }
    }

    fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        let mut text = Vec::new();
        self.write_json(&mut text);
        serde_json::from_slice(&text)
    }

    fn target(&self, method: crate::Method) -> crate::outbox::Target {
        self.params.target(method)
    }

    fn cache_key(&self) -> Option<String> {
        self.params.cache_key()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, value::RawValue, Value};

    use super::*;

    fn written<P: Params + ?Sized>(members: &str, params: &P) -> String {
        let mut out = b"x".to_vec();
        WithMeta::new(members.as_bytes(), params).write_json(&mut out);
        String::from_utf8(out[1..].to_vec()).unwrap()
    }

    #[test]
    fn the_members_come_first_and_the_params_text_follows_as_it_was() {
        let raw = RawValue::from_string(r#"{ "uri" : "a",  "n":[1, 2] }"#.into()).unwrap();
        let text = written(r#""traceparent":"t""#, &*raw);
        assert_eq!(
            text,
            r#"{"_meta":{"traceparent":"t"}, "uri" : "a",  "n":[1, 2] }"#
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({"_meta": {"traceparent": "t"}, "uri": "a", "n": [1, 2]})
        );
    }

    #[test]
    fn empty_params_get_the_meta_alone() {
        let raw = RawValue::from_string("{ }".into()).unwrap();
        assert_eq!(written(r#""a":1"#, &*raw), r#"{"_meta":{"a":1}}"#);
        assert_eq!(written(r#""a":1"#, &json!({})), r#"{"_meta":{"a":1}}"#);
    }

    #[test]
    fn params_with_their_own_meta_get_one_merged_meta() {
        let params = json!({"_meta": {"traceparent": "old", "k": 2}, "uri": "u"});
        let value: Value =
            serde_json::from_str(&written(r#""traceparent":"new""#, &params)).unwrap();
        assert_eq!(
            value,
            json!({"_meta": {"traceparent": "new", "k": 2}, "uri": "u"})
        );
    }

    #[test]
    fn params_known_without_meta_are_not_searched() {
        let raw = RawValue::from_string(r#"{"uri":"a"}"#.into()).unwrap();
        let mut out = Vec::new();
        WithMeta::unmerged(br#""traceparent":"t""#, &*raw).write_json(&mut out);
        assert_eq!(out, br#"{"_meta":{"traceparent":"t"},"uri":"a"}"#);
    }

    #[test]
    fn params_that_are_no_object_are_written_as_they_are() {
        assert_eq!(written(r#""a":1"#, &json!([1, 2])), "[1,2]");
        assert_eq!(written(r#""a":1"#, &Value::Null), "null");
    }

    #[test]
    fn the_value_target_and_cache_key_are_the_written_params() {
        let params = json!({"uri": "u"});
        let with = WithMeta::new(br#""traceparent":"t""#, &params);
        assert_eq!(
            with.to_value().unwrap(),
            json!({"_meta": {"traceparent": "t"}, "uri": "u"})
        );
        assert_eq!(with.cache_key(), params.cache_key());
        assert_eq!(
            with.target(crate::Method::ReadResource),
            params.target(crate::Method::ReadResource)
        );
    }
}
