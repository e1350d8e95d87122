//! What the bridge records of a request: one record for both its spans (the host's
//! request, and the upstream call when it was sent) — their ids, their times, its
//! target, and the attributes they share, held once: the relay's own strings, static
//! or shared (or a number, formatted by the exporter) — nothing formatted on the
//! request's path, nothing copied twice, and records used again. The exporter turns a
//! batch of them into OTLP's protobuf (`encode.rs`) on its own thread, each record's
//! attributes encoded once for its two spans.

use std::sync::Arc;

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
    /// `key` = the text `value`.
    pub fn text(key: &'static str, value: impl Into<Text>) -> Attribute {
        Attribute {
            key,
            value: Value::Text(value.into()),
        }
    }

    /// `key` = the decimal text of `value`.
    #[cfg(test)]
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

/// The longest target whose room a record keeps for the next request.
const TARGET: usize = 4096;
/// The most other attributes whose room a record keeps.
const MORE: usize = 16;

/// What a request is about, as its spans say: a tool's or prompt's name, or a
/// resource's URI — copied onto the record (into the room a record used before
/// kept: no allocation).
#[derive(Clone, Debug, Default)]
pub(crate) struct Target {
    /// Its attribute's key (`gen_ai.tool.name`, `gen_ai.prompt.name`,
    /// `mcp.resource.uri`); `None`: the request has none.
    pub key: Option<&'static str>,
    /// Its text (UTF-8).
    pub text: Vec<u8>,
    /// The spans are named by the method and it (`tools/call echo`).
    pub names: bool,
}

/// A request's ended spans, as they wait for the exporter: the host request's span
/// (`SPAN_KIND_SERVER`) and, when the request was sent on, the upstream call's
/// (`SPAN_KIND_CLIENT`, its child): the same trace, name, end, attributes and status.
/// Boxed, and the boxes used again (`export.rs`): made once, not per request.
#[derive(Clone, Debug, Default)]
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
    /// The method: the spans' name, with the target when it [`Target::names`] them.
    pub method: &'static str,
    pub target: Target,
    /// Nanoseconds since the Unix epoch.
    pub start: u64,
    pub end: u64,
    /// Both spans' attributes: first those a session's requests of one method share
    /// (kept by its relay, the same `Arc` for each: the exporter encodes them once),
    /// then the target, the request's id (`jsonrpc.request.id`), what else it has
    /// (an error's, a caller's, a routed server: kept empty, and no allocation,
    /// without), and its outcome (`capable.outcome`).
    pub shared: Option<Arc<[Attribute]>>,
    pub id: Option<Value>,
    pub more: Vec<Attribute>,
    pub outcome: &'static str,
    /// The status's message when it ended in error (`STATUS_CODE_ERROR`).
    pub error: Option<&'static str>,
}

impl Record {
    /// Lets go of what it holds (shared strings, a long target), to be used again: as
    /// a new one, but for the room it keeps. A request fills in the rest.
    pub fn clear(&mut self) {
        self.trace_state = None;
        self.shared = None;
        self.id = None;
        self.upstream = None;
        self.error = None;
        if self.more.capacity() > MORE {
            self.more = Vec::new();
        }
        self.more.clear();
        if self.target.text.capacity() > TARGET {
            self.target.text = Vec::new();
        }
        self.target.text.clear();
        self.target.key = None;
    }

    /// Its spans: two when the request was sent on, else one.
    pub fn spans(&self) -> usize {
        1 + usize::from(self.upstream.is_some())
    }
}

/// Now, in nanoseconds since the Unix epoch (0 for a clock set before it, or one that
/// cannot be read): the system's real-time clock read directly — three times a
/// request, where `SystemTime`'s checked subtraction and `Duration` cost more than
/// the reading.
pub(crate) fn now() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes the `timespec` it is handed, and nothing else.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) } != 0 {
        return 0;
    }
    let (Ok(secs), Ok(nanos)) = (u64::try_from(now.tv_sec), u64::try_from(now.tv_nsec)) else {
        return 0;
    };
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_is_the_system_clock_in_nanoseconds() {
        let system = |d: std::time::Duration| d.as_nanos() as u64;
        let epoch = std::time::UNIX_EPOCH;
        let before = system(std::time::SystemTime::now().duration_since(epoch).unwrap());
        let now = super::now();
        let after = system(std::time::SystemTime::now().duration_since(epoch).unwrap());
        assert!(before <= now && now <= after, "{before} {now} {after}");
    }
}
