//! One host request on its way to the server behind, and back: its params as the
//! server should get them, and the server's failure as the host should get it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use capable::internal::jsonrpc::{codes, Checked, Payload, RpcError, WithMeta};
use capable::internal::Method;
use capable::Params;
use capable::{Error, ErrorKind};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::audit::Audit;
use crate::traces::SpanContext;
use crate::Unavailable;

/// The `_meta` members that belong to the host's own exchange with the bridge, not to
/// the request: the 2026-07-28 envelope and the progress token (the bridge asks the
/// server for progress with a token of its own, and sends the server's envelope).
const EXCHANGE_META: [&str; 5] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/logLevel",
    "progressToken",
];

/// A host request's params on their way to the server behind: checked, never decoded
/// into values.
#[derive(Debug)]
pub enum Forwarded {
    /// As the host sent them, without `_meta` (the relay looked: nothing needs
    /// looking for again), checked once: written as they are.
    Plain(Checked),
    /// As sent (or as a policy wrote them), `_meta` or not.
    AsSent(Box<RawValue>),
    /// As the host sent them, without `_meta`, to go with a `_meta` of the bridge's
    /// own put first as they are written ([`WithMeta`]): `meta` its members' text
    /// (`"traceparent":"…"`, and `tracestate`), written by the bridge — nothing is
    /// made into a second params text, nor checked again.
    Traced { params: Checked, meta: MetaMembers },
    /// Their members less `_meta`, each as its JSON text; and what is left of `_meta`
    /// once the host's own members are out, when anything is.
    Edited {
        members: Members,
        meta: Option<Members>,
    },
}

/// An object's members, each kept as its JSON text.
type Members = BTreeMap<String, Box<RawValue>>;

/// The JSON text of the `_meta` members the bridge puts in front of params it traced
/// (`"traceparent":"…"`, and a `tracestate`): on the stack, unless the caller's
/// `tracestate` is long.
pub type MetaMembers = smallvec::SmallVec<[u8; 96]>;

impl Forwarded {
    /// The params as an object, to edit (a name the server knows by another).
    pub fn into_map(self) -> Map<String, Value> {
        match serde_json::to_value(&self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// The `name` member, when it is a string (a tool's or prompt's name); the other
    /// members are skipped, not decoded.
    pub fn name(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Named {
            name: Option<String>,
        }
        let text = match self {
            Forwarded::Plain(text) | Forwarded::Traced { params: text, .. } => text.get(),
            Forwarded::AsSent(raw) => raw.get(),
            Forwarded::Edited { members, .. } => {
                return serde_json::from_str(members.get("name")?.get()).ok();
            }
        };
        serde_json::from_str::<Named>(text).ok()?.name
    }

    /// Whether these are the params as the host sent them, without `_meta`.
    pub fn is_plain(&self) -> bool {
        matches!(self, Forwarded::Plain(_))
    }

    /// What a span reads of the params of a `method` request: the tool's or prompt's
    /// name, the resource's URI, and the caller's trace context in `_meta` (members
    /// that are not strings are not read). Edited params were split into members by
    /// the relay: those are looked up. Params as sent are read only when the method
    /// names a target or they mention `_meta`, in one pass that skips every other
    /// member (no value is built).
    pub fn trace_fields(&self, method: Method) -> crate::traces::TraceFields<'_> {
        #[derive(serde::Deserialize)]
        struct Meta<'a> {
            #[serde(borrow)]
            traceparent: Option<Str<'a>>,
            #[serde(borrow)]
            tracestate: Option<Str<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Read<'a> {
            #[serde(borrow)]
            name: Option<Str<'a>>,
            #[serde(borrow)]
            uri: Option<Str<'a>>,
            #[serde(rename = "_meta", borrow)]
            meta: Option<Meta<'a>>,
        }
        let text = |raw: Option<&Box<RawValue>>| {
            raw.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
                .map(Cow::Owned)
        };
        let (text, plain) = match self {
            Forwarded::Traced { params, meta } => {
                let read = serde_json::from_str::<Read<'_>>(params.get()).ok();
                let meta = format!("{{{}}}", String::from_utf8_lossy(meta));
                let meta = serde_json::from_str::<Meta<'_>>(&meta).ok();
                let owned = |s: Option<Str<'_>>| s.map(|s| Cow::Owned(s.0.into_owned()));
                let (traceparent, tracestate) = meta.map_or((None, None), |m| {
                    (owned(m.traceparent), owned(m.tracestate))
                });
                let (name, uri) = read.map_or((None, None), |r| (r.name, r.uri));
                return crate::traces::TraceFields {
                    name: name.map(|s| s.0),
                    uri: uri.map(|s| s.0),
                    traceparent,
                    tracestate,
                };
            }
            Forwarded::Edited { members, meta } => {
                return crate::traces::TraceFields {
                    name: text(members.get("name")),
                    uri: text(members.get("uri")),
                    traceparent: meta.as_ref().and_then(|m| text(m.get("traceparent"))),
                    tracestate: meta.as_ref().and_then(|m| text(m.get("tracestate"))),
                };
            }
            Forwarded::Plain(text) => (text.get(), true),
            Forwarded::AsSent(raw) => (raw.get(), false),
        };
        if target_member(method).is_none() && (plain || !text.contains("\"_meta\"")) {
            return Default::default();
        }
        let Ok(read) = serde_json::from_str::<Read<'_>>(text) else {
            return Default::default();
        };
        let (traceparent, tracestate) = match read.meta {
            Some(m) => (m.traceparent, m.tracestate),
            None => (None, None),
        };
        crate::traces::TraceFields {
            name: read.name.map(|s| s.0),
            uri: read.uri.map(|s| s.0),
            traceparent: traceparent.map(|s| s.0),
            tracestate: tracestate.map(|s| s.0),
        }
    }

    /// The params with `traceparent` (and `tracestate`, or none) in `_meta`, in place
    /// of the caller's. Params as sent without `_meta` (a legacy host's usual request)
    /// become [`Forwarded::Traced`]: the members are written in front of their text as
    /// the request's line is written, their text otherwise kept as it is (never
    /// decoded into members, nor checked again).
    pub fn with_trace(self, context: &SpanContext) -> Forwarded {
        let string = |s: &str| serde_json::value::to_raw_value(s).ok();
        let (members, meta) = match self {
            Forwarded::Edited { members, meta } => (members, meta),
            Forwarded::Plain(raw) | Forwarded::Traced { params: raw, .. } => {
                return traced(raw, context)
            }
            Forwarded::AsSent(raw) if !raw.get().contains("\"_meta\"") => {
                return traced(raw.into(), context)
            }
            Forwarded::AsSent(raw) => {
                let mut members: Members = serde_json::from_str(raw.get()).unwrap_or_default();
                let meta = members
                    .remove("_meta")
                    .and_then(|m| serde_json::from_str::<Members>(m.get()).ok());
                (members, meta)
            }
        };
        let mut meta = meta.unwrap_or_default();
        match string(context.traceparent().as_str()) {
            Some(parent) => meta.insert("traceparent".to_owned(), parent),
            None => meta.remove("traceparent"),
        };
        match context.state.as_deref().and_then(string) {
            Some(state) => meta.insert("tracestate".to_owned(), state),
            None => meta.remove("tracestate"),
        };
        Forwarded::Edited {
            members,
            meta: Some(meta),
        }
    }

    /// Params edited as an object (by a policy).
    pub fn from_map(map: &Map<String, Value>) -> Forwarded {
        let text = serde_json::to_string(map).unwrap_or_else(|_| "{}".into());
        match RawValue::from_string(text) {
            Ok(raw) => Forwarded::AsSent(raw),
            Err(_) => Forwarded::Edited {
                members: BTreeMap::new(),
                meta: None,
            },
        }
    }
}

/// The params as text without `_meta`, `params`, to go with `traceparent` (and
/// `tracestate`) as the members of their `_meta`, written as the request is: the
/// bridge's own `traceparent` (hex digits and dashes) copied as it is.
fn traced(params: Checked, context: &SpanContext) -> Forwarded {
    const PARENT: &[u8] = br#""traceparent":""#;
    let mut members = [0; 96];
    members[..PARENT.len()].copy_from_slice(PARENT);
    let end = PARENT.len() + 55;
    if let Ok(parent) = <&mut [u8; 55]>::try_from(&mut members[PARENT.len()..end]) {
        context.write_traceparent(parent);
    }
    members[end] = b'"';
    let mut meta = MetaMembers::from_buf_and_len(members, end + 1);
    if let Some(state) = context.state.as_deref() {
        meta.extend_from_slice(br#","tracestate":"#);
        write_string(&mut meta, state);
    }
    Forwarded::Traced { params, meta }
}

/// `s` as a JSON string at the end of `out`: a usual `tracestate` needs no escaping,
/// and is copied.
fn write_string(out: &mut MetaMembers, s: &str) {
    if s.bytes()
        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ')
    {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else if let Ok(json) = serde_json::to_string(s) {
        out.extend_from_slice(json.as_bytes());
    } else {
        out.extend_from_slice(b"\"\"");
    }
}

/// A string member of the params, borrowed from their text (copied only when it has
/// escapes): serde's own `Option<Cow<str>>` always copies.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Str<'a>, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Str<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(Visit)
    }
}

impl serde::Serialize for Forwarded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Forwarded::Plain(text) => text
                .to_raw()
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
            Forwarded::AsSent(raw) => raw.serialize(s),
            Forwarded::Traced { params, meta } => {
                let mut text = Vec::new();
                WithMeta::unmerged(meta, params).write_json(&mut text);
                let text = String::from_utf8(text).map_err(serde::ser::Error::custom)?;
                RawValue::from_string(text)
                    .map_err(serde::ser::Error::custom)?
                    .serialize(s)
            }
            Forwarded::Edited { members, meta } => {
                let mut map = s.serialize_map(Some(members.len() + usize::from(meta.is_some())))?;
                for (name, value) in members {
                    map.serialize_entry(name, value)?;
                }
                if let Some(meta) = meta {
                    map.serialize_entry("_meta", meta)?;
                }
                map.end()
            }
        }
    }
}

/// The params of a host request for the server behind: as the host sent them, less
/// [`EXCHANGE_META`] (every other `_meta` member goes on: trace context, an
/// extension's). Params without `_meta` (the usual request of a legacy host) go on as
/// they came; with it, only the members of params and of `_meta` are read, each value
/// kept as its text. An error for params that are no object.
///
/// Params without `_meta` are read for the member `read` names (a span's target) as
/// they are checked, in the same pass: that member, when it is a string, comes back
/// with them (`None` for params with `_meta`: [`Forwarded::trace_fields`] reads them).
pub fn upstream_params<'a>(
    params: &'a Payload,
    read: Option<&'static str>,
) -> Result<(Forwarded, Option<Cow<'a, str>>), RpcError> {
    let not_object = |e: serde_json::Error| RpcError {
        code: codes::INVALID_PARAMS,
        message: format!("params is not an object: {e}"),
        data: None,
    };
    if !params.is_absent() && !params.mentions("_meta") {
        let member = read.and_then(|name| params.checked_with(Member(name)).ok());
        let (text, member) = match member {
            Some((text, member)) => (text, member.map(|s| s.0)),
            None => (params.checked().map_err(not_object)?, None),
        };
        if text.get().starts_with('{') {
            return Ok((Forwarded::Plain(text), member));
        }
    }
    let mut members = params
        .decode_or_default::<Option<Members>>()
        .map_err(not_object)?
        .unwrap_or_default();
    let mut meta = None;
    if let Some(raw) = members.remove("_meta") {
        let read = serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get());
        match read {
            Ok(read) => {
                let rest: Members = read
                    .into_iter()
                    .filter(|(name, _)| !EXCHANGE_META.contains(&name.as_str()))
                    .map(|(name, value)| (name, value.to_owned()))
                    .collect();
                meta = (!rest.is_empty()).then_some(rest);
            }
            // A `_meta` that is no object goes on as it is.
            Err(_) => {
                members.insert("_meta".to_owned(), raw);
            }
        }
    }
    Ok((Forwarded::Edited { members, meta }, None))
}

/// The member of a `method` request's params a span names its target by: a tool's or
/// prompt's `name`, a resource's `uri` — the target of the core's method table (a
/// task's id is no span's target), and a subscription's resource, which that table
/// (routing modern requests, which subscriptions are not) leaves out.
pub fn target_member(method: Method) -> Option<&'static str> {
    match method {
        Method::Subscribe | Method::Unsubscribe => Some("uri"),
        _ => method
            .target_member()
            .filter(|member| matches!(*member, "name" | "uri")),
    }
}

/// Reads params (an object) for the one member named, when it is a string: the first
/// such member, borrowed where it can be; every other skipped, never decoded.
#[derive(Clone, Copy)]
struct Member(&'static str);

impl<'de> serde::de::DeserializeSeed<'de> for Member {
    type Value = Option<Str<'de>>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Member {
    type Value = Option<Str<'de>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if found.is_none() && key.0 == self.0 {
                // Not a string (nor `null`): the whole read fails, and the params are
                // checked without it.
                found = map.next_value::<Option<Str<'de>>>()?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// The JSON-RPC error the bridge answers a request of `method` with, as the error of a
/// server's answer (the relay passes it on as it is).
pub fn answer_error(method: Method, code: i64, message: String, data: Option<Value>) -> Error {
    Error::Rpc {
        method,
        error: RpcError {
            code,
            message,
            data,
        },
    }
}

/// Implementation-defined codes (2026-07-28 leaves -32000 … -32019 to implementations;
/// -32002, legacy resource-not-found, is avoided).
pub mod code {
    /// The server behind is unreachable, or not up (starting, restarting, given up).
    pub const UNAVAILABLE: i64 = -32001;
    /// The server behind needs authorization the bridge cannot get here.
    pub const AUTHORIZATION_REQUIRED: i64 = -32010;
    /// The caller asked more than its rate limit allows (`data.retryAfter`: seconds);
    /// over HTTP, `429` with `Retry-After`.
    pub const RATE_LIMITED: i64 = -32011;
}

/// How a failure reaches the host: the server's own JSON-RPC error exactly as it came;
/// a local refusal or a contract violation as method-not-found (the host asked for
/// something the server does not, in fact, offer); anything else (a timeout, a crash,
/// a broken connection, authorization) as an error that says what happened and what to
/// do, with `data.kind` the same word `capable --json` uses.
pub fn host_error(e: &Error, audit: &Audit) -> RpcError {
    match e {
        Error::Rpc { error, .. } => error.clone(),
        Error::InputUnanswered { error, .. } => (**error).clone(),
        Error::Refused(_) | Error::Violation(_) => RpcError {
            code: codes::METHOD_NOT_FOUND,
            message: e.to_string(),
            data: Some(json!({"kind": e.kind().as_str()})),
        },
        other => unavailable(&Unavailable::Client(other.clone()), audit),
    }
}

/// The error every request gets while the server behind cannot be reached
/// (`why`, with the hint of what to do).
pub fn unavailable(why: &Unavailable, audit: &Audit) -> RpcError {
    let code = match why.kind() {
        ErrorKind::AuthRequired | ErrorKind::AuthFailed => code::AUTHORIZATION_REQUIRED,
        ErrorKind::Violation | ErrorKind::Rpc => codes::INTERNAL_ERROR,
        _ => code::UNAVAILABLE,
    };
    let mut message = audit.scrub(&why.to_string()).into_owned();
    let hint = match why {
        Unavailable::Client(e) => audit.hint(e),
        Unavailable::Other { hint, .. } => hint.clone(),
    };
    if let Some(hint) = hint {
        message.push_str("; ");
        message.push_str(&hint);
    }
    RpcError {
        code,
        message,
        data: Some(json!({"kind": why.name()})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(v: Value) -> Payload {
        Payload::from_json(v.to_string().into_bytes())
    }

    #[test]
    fn the_hosts_envelope_and_token_stay_and_the_rest_goes_on() {
        let params = payload(json!({"name": "echo", "arguments": {"m": 1}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": 7,
            "traceparent": "00-abc-def-01"
        }}));
        let forwarded =
            |p: &Payload| serde_json::to_value(upstream_params(p, None).unwrap().0).unwrap();
        assert_eq!(
            forwarded(&params),
            json!({"name": "echo", "arguments": {"m": 1}, "_meta": {"traceparent": "00-abc-def-01"}})
        );
        let only_envelope = payload(json!({"uri": "a://b", "_meta": {"progressToken": "t"}}));
        assert_eq!(forwarded(&only_envelope), json!({"uri": "a://b"}));
        // Without `_meta`: as sent, not decoded.
        let plain = r#"{"uri":"a://b","x":[1, 2]}"#;
        let plain = Payload::from_json(plain.as_bytes().to_vec());
        let Ok((Forwarded::Plain(raw), _)) = upstream_params(&plain, None) else {
            panic!("not as sent");
        };
        assert_eq!(raw.get(), r#"{"uri":"a://b","x":[1, 2]}"#);
        // A `_meta` that is no object goes on as it is.
        let odd = payload(json!({"uri": "a://b", "_meta": 7}));
        assert_eq!(forwarded(&odd), json!({"uri": "a://b", "_meta": 7}));
        assert!(upstream_params(&payload(json!([1])), None).is_err());
        assert_eq!(forwarded(&payload(Value::Null)), json!({}));
    }

    #[test]
    fn a_span_names_tools_prompts_and_resources_never_tasks() {
        assert_eq!(target_member(Method::CallTool), Some("name"));
        assert_eq!(target_member(Method::GetPrompt), Some("name"));
        for resource in [Method::ReadResource, Method::Subscribe, Method::Unsubscribe] {
            assert_eq!(target_member(resource), Some("uri"));
        }
        assert_eq!(Method::CancelTask.target_member(), Some("taskId"));
        assert_eq!(target_member(Method::CancelTask), None);
        assert_eq!(target_member(Method::ListTools), None);
    }

    #[test]
    fn a_spans_target_is_read_as_the_params_are_checked() {
        let read = |text: &str, member: &'static str| {
            let payload = Payload::from_json(text.as_bytes().to_vec());
            let (forwarded, target) = upstream_params(&payload, Some(member)).unwrap();
            let Forwarded::Plain(sent) = forwarded else {
                panic!("not as sent: {forwarded:?}");
            };
            assert_eq!(sent.get(), text, "sent on as it came");
            target.map(Cow::into_owned)
        };
        let call = r#"{"name":"echo","arguments":{"name":"not this","n":[1,{"uri":2}]}}"#;
        assert_eq!(read(call, "name").as_deref(), Some("echo"));
        assert_eq!(
            read(r#"{"uri":"a:\/\/b"}"#, "uri").as_deref(),
            Some("a://b")
        );
        // The first of two; none when it is no string (the params go on all the same).
        assert_eq!(
            read(r#"{"uri":"a","uri":"b"}"#, "uri").as_deref(),
            Some("a")
        );
        assert_eq!(read(r#"{"uri":7,"x":1}"#, "uri"), None);
        assert_eq!(read(r#"{"x":{"uri":"c"}}"#, "uri"), None);
        // Params with `_meta` are not read here; params that are no JSON are refused.
        let meta = Payload::from_json(br#"{"uri":"a","_meta":{}}"#.to_vec());
        let (edited, target) = upstream_params(&meta, Some("uri")).unwrap();
        assert!(matches!(edited, Forwarded::Edited { .. }) && target.is_none());
        let broken = Payload::from_json(br#"{"uri":"a","x":}"#.to_vec());
        assert!(upstream_params(&broken, Some("uri")).is_err());
    }

    #[test]
    fn a_trace_goes_in_front_of_params_as_sent_whose_text_stays() {
        let sent = || {
            let plain = Payload::from_json(br#"{"uri":"a://b","x":[1, 2]}"#.to_vec());
            upstream_params(&plain, None).unwrap().0
        };
        let sent_once = sent();
        let fields = sent_once.trace_fields(Method::ReadResource);
        assert_eq!(fields.uri.as_deref(), Some("a://b"));
        assert_eq!(fields.traceparent, None);
        let context = SpanContext {
            trace_id: [0xab; 16],
            span_id: [0xcd; 8],
            sampled: true,
            state: Some(r#"k="v"#.into()),
        };
        let parent = context.traceparent();
        let traced = sent().with_trace(&context);
        let Forwarded::Traced { params, .. } = &traced else {
            panic!("decoded: {traced:?}");
        };
        assert_eq!(params.get(), r#"{"uri":"a://b","x":[1, 2]}"#);
        let mut line = Vec::new();
        let id = capable::internal::jsonrpc::RequestId::Number(1);
        capable::internal::jsonrpc::write_request(&mut line, &id, "resources/read", &traced);
        let line = String::from_utf8(line).unwrap();
        assert!(
            line.contains(
                &format!(
                    r#""params":{{"_meta":{{"traceparent":"{}","tracestate":"k=\"v"}},"uri":"a://b","x":[1, 2]}}}}"#,
                    parent.as_str()
                )
            ),
            "{line}"
        );
        let again = traced.trace_fields(Method::ListTools);
        assert_eq!(again.traceparent.as_deref(), Some(parent.as_str()));
        assert_eq!(again.tracestate.as_deref(), Some(r#"k="v"#));
        let empty = upstream_params(&Payload::from_json(b"{ }".to_vec()), None)
            .unwrap()
            .0;
        assert_eq!(
            serde_json::to_value(empty.with_trace(&SpanContext {
                state: None,
                ..context
            }))
            .unwrap(),
            json!({"_meta": {"traceparent": parent.as_str()}})
        );
    }

    #[test]
    fn the_servers_own_error_goes_back_as_it_came() {
        let error = RpcError {
            code: -32602,
            message: "Unknown tool".into(),
            data: Some(json!({"tool": "x"})),
        };
        let e = Error::Rpc {
            method: capable::Method::CallTool,
            error: error.clone(),
        };
        let audit = Audit::open(None, Default::default(), None, Default::default()).unwrap();
        assert_eq!(host_error(&e, &audit), error);
        let timeout = host_error(
            &Error::Timeout {
                method: capable::Method::CallTool,
                after: std::time::Duration::from_secs(60),
            },
            &audit,
        );
        assert_eq!(timeout.code, code::UNAVAILABLE);
        assert_eq!(timeout.data, Some(json!({"kind": "timeout"})));
    }
}
