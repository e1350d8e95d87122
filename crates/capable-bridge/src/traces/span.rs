//! What the bridge records of a request: one record for both its spans (the host's
//! request, and the upstream call when it was sent) — their ids, their times, and the
//! attributes they share, held once: the relay's own strings, static or shared (or a
//! number, formatted by the exporter) — nothing formatted on the request's path,
//! nothing copied twice. The exporter turns a batch of them into OTLP's protobuf
//! (`encode.rs`) on its own thread, each record's attributes encoded once for its two
//! spans.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A string a span holds: static, or shared with the other span of the same request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Text {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Text {
    pub fn as_str(&self) -> &str {
        match self {
            Text::Static(s) => s,
            Text::Shared(s) => s,
        }
    }

    /// The same string, by its address: a static one, or the same shared one (no
    /// comparison of the characters; two equal strings made apart are not the same).
    pub fn same(&self, other: &Text) -> bool {
        match (self, other) {
            (Text::Static(a), Text::Static(b)) => std::ptr::eq(*a, *b),
            (Text::Shared(a), Text::Shared(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl From<&'static str> for Text {
    fn from(s: &'static str) -> Text {
        Text::Static(s)
    }
}

impl From<Arc<str>> for Text {
    fn from(s: Arc<str>) -> Text {
        Text::Shared(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::Shared(s.into())
    }
}

/// An attribute's value: OTLP's `string_value` or `int_value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Text(Text),
    /// A `string_value` of an integer's decimal digits (a JSON-RPC id), written by the
    /// exporter: no string made on the request's path.
    Decimal(i64),
    Int(i64),
}

/// One attribute: a key of the semantic conventions, and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attribute {
    pub key: &'static str,
    pub value: Value,
}

impl Attribute {
    /// The same key and value, by their addresses ([`Text::same`]).
    pub fn same(&self, other: &Attribute) -> bool {
        std::ptr::eq(self.key, other.key)
            && match (&self.value, &other.value) {
                (Value::Text(a), Value::Text(b)) => a.same(b),
                (Value::Decimal(a), Value::Decimal(b)) | (Value::Int(a), Value::Int(b)) => a == b,
                _ => false,
            }
    }

    /// `key` = the text `value`.
    pub fn text(key: &'static str, value: impl Into<Text>) -> Attribute {
        Attribute {
            key,
            value: Value::Text(value.into()),
        }
    }

    /// `key` = the decimal text of `value`.
    pub fn decimal(key: &'static str, value: i64) -> Attribute {
        Attribute {
            key,
            value: Value::Decimal(value),
        }
    }

    /// `key` = the integer `value`.
    pub fn int(key: &'static str, value: i64) -> Attribute {
        Attribute {
            key,
            value: Value::Int(value),
        }
    }
}

/// OTLP's span kinds the bridge records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The host's request (`SPAN_KIND_SERVER`).
    Server = 2,
    /// Its call upstream (`SPAN_KIND_CLIENT`).
    Client = 3,
}

/// A request's ended spans, as they wait for the exporter: the host request's span
/// (`SPAN_KIND_SERVER`) and, when the request was sent on, the upstream call's
/// (`SPAN_KIND_CLIENT`, its child): the same trace, name, end, attributes and status.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub trace_id: [u8; 16],
    /// The host request's span.
    pub span_id: [u8; 8],
    /// Its parent: the caller's span (a remote one); `None` for a root span.
    pub parent: Option<[u8; 8]>,
    /// The upstream call's span id, and when it began.
    pub upstream: Option<([u8; 8], u64)>,
    /// The W3C `tracestate` the trace carries.
    pub trace_state: Option<Arc<str>>,
    pub name: Text,
    /// Nanoseconds since the Unix epoch.
    pub start: u64,
    pub end: u64,
    /// Both spans' attributes: first the `shared` ones, which the requests of a
    /// session and method have in common (static strings, or the same shared ones).
    pub attributes: Vec<Attribute>,
    pub shared: usize,
    /// The status's message when it ended in error (`STATUS_CODE_ERROR`).
    pub error: Option<&'static str>,
}

impl Record {
    /// Its spans: two when the request was sent on, else one.
    pub fn spans(&self) -> usize {
        1 + usize::from(self.upstream.is_some())
    }
}

/// Now, in nanoseconds since the Unix epoch (0 for a clock set before it).
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
