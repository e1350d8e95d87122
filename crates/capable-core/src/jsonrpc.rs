//! JSON-RPC 2.0 framing: reading one incoming message without decoding its payload,
//! and writing outgoing messages straight into a byte buffer.
//!
//! Every MCP message is a JSON-RPC request, notification or response. The client reads
//! an incoming message only far enough to route it: the `id`, the `method`, and *where*
//! the `result` or `params` lie in the line. The payload is decoded later, once, into
//! the one type the waiting caller expects — never trial-decoded against every result
//! type.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A request id. MCP forbids `null`; capable issues integers and accepts strings from
/// servers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (what capable issues).
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The error object of a JSON-RPC error response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (`-32601` method not found, `-32602` invalid params, …).
    pub code: i64,
    /// The server's message.
    pub message: String,
    /// Extra data, as the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, " data: {data}")?;
        }
        Ok(())
    }
}

/// Well-known error codes.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist, or its capability was not advertised.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (2026-07-28: also resource not found).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Resource not found (legacy revisions).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// 2026-07-28: `MCP-Protocol-Version` header and `_meta` disagree.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability that was not declared.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the request's protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// One received line, kept whole, with the place of its payload.
///
/// The line's bytes are moved, not copied, to whoever handles the message; the payload
/// (`result` of a response, `params` of a request or notification) is a range into them.
#[derive(Debug)]
pub struct Payload {
    line: Vec<u8>,
    range: Range<usize>,
}

impl Payload {
    /// The payload's raw JSON text.
    pub fn json(&self) -> &str {
        // The range was cut from a `&RawValue` that serde_json validated as UTF-8.
        std::str::from_utf8(&self.line[self.range.clone()]).unwrap_or("null")
    }

    /// The whole message this payload came in.
    pub fn message(&self) -> &[u8] {
        &self.line
    }

    /// Decodes the payload into the one type the caller expects.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.line[self.range.clone()])
    }

    /// An empty-object payload, for messages that carry none.
    fn empty(line: Vec<u8>) -> Self {
        Payload { line, range: 0..0 }
    }

    /// Whether the message had no payload at all.
    pub fn is_absent(&self) -> bool {
        self.range.is_empty()
    }

    /// Decodes the payload, treating an absent one as `{}`.
    pub fn decode_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, serde_json::Error> {
        if self.is_absent() {
            Ok(T::default())
        } else {
            self.decode()
        }
    }
}

/// An incoming message, classified.
#[derive(Debug)]
pub enum Incoming {
    /// A request from the server (it expects a response).
    Request {
        /// The server's id for it.
        id: RequestId,
        /// The method name.
        method: String,
        /// Its `params`.
        params: Payload,
    },
    /// A notification from the server.
    Notification {
        /// The method name.
        method: String,
        /// Its `params`.
        params: Payload,
    },
    /// A successful response to one of our requests.
    Result {
        /// The id of our request.
        id: RequestId,
        /// Its `result`.
        result: Payload,
    },
    /// An error response. `id` is `None` when the server could not read our id.
    Error {
        /// The id of our request, when the server gave one.
        id: Option<RequestId>,
        /// The error.
        error: RpcError,
        /// The whole message as received.
        message: Vec<u8>,
    },
}

/// Why an incoming line is not a JSON-RPC message capable can use.
#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    /// The line is not JSON, or not an object.
    #[error("not a JSON-RPC message: {0}")]
    NotJson(serde_json::Error),
    /// The line is a JSON array: a batch, which capable never sends and so never expects.
    #[error("a JSON-RPC batch, which is not expected here")]
    Batch,
    /// JSON, but neither request, notification nor response.
    #[error("JSON but not a JSON-RPC message: {0}")]
    Malformed(&'static str),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    // `"result": null` is a result (JSON-RPC lets the method decide its value), not a
    // missing member: keep it so the answer still reaches its waiter.
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// A member that is present, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

fn range_of(line: &[u8], raw: &RawValue) -> Range<usize> {
    let start = raw.get().as_ptr() as usize - line.as_ptr() as usize;
    start..start + raw.get().len()
}

impl Incoming {
    /// Classifies one line. Never panics, whatever the bytes.
    pub fn parse(line: Vec<u8>) -> Result<Incoming, FramingError> {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'[') {
            return Err(FramingError::Batch);
        }
        let env: Envelope<'_> = serde_json::from_slice(&line).map_err(FramingError::NotJson)?;
        if env.jsonrpc.as_deref() != Some("2.0") {
            return Err(FramingError::Malformed("\"jsonrpc\" is not \"2.0\""));
        }
        match (env.method, env.id, env.result, env.error) {
            (Some(method), Some(id), None, None) => {
                let method = method.into_owned();
                let range = env.params.map(|p| range_of(&line, p));
                let params = match range {
                    Some(range) => Payload { line, range },
                    None => Payload::empty(line),
                };
                Ok(Incoming::Request { id, method, params })
            }
            (Some(method), None, None, None) => {
                let method = method.into_owned();
                let range = env.params.map(|p| range_of(&line, p));
                let params = match range {
                    Some(range) => Payload { line, range },
                    None => Payload::empty(line),
                };
                Ok(Incoming::Notification { method, params })
            }
            (None, Some(id), Some(result), None) => {
                let range = range_of(&line, result);
                Ok(Incoming::Result {
                    id,
                    result: Payload { line, range },
                })
            }
            (None, id, None, Some(error)) => Ok(Incoming::Error {
                id,
                error,
                message: line,
            }),
            (None, Some(_), None, None) => Err(FramingError::Malformed(
                "a response with neither result nor error",
            )),
            (None, _, Some(_), Some(_)) => Err(FramingError::Malformed(
                "a response with both result and error",
            )),
            (Some(_), _, _, _) => Err(FramingError::Malformed("a request that carries a result")),
            (None, None, Some(_), None) => Err(FramingError::Malformed("a result without an id")),
            (None, None, None, None) => Err(FramingError::Malformed("no method, no id")),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Incoming, FramingError> {
        Incoming::parse(s.as_bytes().to_vec())
    }

    #[test]
    fn a_result_is_routed_by_id_and_its_payload_kept_raw() {
        let m = parse(r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}"#).unwrap();
        match m {
            Incoming::Result { id, result } => {
                assert_eq!(id, RequestId::Number(7));
                assert_eq!(result.json(), r#"{"contents":[]}"#);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requests_notifications_and_errors_are_told_apart() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).unwrap(),
            Incoming::Request { method, params, .. } if method == "ping" && params.is_absent()
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}"#).unwrap(),
            Incoming::Notification { method, .. } if method == "notifications/message"
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}}"#).unwrap(),
            Incoming::Error { id: Some(RequestId::Number(3)), error, .. } if error.code == -32601
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#).unwrap(),
            Incoming::Error { id: None, .. }
        ));
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        for line in [
            "",
            "hello",
            "{",
            "[]",
            "null",
            "42",
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            "\u{0}\u{1}",
        ] {
            assert!(parse(line).is_err(), "{line:?} should be refused");
        }
    }

    #[test]
    fn written_messages_are_single_lines() {
        let mut out = Vec::new();
        write_request(
            &mut out,
            &RequestId::Number(1),
            "tools/call",
            &serde_json::json!({"name": "echo", "arguments": {"message": "a\nb"}}),
        );
        write_notification::<()>(&mut out, "notifications/initialized", None);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches('\n').count(), 2);
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["jsonrpc"], "2.0");
        }
    }
}
