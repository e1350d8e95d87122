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

use bytes::Bytes;
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
/// The line's bytes are shared, never copied, with whoever handles the message (a
/// transport hands out lines as slices of its read buffer); the payload (`result` of a
/// response, `params` of a request or notification) is a range into them. Decoded
/// types own their data, so a payload is meant to be decoded and dropped, not kept.
#[derive(Debug)]
pub struct Payload {
    line: Bytes,
    range: Range<usize>,
    found: Found,
}

/// How a payload's range was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// By parsing the whole message: the range is exactly the value.
    ByParse,
    /// Read off the line's shape without parsing it (see [`Incoming::parse`]): the
    /// value starts at the range's start and the range runs to the envelope's closing
    /// brace; the one parse that decodes the value verifies the rest.
    ByShape,
}

impl Payload {
    /// The payload's raw JSON text.
    pub fn json(&self) -> &str {
        let range = match self.found {
            Found::ByParse => self.range.clone(),
            Found::ByShape => match exact_result_range(&self.line) {
                Ok(range) => range,
                Err(_) => return "null",
            },
        };
        // A parsed range was cut from a `&RawValue` that serde_json validated as UTF-8.
        std::str::from_utf8(&self.line[range]).unwrap_or("null")
    }

    /// Whether the payload's raw text contains `needle`: a cheap pre-check before a
    /// decode (it may look a little past the value, never at less than all of it).
    pub fn mentions(&self, needle: &str) -> bool {
        memchr::memmem::find(&self.line[self.range.clone()], needle.as_bytes()).is_some()
    }

    /// The whole message this payload came in.
    pub fn message(&self) -> &[u8] {
        &self.line
    }

    /// Decodes the payload into the one type the caller expects.
    ///
    /// A payload found by shape is decoded in place. Should anything but the
    /// envelope's closing brace follow the value, the whole message is parsed after
    /// all and the value decoded from its exact place: a valid message is never
    /// refused for its layout, and an invalid one is refused with the parse's error.
    ///
    /// A payload found by shape that holds a raw control byte or is not UTF-8 also
    /// goes through the full parse first, which refuses either inside a string —
    /// including strings the decode would skip (members the type does not name), and
    /// the long text fields read as bytes (see `model::bulk_text`). A parsed payload
    /// has had that check.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        let raw = &self.line[self.range.clone()];
        if self.found == Found::ByParse {
            return serde_json::from_slice(raw);
        }
        if !has_control_byte(raw) && simdutf8::basic::from_utf8(raw).is_ok() {
            let mut de = serde_json::Deserializer::from_slice(raw);
            let value = T::deserialize(&mut de)?;
            if de.end().is_ok() {
                return Ok(value);
            }
        }
        serde_json::from_slice(&self.line[exact_result_range(&self.line)?])
    }

    /// An empty-object payload, for messages that carry none.
    fn empty(line: Bytes) -> Self {
        Payload::parsed(line, 0..0)
    }

    fn parsed(line: Bytes, range: Range<usize>) -> Self {
        Payload {
            line,
            range,
            found: Found::ByParse,
        }
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

/// Whether `bytes` holds a byte below 0x20 (JSON allows one only as whitespace between
/// tokens). Branch-free, so it compiles to vector compares; the decode that follows
/// reads every byte anyway.
fn has_control_byte(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .copied()
        .min()
        .is_some_and(|lowest| lowest < 0x20)
}

/// How a compact success response starts when its members come in the usual order
/// (`jsonrpc`, `id`, `result`), as most servers write them.
const RESULT_PREFIX: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
const RESULT_KEY: &[u8] = b",\"result\":";

/// Reads a success response off the line's shape without parsing it: the integer id
/// right after the prefix, and the result from after `"result":` to the line's closing
/// brace. `None` for any other shape (the message is then parsed whole).
fn result_by_shape(line: &[u8]) -> Option<(i64, Range<usize>)> {
    let rest = line.strip_prefix(RESULT_PREFIX)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    // At most 18 digits always fit an i64; JSON forbids leading zeros.
    if digits == 0 || digits > 18 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    let id = rest[..digits]
        .iter()
        .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    let value = rest[digits..].strip_prefix(RESULT_KEY)?;
    let start = line.len() - value.len();
    let close = line.iter().rposition(|b| !b.is_ascii_whitespace())?;
    (line[close] == b'}' && close > start).then_some((id, start..close))
}

/// The exact range of a success response's `result`, from a full parse.
fn exact_result_range(line: &[u8]) -> Result<Range<usize>, serde_json::Error> {
    use serde::de::Error as _;
    match Incoming::parse_shape(line) {
        Ok(Shape::Result { range, .. }) => Ok(range),
        Ok(_) => Err(serde_json::Error::custom("not a success response")),
        Err(FramingError::NotJson(e)) => Err(e),
        Err(e) => Err(serde_json::Error::custom(e)),
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

/// What a full parse found: owned names and ranges into the line.
enum Shape {
    Request {
        id: RequestId,
        method: String,
        params: Option<Range<usize>>,
    },
    Notification {
        method: String,
        params: Option<Range<usize>>,
    },
    Result {
        id: RequestId,
        range: Range<usize>,
    },
    Error {
        id: Option<RequestId>,
        error: RpcError,
    },
}

impl Incoming {
    /// Classifies one line. Never panics, whatever the bytes.
    ///
    /// A success response in the usual compact layout
    /// (`{"jsonrpc":"2.0","id":7,"result":…}`) is routed by the id read off the line's
    /// start, and its result is left to the one decode that also verifies it (see
    /// [`Payload::decode`]): the result's bytes are scanned once, not twice. Every
    /// other line is parsed whole here.
    pub fn parse(line: impl Into<Bytes>) -> Result<Incoming, FramingError> {
        let line: Bytes = line.into();
        if let Some((id, range)) = result_by_shape(&line) {
            return Ok(Incoming::Result {
                id: RequestId::Number(id),
                result: Payload {
                    line,
                    range,
                    found: Found::ByShape,
                },
            });
        }
        let payload = |line, range: Option<Range<usize>>| match range {
            Some(range) => Payload::parsed(line, range),
            None => Payload::empty(line),
        };
        Ok(match Incoming::parse_shape(&line)? {
            Shape::Request { id, method, params } => Incoming::Request {
                id,
                method,
                params: payload(line, params),
            },
            Shape::Notification { method, params } => Incoming::Notification {
                method,
                params: payload(line, params),
            },
            Shape::Result { id, range } => Incoming::Result {
                id,
                result: Payload::parsed(line, range),
            },
            Shape::Error { id, error } => Incoming::Error {
                id,
                error,
                message: line.to_vec(),
            },
        })
    }

    fn parse_shape(line: &[u8]) -> Result<Shape, FramingError> {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'[') {
            return Err(FramingError::Batch);
        }
        let env: Envelope<'_> = serde_json::from_slice(line).map_err(FramingError::NotJson)?;
        if env.jsonrpc.as_deref() != Some("2.0") {
            return Err(FramingError::Malformed("\"jsonrpc\" is not \"2.0\""));
        }
        let params = env.params.map(|p| range_of(line, p));
        match (env.method, env.id, env.result, env.error) {
            (Some(method), Some(id), None, None) => Ok(Shape::Request {
                id,
                method: method.into_owned(),
                params,
            }),
            (Some(method), None, None, None) => Ok(Shape::Notification {
                method: method.into_owned(),
                params,
            }),
            (None, Some(id), Some(result), None) => Ok(Shape::Result {
                id,
                range: range_of(line, result),
            }),
            (None, id, None, Some(error)) => Ok(Shape::Error { id, error }),
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

    /// Decodes a line's result as a JSON value, or says why not (refused by the parse
    /// or by the decode).
    fn result_of(line: &str) -> Result<(RequestId, serde_json::Value), String> {
        match parse(line).map_err(|e| format!("parse: {e}"))? {
            Incoming::Result { id, result } => {
                let value = result.decode().map_err(|e| format!("decode: {e}"))?;
                Ok((id, value))
            }
            other => Err(format!("not a result: {other:?}")),
        }
    }

    #[test]
    fn a_compact_result_is_routed_by_its_leading_id_and_decoded_exactly() {
        let (id, v) = result_of(r#"{"jsonrpc":"2.0","id":42,"result":{"a":[1,"}"]}}"#).unwrap();
        assert_eq!(id, RequestId::Number(42));
        assert_eq!(v, serde_json::json!({"a": [1, "}"]}));
        // Whitespace and a carriage return after the envelope are not part of the value.
        let (_, v) = result_of("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{} }\r\n").unwrap();
        assert_eq!(v, serde_json::json!({}));
        let line = r#"{"jsonrpc":"2.0","id":9,"result":{"b":true}}"#;
        let Ok(Incoming::Result { result, .. }) = parse(line) else {
            panic!("not a result")
        };
        assert_eq!(result.json(), r#"{"b":true}"#);
        assert!(result.mentions("\"b\""));
        assert!(!result.mentions("\"resultType\""));
    }

    #[test]
    fn members_after_the_result_are_read_by_a_full_parse() {
        // Valid JSON-RPC whatever the member order: the value is found exactly.
        for line in [
            r#"{"jsonrpc":"2.0","id":5,"result":{"x":1},"_extra":{"y":2}}"#,
            r#"{"id":5,"jsonrpc":"2.0","result":{"x":1}}"#,
            r#"{"result":{"x":1},"jsonrpc":"2.0","id":5}"#,
            r#"{ "jsonrpc": "2.0", "id": 5, "result": {"x": 1} }"#,
        ] {
            let (id, v) = result_of(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(id, RequestId::Number(5), "{line}");
            assert_eq!(v, serde_json::json!({"x": 1}), "{line}");
        }
    }

    #[test]
    fn a_malformed_response_is_refused_by_the_parse_or_by_its_decode() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\u{1}\"}",
            r#"{"jsonrpc":"2.0","id":1,"result":"\ud800"}"#,
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}"#,
        ] {
            assert!(result_of(line).is_err(), "{line:?} should be refused");
        }
    }

    /// The same answer, whether a line is read by its shape or parsed whole: mutated
    /// success responses decode to exactly what a full parse finds, or are refused.
    #[test]
    fn reading_by_shape_agrees_with_a_full_parse_on_mutated_lines() {
        let seeds = [
            r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"hello \"w\" \n é"}]}}"#,
            r#"{"jsonrpc":"2.0","id":12,"result":{"contents":[{"uri":"a://b","blob":"AAEC"}],"ttlMs":5}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":[1,{"a":null}]}"#,
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        const BYTES: &[u8] = b"{}[]\",:\\ \t\r\n0123456789abcdeu\x01\x7f\xc3\xa9\xff";
        let mut agreed = 0;
        for _ in 0..20_000 {
            let mut line = seeds[next(seeds.len())].as_bytes().to_vec();
            for _ in 0..=next(3) {
                let at = next(line.len() + 1);
                match next(3) {
                    0 if at < line.len() => {
                        line.remove(at);
                    }
                    1 if at < line.len() => line[at] = BYTES[next(BYTES.len())],
                    _ => line.insert(at, BYTES[next(BYTES.len())]),
                }
            }
            // As a JSON value and as the typed result (whose text and blob are read as
            // bytes), each on its own: the id with whichever decodes succeed, or nothing
            // when neither does.
            type Read = crate::model::ReadResourceResult;
            let outcome = |id: i64, value: Option<serde_json::Value>, typed: Option<Read>| {
                let typed = typed.map(|r| format!("{r:?}"));
                (value.is_some() || typed.is_some()).then_some((id, value, typed))
            };
            let whole = match Incoming::parse_shape(&line) {
                Ok(Shape::Result {
                    id: RequestId::Number(id),
                    range,
                }) => outcome(
                    id,
                    serde_json::from_slice(&line[range.clone()]).ok(),
                    serde_json::from_slice(&line[range]).ok(),
                ),
                _ => None,
            };
            let by_shape = match Incoming::parse(line.clone()) {
                Ok(Incoming::Result {
                    id: RequestId::Number(id),
                    result,
                }) => outcome(id, result.decode().ok(), result.decode().ok()),
                _ => None,
            };
            assert_eq!(by_shape, whole, "{}", String::from_utf8_lossy(&line));
            agreed += usize::from(whole.is_some());
        }
        assert!(
            agreed > 1000,
            "too few valid mutations to mean much: {agreed}"
        );
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
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":01,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} trailing"#,
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
