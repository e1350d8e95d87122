//! Writing outgoing messages straight into a byte buffer, one line each: serde_json
//! escapes control characters, so a message never contains a raw newline.

use serde::Serialize;

use super::{RequestId, RpcError};

/// Writes a request as one line (`…\n`) at the end of `out`.
pub fn write_request<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: &P,
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"method\":");
    write_json(out, method);
    out.extend_from_slice(b",\"params\":");
    write_json(out, params);
    out.extend_from_slice(b"}\n");
}

/// Writes a request whose `params` gain a `_meta` object made of `meta_members`
/// (already-serialised `"key":value` pairs, comma-separated). `params` must serialise
/// to a JSON object.
pub fn write_request_with_meta<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: &P,
    meta_members: &[u8],
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"method\":");
    write_json(out, method);
    out.extend_from_slice(b",\"params\":");
    let params_at = out.len();
    out.extend_from_slice(b"{\"_meta\":{");
    out.extend_from_slice(meta_members);
    out.push(b'}');
    let at = out.len();
    write_json(out, params);
    if merge_own_meta(out, params_at, at, meta_members) {
        out.extend_from_slice(b"}\n");
        return;
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
}

/// When the params written at `out[at..]` carry their own top-level `_meta`, rewrites
/// `out[params_at..]` as one params object whose single `_meta` holds our members and
/// then theirs (ours win on a clash), instead of two `_meta` members. Returns whether
/// it did; the common case (no `"_meta"` in the params at all) costs one scan.
fn merge_own_meta(out: &mut Vec<u8>, params_at: usize, at: usize, meta_members: &[u8]) -> bool {
    use serde_json::{Map, Value};
    if !out[at..].windows(7).any(|w| w == b"\"_meta\"") {
        return false;
    }
    let Ok(mut params) = serde_json::from_slice::<Map<String, Value>>(&out[at..]) else {
        return false;
    };
    let Some(theirs) = params.remove("_meta") else {
        return false;
    };
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
    params.insert("_meta".into(), Value::Object(meta));
    out.truncate(params_at);
    write_json(out, &params);
    true
}

/// Writes a notification as one line at the end of `out`. `params` of `None` omits the
/// member.
pub fn write_notification<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    method: &str,
    params: Option<&P>,
) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    write_json(out, method);
    if let Some(params) = params {
        out.extend_from_slice(b",\"params\":");
        write_json(out, params);
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

/// Writes an error response as one line at the end of `out`.
pub fn write_error(out: &mut Vec<u8>, id: &RequestId, error: &RpcError) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"error\":");
    write_json(out, error);
    out.extend_from_slice(b"}\n");
}

fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Serialising our own types into a Vec cannot fail: they hold no maps with
    // non-string keys and the writer never errors. serde_json escapes control
    // characters, so the line never contains a raw newline.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}
