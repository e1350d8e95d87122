//! Classifying one received line: a request, a notification, a result or an error,
//! with the place of its payload — never panicking, whatever the bytes.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::payload::{Found, Payload};
use super::{RequestId, RpcError};
use crate::json::{leading_id, result_by_shape};

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
#[non_exhaustive]
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
pub(super) enum Shape {
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
        match Incoming::result_by_shape(line.into()) {
            Ok((id, result)) => Ok(Incoming::Result { id, result }),
            Err(line) => Incoming::parse_whole(line),
        }
    }

    /// [`Incoming::parse`]'s fast path on its own: a success response in the usual
    /// compact layout, as its id and result, or the line handed back for
    /// [`Incoming::parse_whole`] (what `parse` does with it). A reader that routes
    /// results itself takes them so, and keeps the line for the rest without sharing
    /// it (no reference counted up and down again for a result).
    #[inline]
    pub fn result_by_shape(line: Bytes) -> Result<(RequestId, Payload), Bytes> {
        match result_by_shape(&line) {
            Some((id, range)) => Ok((
                RequestId::Number(id),
                Payload {
                    line,
                    range,
                    found: Found::ByShape,
                    noted: Default::default(),
                },
            )),
            None => Err(line),
        }
    }

    /// Classifies one line by parsing it whole, never by its shape: what
    /// [`Incoming::parse`] does for every line its fast path does not take, and the
    /// reference that fast path is checked against (see the fuzz targets).
    #[doc(hidden)]
    pub fn parse_whole(line: impl Into<Bytes>) -> Result<Incoming, FramingError> {
        let line: Bytes = line.into();
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

    pub(super) fn parse_shape(line: &[u8]) -> Result<Shape, FramingError> {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'[') {
            return Err(FramingError::Batch);
        }
        // JSON text is UTF-8. The parse checks the strings it reads, not those it skips
        // (members capable does not name): one pass over the line checks them all.
        if let Err(e) = simdutf8::compat::from_utf8(line) {
            use serde::de::Error as _;
            return Err(FramingError::NotJson(serde_json::Error::custom(format!(
                "not UTF-8 at byte {}",
                e.valid_up_to()
            ))));
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

/// What can still be read of a line that is not a usable message: the id of the
/// request it seems to answer, when it names one (a response that is malformed,
/// truncated or nested too deeply to parse).
pub fn answered_id(line: &[u8]) -> Option<RequestId> {
    match loose_shape(line) {
        Ok((id, false)) => id,
        Ok(_) => None,
        Err(_) => leading_id(line).map(RequestId::Number),
    }
}

/// What a line that is not a usable message still says of itself, read loosely: its
/// id, when one can be read, and whether it names a method (asks something). An error
/// when it is no JSON object with such an id (the error says whether it is JSON at
/// all).
pub fn loose_shape(line: &[u8]) -> Result<(Option<RequestId>, bool), serde_json::Error> {
    #[derive(Deserialize)]
    struct Loose {
        #[serde(default)]
        id: Option<RequestId>,
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Loose>(line).map(|l| (l.id, l.method.is_some()))
}

/// The messages of a JSON-RPC batch (a JSON array), each a slice of the line; `None`
/// when the line is no array of objects. 2025-03-26 lets a server send batches.
pub fn split_batch(line: &Bytes) -> Option<Vec<Bytes>> {
    split_batch_within(line, usize::MAX).ok()
}

/// Why a line is no batch to take ([`split_batch_within`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchRefusal {
    /// It is no JSON array of objects.
    NotMessages,
    /// It holds more than this many messages.
    TooMany(usize),
}

/// The messages of a JSON-RPC batch, as [`split_batch`], and at most `max` of them: the
/// array is read no further than its message `max + 1`, so a line of millions of tiny
/// messages costs no more than `max` of them before it is refused.
pub fn split_batch_within(line: &Bytes, max: usize) -> Result<Vec<Bytes>, BatchRefusal> {
    use serde::de::{DeserializeSeed, Error as _, SeqAccess, Visitor};
    use std::cell::Cell;

    struct Within<'a> {
        line: &'a Bytes,
        max: usize,
        refused: &'a Cell<Option<BatchRefusal>>,
    }
    impl<'de> DeserializeSeed<'de> for Within<'_> {
        type Value = Vec<Bytes>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<Bytes>, D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> Visitor<'de> for Within<'_> {
        type Value = Vec<Bytes>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of JSON-RPC messages")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Bytes>, A::Error> {
            let mut items = Vec::new();
            while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                let refused = match () {
                    () if items.len() == self.max => Some(BatchRefusal::TooMany(self.max)),
                    () if !raw.get().starts_with('{') => Some(BatchRefusal::NotMessages),
                    () => None,
                };
                if let Some(refused) = refused {
                    self.refused.set(Some(refused));
                    return Err(A::Error::custom("refused"));
                }
                items.push(self.line.slice(range_of(self.line, raw)));
            }
            Ok(items)
        }
    }
    let refused = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(line);
    let seed = Within {
        line,
        max,
        refused: &refused,
    };
    match seed
        .deserialize(&mut de)
        .and_then(|items| de.end().map(|()| items))
    {
        Ok(items) => Ok(items),
        Err(_) => Err(refused.get().unwrap_or(BatchRefusal::NotMessages)),
    }
}
