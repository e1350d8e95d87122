//! A batch of spans as OTLP's `ExportTraceServiceRequest`, protobuf-encoded straight
//! from what the bridge recorded (`span.rs`), with prost's wire primitives: the
//! resource and the scope are encoded once, when traces start, and copied into every
//! batch; a request's attributes are written once, from the strings its record holds
//! (no intermediate messages, nothing formatted), and copied into its two spans. The field numbers are those of
//! `opentelemetry/proto/trace/v1/trace.proto` (and `common`, `resource`,
//! `collector/trace/v1`); the tests decode the result with the official definitions.

use std::sync::Arc;

use bytes::BufMut;
use prost::encoding::{encoded_len_varint, key_len, WireType};

use super::span::{Attribute, Kind, Record, Value};

/// `value` as a varint, appended (prost's own goes through its generic `BufMut`, a
/// byte at a time with a check each).
#[inline]
fn varint(mut value: u64, buf: &mut Vec<u8>) {
    while value >= 0x80 {
        buf.push(value as u8 | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Field `tag`'s key, of wire type `wire`.
#[inline]
fn key(tag: u32, wire: WireType, buf: &mut Vec<u8>) {
    varint(u64::from(tag << 3 | wire as u32), buf);
}

/// `key` with its length-delimited `data`.
#[inline]
fn bytes(tag: u32, data: &[u8], buf: &mut Vec<u8>) {
    key(tag, WireType::LengthDelimited, buf);
    varint(data.len() as u64, buf);
    buf.extend_from_slice(data);
}

/// The length of field `tag` holding `n` length-delimited bytes.
fn bytes_len(tag: u32, n: usize) -> usize {
    key_len(tag) + encoded_len_varint(n as u64) + n
}

/// The header of a length-delimited field `tag` of `n` bytes.
#[inline]
fn header(tag: u32, n: usize, buf: &mut Vec<u8>) {
    key(tag, WireType::LengthDelimited, buf);
    varint(n as u64, buf);
}

/// A `KeyValue` (`key` 1, `value` 2) of a `string_value` as field `tag`.
fn text_attribute(tag: u32, name: &[u8], text: &[u8], buf: &mut Vec<u8>) {
    let any = bytes_len(1, text.len());
    let len = bytes_len(1, name.len()) + bytes_len(2, any);
    header(tag, len, buf);
    bytes(1, name, buf);
    header(2, any, buf);
    bytes(1, text, buf);
}

/// A `KeyValue` (`key` 1, `value` 2) as field `tag` of the message being written.
pub(crate) fn attribute(tag: u32, attribute: &Attribute, buf: &mut Vec<u8>) {
    write_attribute(tag, attribute.key, &attribute.value, buf);
}

/// A `KeyValue` of `key` and `value` as field `tag` of the message being written.
fn write_attribute(tag: u32, name: &str, value: &Value, buf: &mut Vec<u8>) {
    // `string_value` (1) of a text or of a number's digits (written on the stack),
    // or `int_value` (3), a varint of the two's complement.
    let mut digits = itoa::Buffer::new();
    let text = match value {
        Value::Text(text) => Some(text.as_str().as_bytes()),
        Value::Decimal(i) => Some(digits.format(*i).as_bytes()),
        Value::Int(_) => None,
    };
    let any = match (text, value) {
        (Some(text), _) => bytes_len(1, text.len()),
        (None, Value::Int(i)) => key_len(3) + encoded_len_varint(*i as u64),
        (None, _) => 0,
    };
    let name = name.as_bytes();
    let len = bytes_len(1, name.len()) + bytes_len(2, any);
    buf.reserve(key_len(tag) + encoded_len_varint(len as u64) + len);
    header(tag, len, buf);
    bytes(1, name, buf);
    header(2, any, buf);
    match (text, value) {
        (Some(text), _) => bytes(1, text, buf),
        (None, Value::Int(i)) => {
            key(3, WireType::Varint, buf);
            varint(*i as u64, buf);
        }
        (None, _) => {}
    }
}

/// A `Resource` message's body: its attributes (field 1).
pub(crate) fn resource(attributes: &[Attribute]) -> Vec<u8> {
    let mut buf = Vec::new();
    for a in attributes {
        attribute(1, a, &mut buf);
    }
    buf
}

/// An `InstrumentationScope` message's body: its name (field 1).
pub(crate) fn scope(name: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    bytes(1, name.as_bytes(), &mut buf);
    buf
}

/// `Span.flags`: the W3C flags (sampled), and whether the parent is remote.
const SAMPLED: u32 = 0x01;
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;
/// `Status.code`: `STATUS_CODE_ERROR`.
const STATUS_ERROR: u64 = 2;

/// One of a record's spans: what is its own (id, parent, kind, start); the rest is
/// the record's, written once for both (protobuf takes a message's fields in any
/// order: each span is its own fields, then the record's).
struct One<'a> {
    span_id: &'a [u8; 8],
    parent: Option<&'a [u8; 8]>,
    remote_parent: bool,
    kind: Kind,
    start: u64,
}

impl One<'_> {
    /// The length of its own fields ([`One::write`]).
    fn len(&self) -> usize {
        let parent = self.parent.map_or(0, |p| bytes_len(4, p.len()));
        bytes_len(2, self.span_id.len())
            + parent
            + key_len(6)
            + encoded_len_varint(self.kind as u64)
            + key_len(7)
            + 8
            + key_len(16)
            + 4
    }

    /// The `Span` message as field `tag`: its length, its own fields, then `common`
    /// (the record's fields, encoded), into `buf`.
    fn write_as(&self, tag: u32, common: &[u8], buf: &mut Vec<u8>) {
        let len = self.len() + common.len();
        buf.reserve(key_len(tag) + encoded_len_varint(len as u64) + len);
        header(tag, len, buf);
        let at = buf.len();
        bytes(2, self.span_id, buf);
        if let Some(parent) = self.parent {
            bytes(4, parent, buf);
        }
        key(6, WireType::Varint, buf);
        varint(self.kind as u64, buf);
        key(7, WireType::SixtyFourBit, buf);
        buf.put_u64_le(self.start);
        let remote = match (self.parent, self.remote_parent) {
            (Some(_), true) => HAS_IS_REMOTE | IS_REMOTE,
            _ => HAS_IS_REMOTE,
        };
        key(16, WireType::ThirtyTwoBit, buf);
        buf.put_u32_le(SAMPLED | remote);
        buf.extend_from_slice(common);
        debug_assert_eq!(buf.len() - at, len, "a span's length as computed");
    }
}

/// The fields a record's spans share, encoded into `buf`: the trace, its state, the
/// name, the end, the attributes (the shared run copied from `runs` when seen
/// before) and the status.
fn common(record: &Record, runs: &mut Runs, statics: &mut Statics, buf: &mut Vec<u8>) {
    bytes(1, &record.trace_id, buf);
    if let Some(state) = &record.trace_state {
        bytes(3, state.as_bytes(), buf);
    }
    let target = &record.target;
    if target.names {
        // `{method} {target}`.
        header(5, record.method.len() + 1 + target.text.len(), buf);
        buf.extend_from_slice(record.method.as_bytes());
        buf.push(b' ');
        buf.extend_from_slice(&target.text);
    } else {
        bytes(5, record.method.as_bytes(), buf);
    }
    key(8, WireType::SixtyFourBit, buf);
    buf.put_u64_le(record.end);
    if let Some(shared) = &record.shared {
        buf.extend_from_slice(runs.encoded(shared));
    }
    if let Some(name) = target.key {
        text_attribute(9, name.as_bytes(), &target.text, buf);
    }
    if let Some(id) = &record.id {
        write_attribute(9, "jsonrpc.request.id", id, buf);
    }
    for a in &record.more {
        statics.write(a, buf);
    }
    statics.write_static(9, "capable.outcome", record.outcome, buf);
    if let Some(message) = record.error {
        // `Status`: `message` 2, `code` 3.
        header(15, status_len(message), buf);
        bytes(2, message.as_bytes(), buf);
        key(3, WireType::Varint, buf);
        varint(STATUS_ERROR, buf);
    }
}

/// The length of a `Status` message's body for an error with `message`.
fn status_len(message: &str) -> usize {
    bytes_len(2, message.len()) + key_len(3) + encoded_len_varint(STATUS_ERROR)
}

/// Reused between batches: what goes in front of the spans, one record's common fields, the runs
/// of shared attributes last seen, and the static attributes met.
#[derive(Default)]
pub(crate) struct Buffers {
    front: Vec<u8>,
    common: Vec<u8>,
    runs: Runs,
    statics: Statics,
}

/// How many attributes of a static key and static value are kept encoded: the
/// outcomes and error types the bridge names (a dozen), with room.
const STATICS: usize = 32;

/// Attributes whose key and value are both static strings (`capable.outcome=ok`,
/// `error.type=cancelled`), each encoded once (as `Span` field 9) and copied after.
#[derive(Default)]
struct Statics {
    kept: Vec<(&'static str, &'static str, Vec<u8>)>,
}

impl Statics {
    /// `a` encoded into `buf` (as `Span` field 9): copied when its key and value are
    /// static and were seen, by address.
    fn write(&mut self, a: &Attribute, buf: &mut Vec<u8>) {
        match &a.value {
            Value::Text(super::span::Text::Static(value)) => {
                self.write_static(9, a.key, value, buf)
            }
            _ => attribute(9, a, buf),
        }
    }

    /// The attribute of static `key` and `value` as field `tag` (always 9) into
    /// `buf`: copied when seen before.
    fn write_static(
        &mut self,
        tag: u32,
        key: &'static str,
        value: &'static str,
        buf: &mut Vec<u8>,
    ) {
        let same =
            |(k, v, _): &&(&str, &str, Vec<u8>)| std::ptr::eq(*k, key) && std::ptr::eq(*v, value);
        if let Some((_, _, bytes)) = self.kept.iter().find(same) {
            return buf.extend_from_slice(bytes);
        }
        let mut bytes = Vec::new();
        write_attribute(tag, key, &Value::Text(value.into()), &mut bytes);
        buf.extend_from_slice(&bytes);
        if self.kept.len() < STATICS {
            self.kept.push((key, value, bytes));
        }
    }
}

/// The runs of shared attributes kept encoded (a few sessions' methods in turn).
const RUNS: usize = 16;

/// The shared attributes of the records last seen (a session's, for a method), each
/// run with its encoding: a record whose run is one of them (the same `Arc`, kept
/// here, so its address is no other's) copies its bytes instead of encoding it again.
#[derive(Default)]
struct Runs {
    kept: Vec<(Arc<[Attribute]>, Vec<u8>)>,
    /// The next to replace once `RUNS` are kept.
    next: usize,
}

impl Runs {
    /// `shared`'s attributes, encoded (as `Span` field 9).
    fn encoded(&mut self, shared: &Arc<[Attribute]>) -> &[u8] {
        let at = match self
            .kept
            .iter()
            .position(|(kept, _)| Arc::ptr_eq(kept, shared))
        {
            Some(at) => at,
            None => {
                let mut bytes = Vec::new();
                for a in shared.iter() {
                    attribute(9, a, &mut bytes);
                }
                let run = (shared.clone(), bytes);
                if self.kept.len() < RUNS {
                    self.kept.push(run);
                    self.kept.len() - 1
                } else {
                    let at = self.next;
                    self.next = (at + 1) % RUNS;
                    self.kept[at] = run;
                    at
                }
            }
        };
        &self.kept[at].1
    }
}

/// `records`' spans as one `ExportTraceServiceRequest` (`resource_spans` 1:
/// `ResourceSpans` with `resource` 1 and `scope_spans` 2: `ScopeSpans` with `scope` 1
/// and `spans` 2), written to `out` (cleared first) from the offset returned;
/// `resource` and `scope` are their messages' bodies. A record's upstream call's span
/// comes before its request's. The spans are written after room for what goes in
/// front of them (whose lengths depend on theirs), then that is written into the end
/// of the room: the batch is never copied.
pub(crate) fn request(
    resource: &[u8],
    scope: &[u8],
    records: &[Box<Record>],
    buffers: &mut Buffers,
    out: &mut Vec<u8>,
) -> usize {
    // Two headers (a key, a length of at most ten bytes), the resource and the scope.
    let room = 2 * 11 + bytes_len(1, resource.len()) + bytes_len(1, scope.len());
    out.clear();
    out.resize(room, 0);
    for record in records {
        buffers.common.clear();
        common(
            record,
            &mut buffers.runs,
            &mut buffers.statics,
            &mut buffers.common,
        );
        let request = One {
            span_id: &record.span_id,
            parent: record.parent.as_ref(),
            remote_parent: true,
            kind: Kind::Server,
            start: record.start,
        };
        let upstream = record.upstream.as_ref().map(|(span_id, start)| One {
            span_id,
            parent: Some(&record.span_id),
            remote_parent: false,
            kind: Kind::Client,
            start: *start,
        });
        for one in upstream.iter().chain([&request]) {
            one.write_as(2, &buffers.common, out);
        }
    }
    let scope_spans = bytes_len(1, scope.len()) + (out.len() - room);
    let resource_spans = bytes_len(1, resource.len()) + bytes_len(2, scope_spans);
    let front = &mut buffers.front;
    front.clear();
    header(1, resource_spans, front);
    bytes(1, resource, front);
    header(2, scope_spans, front);
    bytes(1, scope, front);
    let at = room - front.len();
    out[at..room].copy_from_slice(front);
    at
}

#[cfg(test)]
mod tests {
    use super::super::span::Target;
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use prost::Message;
    use std::sync::Arc;

    fn a_record(
        shared: &Arc<[Attribute]>,
        parent: Option<[u8; 8]>,
        error: Option<&'static str>,
    ) -> Record {
        Record {
            trace_id: [7; 16],
            span_id: [9; 8],
            parent,
            upstream: None,
            trace_state: Some("team=blue".into()),
            method: "tools/call",
            target: Target {
                key: Some("gen_ai.tool.name"),
                text: "é".repeat(100).into_bytes(),
                names: true,
            },
            start: 1_700_000_000_000_000_001,
            end: 1_700_000_000_000_500_000,
            shared: Some(shared.clone()),
            id: Some(Value::Decimal(-9_007_199_254_740_993)),
            more: vec![
                Attribute::int("rpc.jsonrpc.error_code", -32602),
                Attribute::decimal("error.type", 0),
            ],
            // Static key and value: encoded once, copied for the records after.
            outcome: "error",
            error,
        }
    }

    #[test]
    fn a_batch_decodes_with_the_official_definitions_as_recorded() {
        let resource = resource(&[Attribute::text("service.name", "capable-bridge")]);
        let scope = scope("capable-bridge");
        let call: Arc<[Attribute]> = Arc::new([Attribute::text("mcp.method.name", "tools/call")]);
        let sent = Record {
            upstream: Some(([4; 8], 1_700_000_000_000_000_002)),
            ..a_record(&call, Some([3; 8]), Some("error"))
        };
        // The third's shared run is another's (another `Arc`): not the first's.
        let list: Arc<[Attribute]> = Arc::new([Attribute::text(
            "mcp.method.name",
            Arc::<str>::from("tools/list"),
        )]);
        let records = [
            sent,
            a_record(&call, None, None),
            a_record(&list, None, None),
        ]
        .map(Box::new);
        let (mut buffers, mut out) = (Buffers::default(), Vec::new());
        let at = request(&resource, &scope, &records, &mut buffers, &mut out);
        let got = ExportTraceServiceRequest::decode(&out[at..]).unwrap();
        assert_eq!(got.resource_spans.len(), 1);
        let rs = &got.resource_spans[0];
        let r = rs.resource.as_ref().unwrap();
        assert_eq!(r.attributes[0].key, "service.name");
        let Some(Any::StringValue(name)) = r.attributes[0].value.clone().unwrap().value else {
            panic!("{r:?}")
        };
        assert_eq!(name, "capable-bridge");
        let ss = &rs.scope_spans[0];
        assert_eq!(ss.scope.as_ref().unwrap().name, "capable-bridge");
        // The first record's two spans (the upstream call's first), the others' one.
        assert_eq!(ss.spans.len(), 4);
        let (call, s) = (&ss.spans[0], &ss.spans[1]);
        assert_eq!(s.trace_id, [7; 16]);
        assert_eq!(s.span_id, [9; 8]);
        assert_eq!(s.parent_span_id, [3; 8]);
        assert_eq!(s.trace_state, "team=blue");
        assert_eq!(s.name, format!("tools/call {}", "é".repeat(100)));
        assert_eq!(s.kind, 2);
        assert_eq!(s.start_time_unix_nano, 1_700_000_000_000_000_001);
        assert_eq!(s.end_time_unix_nano, 1_700_000_000_000_500_000);
        assert_eq!(s.flags, 0x301);
        let values: Vec<_> = s
            .attributes
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.clone().unwrap().value.unwrap()))
            .collect();
        assert_eq!(
            values,
            [
                ("mcp.method.name", Any::StringValue("tools/call".into())),
                ("gen_ai.tool.name", Any::StringValue("é".repeat(100))),
                (
                    "jsonrpc.request.id",
                    Any::StringValue("-9007199254740993".into())
                ),
                ("rpc.jsonrpc.error_code", Any::IntValue(-32602)),
                ("error.type", Any::StringValue("0".into())),
                ("capable.outcome", Any::StringValue("error".into())),
            ]
        );
        let status = s.status.as_ref().unwrap();
        assert_eq!((status.code, status.message.as_str()), (2, "error"));
        // The upstream call: the request's child, the same trace, name, end,
        // attributes and status.
        assert_eq!(
            (call.trace_id.as_slice(), call.span_id.as_slice()),
            (&[7; 16][..], &[4; 8][..])
        );
        assert_eq!(call.parent_span_id, [9; 8]);
        assert_eq!(call.kind, 3);
        assert_eq!(call.start_time_unix_nano, 1_700_000_000_000_000_002);
        assert_eq!(call.end_time_unix_nano, s.end_time_unix_nano);
        assert_eq!((&call.name, &call.trace_state), (&s.name, &s.trace_state));
        assert_eq!((&call.attributes, &call.status), (&s.attributes, &s.status));
        assert_eq!(call.flags, 0x101);
        let root = &ss.spans[2];
        assert!(root.parent_span_id.is_empty() && root.status.is_none());
        assert_eq!(root.flags, 0x101);
        // Its shared run copied as the first record's was encoded.
        assert_eq!(root.attributes, s.attributes);
        let other = &ss.spans[3];
        assert_eq!(other.attributes[1..], s.attributes[1..]);
        assert_eq!(other.attributes[0].key, "mcp.method.name");
        let Some(Any::StringValue(method)) = other.attributes[0].value.clone().unwrap().value
        else {
            panic!("{other:?}")
        };
        assert_eq!(method, "tools/list");
    }
}
