//! Writing outgoing messages straight into a byte buffer, one line each: serde_json
//! escapes control characters, so a message never contains a raw newline.

use std::ops::Range;

use serde::Serialize;

use super::{RequestId, RpcError};

/// The params of an outgoing request or notification, written straight into its line.
///
/// Every `Serialize` type is params, written by serde_json. A few params that every
/// read sends ([`UriParams`](crate::model::UriParams)) write their JSON themselves,
/// without serde's generic machinery, which costs more than the rest of the line.
pub trait Params {
    /// Appends the params' JSON text to `out`.
    fn write_json(&self, out: &mut Vec<u8>);
    /// The params as a JSON value (to build a retry on them).
    fn to_value(&self) -> serde_json::Result<serde_json::Value>;
    /// What a request with these params targets, for `method` (one that names a
    /// target: [`Method::target_member`]): the tool, prompt, resource URI or task,
    /// and a tool call's arguments — what a transport may route by (modern HTTP's
    /// `Mcp-Name` and `Mcp-Param-*` headers). Asked only of modern requests. By
    /// default read off [`Params::to_value`].
    ///
    /// [`Method::target_member`]: crate::Method::target_member
    fn target(&self, method: crate::Method) -> crate::outbox::Target {
        let value = self.to_value().unwrap_or_default();
        crate::outbox::Target::of_value(method, value)
    }
    /// The params as the key of a cached answer: canonical JSON (members sorted,
    /// `_meta` left out, `{}` for none), or `None` for params whose answer is never
    /// kept (a multi round-trip retry's, which carry `inputResponses` or
    /// `requestState`). By default made from [`Params::to_value`].
    fn cache_key(&self) -> Option<String> {
        crate::cache::canonical_params(self.to_value().ok()?)
    }
}

impl<T: Serialize + ?Sized> Params for T {
    fn write_json(&self, out: &mut Vec<u8>) {
        write_json(out, self)
    }

    fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }
}

/// Writes a request as one line (`…\n`) at the end of `out`.
pub fn write_request<P: Params + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: &P,
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_id(out, id);
    out.extend_from_slice(b",\"method\":");
    write_name(out, method);
    write_params(out, |out| params.write_json(out));
    out.extend_from_slice(b"}\n");
}

/// Appends `,"params":` and the params `write` writes — or nothing when they are JSON
/// `null`: JSON-RPC lets params be an object or an array, or be left out, never
/// `null` (a server's `roots/list` or `notifications/tools/list_changed` relayed
/// without params must reach the host without the member, not as `"params":null`).
fn write_params(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(b",\"params\":");
    let at = out.len();
    write(out);
    if out[at..] == *b"null" {
        out.truncate(start);
    }
}

/// Writes a request for one of our methods as one line (`…\n`) at the end of `out`:
/// [`write_request`], with the method's name and the members around it copied as
/// one piece.
pub(crate) fn write_method_request<P: Params + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: crate::method::Method,
    params: &P,
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_id(out, id);
    out.extend_from_slice(method.between_id_and_params().as_bytes());
    params.write_json(out);
    out.extend_from_slice(b"}\n");
}

/// Writes a request whose `params` gain a `_meta` object made of `meta_members`
/// (already-serialised `"key":value` pairs, comma-separated), as their first member.
/// `params` must serialise to a JSON object. Returns where the `_meta` object's text
/// lies in `out`.
pub fn write_request_with_meta<P: Params + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: &P,
    meta_members: &[u8],
) -> Range<usize> {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_id(out, id);
    out.extend_from_slice(b",\"method\":");
    write_name(out, method);
    out.extend_from_slice(b",\"params\":");
    let params_at = out.len();
    out.extend_from_slice(b"{\"_meta\":{");
    out.extend_from_slice(meta_members);
    out.push(b'}');
    let at = out.len();
    let meta = params_at + 9..at;
    params.write_json(out);
    if let Some(meta) = merge_own_meta(out, params_at, at, meta_members) {
        out.extend_from_slice(b"}\n");
        return meta;
    }
    match out.get(at..at + 2) {
        // `{}`: nothing to add after `_meta`.
        Some(b"{}") => {
            out.truncate(at);
            out.push(b'}');
        }
        // `{…}`: its members follow `_meta`.
        Some([b'{', _]) => out[at] = b',',
        // Not an object (never the case for MCP params): drop it.
        _ => {
            out.truncate(at);
            out.push(b'}');
        }
    }
    out.extend_from_slice(b"}\n");
    meta
}

/// When the params written at `out[at..]` carry their own top-level `_meta`, rewrites
/// `out[params_at..]` as one params object whose single `_meta`, its first member,
/// holds our members and then theirs (ours win on a clash), instead of two `_meta`
/// members. Returns where that `_meta` lies when it did; the common case (no
/// `"_meta"` in the params at all) costs one scan.
pub(super) fn merge_own_meta(
    out: &mut Vec<u8>,
    params_at: usize,
    at: usize,
    meta_members: &[u8],
) -> Option<Range<usize>> {
    use serde_json::{Map, Value};
    if !out[at..].windows(7).any(|w| w == b"\"_meta\"") {
        return None;
    }
    let mut params = serde_json::from_slice::<Map<String, Value>>(&out[at..]).ok()?;
    let theirs = params.remove("_meta")?;
    let mut ours_text = Vec::with_capacity(meta_members.len() + 2);
    ours_text.push(b'{');
    ours_text.extend_from_slice(meta_members);
    ours_text.push(b'}');
    let mut meta: Map<String, Value> = serde_json::from_slice(&ours_text).unwrap_or_default();
    if let Value::Object(theirs) = theirs {
        for (key, value) in theirs {
            meta.entry(key).or_insert(value);
        }
    }
    out.truncate(params_at);
    out.extend_from_slice(b"{\"_meta\":");
    let start = out.len();
    write_json(out, &meta);
    let end = out.len();
    let rest = out.len();
    write_json(out, &params);
    match out.get(rest..rest + 2) {
        // `{}`: nothing after `_meta`.
        Some(b"{}") => {
            out.truncate(rest);
            out.push(b'}');
        }
        // `{…}`: its members follow `_meta`.
        _ => out[rest] = b',',
    }
    Some(start..end)
}

/// Writes a notification as one line at the end of `out`. `params` of `None` (or
/// params that are JSON `null`) omits the member.
pub fn write_notification<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    method: &str,
    params: Option<&P>,
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    write_name(out, method);
    if let Some(params) = params {
        write_params(out, |out| write_json(out, params));
    }
    out.extend_from_slice(b"}\n");
}

/// Writes a successful response as one line at the end of `out`.
pub fn write_result<R: Serialize + ?Sized>(out: &mut Vec<u8>, id: &RequestId, result: &R) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"result\":");
    write_json(out, result);
    out.extend_from_slice(b"}\n");
}

/// [`write_result`] with the result written by `result`, which writes one JSON value.
pub(crate) fn write_result_with(
    out: &mut Vec<u8>,
    id: &RequestId,
    result: impl FnOnce(&mut Vec<u8>),
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"result\":");
    result(out);
    out.extend_from_slice(b"}\n");
}

/// Writes an error response as one line at the end of `out`.
pub fn write_error(out: &mut Vec<u8>, id: &RequestId, error: &RpcError) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"error\":");
    write_json(out, error);
    out.extend_from_slice(b"}\n");
}

/// Writes an error answer without an id, for a line whose id could not be read. JSON-RPC
/// would give it id `null`, which no MCP schema accepts; 2025-11-25 and later make the
/// id of an error optional for this.
pub fn write_refusal(out: &mut Vec<u8>, error: &RpcError) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"error\":");
    write_json(out, error);
    out.extend_from_slice(b"}\n");
}

/// Writes a request id: an integer two digits at a time, a string through serde_json.
///
/// The digits are written at the end of the first half of an array twice their
/// longest, and a window of fixed length that starts at the first of them is
/// appended, the rest of it cut off again: a copy of a length known when compiling is
/// a few moves, where one of a length known only when running is a call to `memcpy`.
fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    let RequestId::Number(n) = id else {
        return write_json(out, id);
    };
    // An i64 has at most 19 digits, and a sign.
    const LONGEST: usize = 20;
    let mut text = [0u8; 2 * LONGEST];
    let mut at = LONGEST;
    let mut rest = n.unsigned_abs();
    while rest >= 100 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        at -= 2;
        text[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if rest >= 10 {
        let pair = rest as usize * 2;
        at -= 2;
        text[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        text[at] = b'0' + rest as u8;
    }
    if *n < 0 {
        at -= 1;
        text[at] = b'-';
    }
    let Some(window) = text.get(at..at + LONGEST) else {
        return;
    };
    let start = out.len();
    out.extend_from_slice(window);
    out.truncate(start + LONGEST - at);
}

/// `00`, `01`, … `99`: the two digits of every number below 100.
const DIGIT_PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Writes a method name (or another short string) as a JSON string: copied between
/// quotes when nothing in it needs escaping (MCP's method names never do), else
/// through serde_json.
pub(crate) fn write_name(out: &mut Vec<u8>, name: &str) {
    if is_plain(name.as_bytes()) {
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.push(b'"');
    } else {
        write_json(out, name);
    }
}

/// Whether every byte is printable ASCII other than `"` and `\\` (what a JSON string
/// holds unescaped), checked eight bytes at a time; the last eight bytes are checked
/// as one more word (overlapping the one before), not copied into a padded one.
fn is_plain(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    /// A word with the high bit set in each byte of `w` that is zero.
    fn zeros(w: u64) -> u64 {
        w.wrapping_sub(ONES) & !w & HIGHS
    }
    let plain = |chunk: &[u8]| {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // Below 0x20: subtracting 0x20 from each byte borrows into its high bit (for
        // bytes under 0x80; those at or above are refused by `w & HIGHS` anyway).
        let low = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
        let special = zeros(w ^ (ONES * u64::from(b'"')))
            | zeros(w ^ (ONES * u64::from(b'\\')))
            | zeros(w ^ (ONES * 0x7f));
        (low | special | (w & HIGHS)) == 0
    };
    match bytes.len().checked_sub(8) {
        Some(last) => bytes.chunks_exact(8).all(plain) && plain(&bytes[last..]),
        None => bytes
            .iter()
            .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\'),
    }
}

fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Serialising our own types into a Vec cannot fail: they hold no maps with
    // non-string keys and the writer never errors. serde_json escapes control
    // characters, so the line never contains a raw newline.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_plain_exactly_when_no_byte_needs_escaping_or_is_outside_ascii() {
        let naive = |b: &[u8]| {
            b.iter()
                .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
        };
        for len in 0..=17 {
            for at in 0..len.max(1) {
                for byte in 0..=255u8 {
                    let mut name = vec![b'r'; len];
                    if len > 0 {
                        name[at] = byte;
                    }
                    assert_eq!(is_plain(&name), naive(&name), "{name:?}");
                }
            }
        }
    }

    #[test]
    fn params_that_are_null_are_left_out_never_written_as_null() {
        let null = serde_json::Value::Null;
        let mut line = Vec::new();
        write_notification(&mut line, "notifications/tools/list_changed", Some(&null));
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n"
        );
        line.clear();
        write_request(&mut line, &RequestId::Number(3), "roots/list", &null);
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"roots/list\"}\n"
        );
        line.clear();
        let raw = serde_json::value::RawValue::from_string("null".into()).unwrap();
        write_request(&mut line, &RequestId::Number(4), "roots/list", &*raw);
        assert!(!line.windows(4).any(|w| w == b"null"), "{line:?}");
        line.clear();
        // Params that are there are written as they are.
        write_notification(&mut line, "x/y", Some(&serde_json::json!({"a": null})));
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"x/y\",\"params\":{\"a\":null}}\n"
        );
    }

    #[test]
    fn a_request_for_each_method_is_written_as_for_its_name() {
        for method in crate::method::Method::ALL {
            let params = serde_json::json!({ "uri": "file:///a" });
            let (mut by_method, mut by_name) = (Vec::new(), Vec::new());
            write_method_request(&mut by_method, &RequestId::Number(42), method, &params);
            write_request(
                &mut by_name,
                &RequestId::Number(42),
                method.as_str(),
                &params,
            );
            assert_eq!(by_method, by_name, "{method}");
        }
    }

    #[test]
    fn ids_and_names_are_written_as_serde_json_writes_them() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            12345,
            123456,
            i64::MAX,
            -1,
            -10,
            -100,
            -12345,
            i64::MIN,
        ] {
            let mut out = Vec::new();
            write_id(&mut out, &RequestId::Number(n));
            assert_eq!(out, serde_json::to_vec(&n).unwrap());
        }
        let mut out = Vec::new();
        write_id(&mut out, &RequestId::String("a\"b".into()));
        assert_eq!(out, serde_json::to_vec("a\"b").unwrap());
        for name in [
            "resources/read",
            "",
            "notifications/cancelled",
            "q\"uote",
            "back\\slash",
            "tab\t",
            "del\u{7f}",
            "é",
        ] {
            let mut out = Vec::new();
            write_name(&mut out, name);
            assert_eq!(out, serde_json::to_vec(name).unwrap(), "{name:?}");
        }
    }
}
