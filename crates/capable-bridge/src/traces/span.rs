//! What the bridge records of a span: its ids, its times and the attributes the relay
//! already holds, each a static or shared string (or a number) — nothing formatted,
//! nothing copied twice. The exporter turns a batch of them into OTLP's protobuf
//! (`encode.rs`) on its own thread.

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
    Int(i64),
}

/// One attribute: a key of the semantic conventions, and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attribute {
    pub key: &'static str,
    pub value: Value,
}

impl Attribute {
    /// `key` = the text `value`.
    pub fn text(key: &'static str, value: impl Into<Text>) -> Attribute {
        Attribute {
            key,
            value: Value::Text(value.into()),
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

/// An ended span, as it waits for the exporter.
#[derive(Clone, Debug)]
pub(crate) struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The parent's span id; `None` for a root span.
    pub parent: Option<[u8; 8]>,
    /// The parent is the caller's (a remote one).
    pub remote_parent: bool,
    /// The W3C `tracestate` the trace carries.
    pub trace_state: Option<Arc<str>>,
    pub name: Text,
    pub kind: Kind,
    /// Nanoseconds since the Unix epoch.
    pub start: u64,
    pub end: u64,
    pub attributes: Vec<Attribute>,
    /// The status's message when it ended in error (`STATUS_CODE_ERROR`).
    pub error: Option<&'static str>,
}

/// Now, in nanoseconds since the Unix epoch (0 for a clock set before it).
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
