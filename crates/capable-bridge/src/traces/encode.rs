//! A batch of spans as OTLP's `ExportTraceServiceRequest`, protobuf-encoded straight
//! from what the bridge recorded (`span.rs`), with prost's wire primitives: the
//! resource and the scope are encoded once, when traces start, and copied into every
//! batch; a span's attributes are written from the strings it holds (no intermediate
//! messages, nothing formatted). The field numbers are those of
//! `opentelemetry/proto/trace/v1/trace.proto` (and `common`, `resource`,
//! `collector/trace/v1`); the tests decode the result with the official definitions.

use bytes::BufMut;
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};

use super::span::{Attribute, Span, Value};

/// `key` with its length-delimited `data`.
fn bytes(tag: u32, data: &[u8], buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(data.len() as u64, buf);
    buf.extend_from_slice(data);
}

/// The length of field `tag` holding `n` length-delimited bytes.
fn bytes_len(tag: u32, n: usize) -> usize {
    key_len(tag) + encoded_len_varint(n as u64) + n
}

/// The header of a length-delimited field `tag` of `n` bytes.
fn header(tag: u32, n: usize, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(n as u64, buf);
}

/// `AnyValue`'s length for `value`.
fn any_len(value: &Value) -> usize {
    match value {
        Value::Text(text) => bytes_len(1, text.as_str().len()),
        // `int_value` (3), a varint of the two's complement.
        Value::Int(i) => key_len(3) + encoded_len_varint(*i as u64),
    }
}

/// A `KeyValue` (`key` 1, `value` 2) as field `tag` of the message being written.
pub(crate) fn attribute(tag: u32, attribute: &Attribute, buf: &mut Vec<u8>) {
    let any = any_len(&attribute.value);
    header(
        tag,
        bytes_len(1, attribute.key.len()) + bytes_len(2, any),
        buf,
    );
    bytes(1, attribute.key.as_bytes(), buf);
    header(2, any, buf);
    match &attribute.value {
        Value::Text(text) => bytes(1, text.as_str().as_bytes(), buf),
        Value::Int(i) => {
            encode_key(3, WireType::Varint, buf);
            encode_varint(*i as u64, buf);
        }
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

/// A `Span` message's body, into `buf`.
fn span(span: &Span, buf: &mut Vec<u8>) {
    bytes(1, &span.trace_id, buf);
    bytes(2, &span.span_id, buf);
    if let Some(state) = &span.trace_state {
        bytes(3, state.as_bytes(), buf);
    }
    if let Some(parent) = &span.parent {
        bytes(4, parent, buf);
    }
    bytes(5, span.name.as_str().as_bytes(), buf);
    encode_key(6, WireType::Varint, buf);
    encode_varint(span.kind as u64, buf);
    encode_key(7, WireType::SixtyFourBit, buf);
    buf.put_u64_le(span.start);
    encode_key(8, WireType::SixtyFourBit, buf);
    buf.put_u64_le(span.end);
    for a in &span.attributes {
        attribute(9, a, buf);
    }
    if let Some(message) = span.error {
        // `Status`: `message` 2, `code` 3.
        let len = bytes_len(2, message.len()) + key_len(3) + encoded_len_varint(STATUS_ERROR);
        header(15, len, buf);
        bytes(2, message.as_bytes(), buf);
        encode_key(3, WireType::Varint, buf);
        encode_varint(STATUS_ERROR, buf);
    }
    let remote = match (span.parent, span.remote_parent) {
        (Some(_), true) => HAS_IS_REMOTE | IS_REMOTE,
        _ => HAS_IS_REMOTE,
    };
    encode_key(16, WireType::ThirtyTwoBit, buf);
    buf.put_u32_le(SAMPLED | remote);
}

/// Reused between batches: the spans' encoding, and one span's.
#[derive(Default)]
pub(crate) struct Buffers {
    spans: Vec<u8>,
    one: Vec<u8>,
}

/// `spans` as one `ExportTraceServiceRequest` (`resource_spans` 1: `ResourceSpans`
/// with `resource` 1 and `scope_spans` 2: `ScopeSpans` with `scope` 1 and `spans` 2),
/// written to `out` (cleared first); `resource` and `scope` are their messages' bodies.
pub(crate) fn request(
    resource: &[u8],
    scope: &[u8],
    spans: &[Span],
    buffers: &mut Buffers,
    out: &mut Vec<u8>,
) {
    buffers.spans.clear();
    for s in spans {
        buffers.one.clear();
        span(s, &mut buffers.one);
        bytes(2, &buffers.one, &mut buffers.spans);
    }
    let scope_spans = bytes_len(1, scope.len()) + buffers.spans.len();
    let resource_spans = bytes_len(1, resource.len()) + bytes_len(2, scope_spans);
    out.clear();
    out.reserve(bytes_len(1, resource_spans));
    header(1, resource_spans, out);
    bytes(1, resource, out);
    header(2, scope_spans, out);
    bytes(1, scope, out);
    out.extend_from_slice(&buffers.spans);
}

#[cfg(test)]
mod tests {
    use super::super::span::{Kind, Text};
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use prost::Message;
    use std::sync::Arc;

    fn a_span(parent: Option<[u8; 8]>, error: Option<&'static str>) -> Span {
        Span {
            trace_id: [7; 16],
            span_id: [9; 8],
            parent,
            remote_parent: true,
            trace_state: Some("team=blue".into()),
            name: Text::Shared("tools/call echo".into()),
            kind: Kind::Client,
            start: 1_700_000_000_000_000_001,
            end: 1_700_000_000_000_500_000,
            attributes: vec![
                Attribute::text("mcp.method.name", "tools/call"),
                Attribute::text("gen_ai.tool.name", Arc::<str>::from("é".repeat(100))),
                Attribute::int("rpc.jsonrpc.error_code", -32602),
            ],
            error,
        }
    }

    #[test]
    fn a_batch_decodes_with_the_official_definitions_as_recorded() {
        let resource = resource(&[Attribute::text("service.name", "capable-bridge")]);
        let scope = scope("capable-bridge");
        let spans = [a_span(Some([3; 8]), Some("error")), a_span(None, None)];
        let (mut buffers, mut out) = (Buffers::default(), Vec::new());
        request(&resource, &scope, &spans, &mut buffers, &mut out);
        let got = ExportTraceServiceRequest::decode(out.as_slice()).unwrap();
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
        assert_eq!(ss.spans.len(), 2);
        let s = &ss.spans[0];
        assert_eq!(s.trace_id, [7; 16]);
        assert_eq!(s.span_id, [9; 8]);
        assert_eq!(s.parent_span_id, [3; 8]);
        assert_eq!(s.trace_state, "team=blue");
        assert_eq!(s.name, "tools/call echo");
        assert_eq!(s.kind, 3);
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
                ("rpc.jsonrpc.error_code", Any::IntValue(-32602)),
            ]
        );
        let status = s.status.as_ref().unwrap();
        assert_eq!((status.code, status.message.as_str()), (2, "error"));
        let root = &ss.spans[1];
        assert!(root.parent_span_id.is_empty() && root.status.is_none());
        assert_eq!(root.flags, 0x101);
    }
}
