//! One incoming line, any bytes: the classification of `Incoming::parse` (whose fast
//! path reads a compact success response off its shape) agrees with the whole parse
//! (`Incoming::parse_whole`), and the whole parse agrees with a reference written from
//! JSON-RPC 2.0 alone. Then the message goes through the core in one protocol version
//! (chosen by the first byte): to the handshake, and to a ready connection with
//! requests in flight; nothing panics and whatever the client writes is JSON-RPC.

#![no_main]

use std::borrow::Cow;

use capable_core::{
    Incoming, Method, Negotiating, ProtocolChoice, ProtocolVersion, RequestId, RpcError, Step,
    Timing,
};
use capable_fuzz::{config, connection, now, t0, written};
use libfuzzer_sys::fuzz_target;
use serde::de::{MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, line)) = data.split_first() else {
        return;
    };
    differential(line);
    let version = ProtocolVersion::ALL[usize::from(selector) % ProtocolVersion::ALL.len()];
    through_the_handshake(version, selector, line);
    through_a_connection(version, line);
});

/// What a classified message says, payloads as their exact JSON text.
#[derive(Debug, PartialEq)]
enum Summary {
    Request {
        id: RequestId,
        method: String,
        params: Option<String>,
    },
    Notification {
        method: String,
        params: Option<String>,
    },
    Result {
        id: RequestId,
        result: String,
    },
    Error {
        id: Option<RequestId>,
        error: RpcError,
    },
}

/// Why a line is refused, by kind.
#[derive(Debug, PartialEq, Clone, Copy)]
enum Refused {
    NotJson,
    Batch,
    Malformed,
}

fn refused(e: &capable_core::internal::jsonrpc::FramingError) -> Refused {
    use capable_core::internal::jsonrpc::FramingError as F;
    match e {
        F::NotJson(_) => Refused::NotJson,
        F::Batch => Refused::Batch,
        F::Malformed(_) => Refused::Malformed,
        _ => unreachable!("a new kind of refusal: {e}"),
    }
}

fn payload_text(p: &capable_core::Payload) -> Option<String> {
    (!p.is_absent()).then(|| p.json().to_owned())
}

fn summary(msg: &Incoming) -> Summary {
    match msg {
        Incoming::Request { id, method, params } => Summary::Request {
            id: id.clone(),
            method: method.clone(),
            params: payload_text(params),
        },
        Incoming::Notification { method, params } => Summary::Notification {
            method: method.clone(),
            params: payload_text(params),
        },
        Incoming::Result { id, result } => Summary::Result {
            id: id.clone(),
            result: result.json().to_owned(),
        },
        Incoming::Error { id, error, .. } => Summary::Error {
            id: id.clone(),
            error: error.clone(),
        },
    }
}

/// A decoded payload, as `Value` (or why not).
fn decoded(msg: &Incoming) -> Option<Result<Value, String>> {
    let p = match msg {
        Incoming::Request { params, .. } | Incoming::Notification { params, .. } => params,
        Incoming::Result { result, .. } => result,
        Incoming::Error { .. } => return None,
    };
    Some(p.decode::<Value>().map_err(|e| e.to_string()))
}

/// `Payload::checked_with` (a seed reading the value as it is checked) accepts exactly
/// what `Payload::raw_value` accepts, as the same text.
fn checked_as_raw(message: &Incoming) {
    let payload = match message {
        Incoming::Request { params, .. } | Incoming::Notification { params, .. } => params,
        Incoming::Result { result, .. } => result,
        _ => return,
    };
    if payload.is_absent() {
        return;
    }
    let raw = payload.raw_value().map(|raw| raw.get().to_owned());
    let seed = std::marker::PhantomData::<serde::de::IgnoredAny>;
    let checked = payload
        .checked_with(seed)
        .map(|(text, _)| text.get().to_owned());
    match (&raw, &checked) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "checked text vs raw value"),
        (Err(_), Err(_)) => {}
        _ => panic!("raw value {raw:?} vs checked {checked:?}"),
    }
}

fn differential(line: &[u8]) {
    let fast = Incoming::parse(line.to_vec());
    let whole = Incoming::parse_whole(line.to_vec());
    let reference = reference(line);

    // The whole parse is JSON-RPC as the reference reads it.
    match (&whole, &reference) {
        (Ok(w), Ok(r)) => assert_eq!(&summary(w), r, "whole parse vs reference"),
        (Err(w), Err(r)) => assert_eq!(refused(w), *r, "whole parse vs reference: {w}"),
        (w, r) => panic!("whole parse {w:?} vs reference {r:?}"),
    }

    // Whichever way a payload was found, checking it while a seed reads it is checking
    // it as a `RawValue`.
    for message in [&fast, &whole].into_iter().flatten() {
        checked_as_raw(message);
    }

    // The fast path agrees with the whole parse.
    match (&fast, &whole) {
        (Ok(f), Ok(w)) => {
            assert_eq!(summary(f), summary(w), "fast path vs whole parse");
            let (f, w) = (decoded(f), decoded(w));
            match (&f, &w) {
                (Some(Ok(a)), Some(Ok(b))) => assert_eq!(a, b, "decoded payloads"),
                (Some(Err(_)), Some(Err(_))) | (None, None) => {}
                _ => panic!("decoded payloads differ: fast {f:?}, whole {w:?}"),
            }
        }
        (Err(f), Err(w)) => assert_eq!(refused(f), refused(w), "fast {f} vs whole {w}"),
        // Only a line read off its shape may classify where the whole parse refuses:
        // it is routed by its leading id and its payload then refuses to decode.
        (Ok(Incoming::Result { id, result }), Err(w)) => {
            assert!(
                line.starts_with(br#"{"jsonrpc":"2.0","id":"#),
                "only the fast path's shape: {w}"
            );
            assert!(matches!(id, RequestId::Number(n) if *n >= 0));
            assert!(
                result.decode::<Value>().is_err(),
                "a payload of a refused line decoded: whole parse said {w}"
            );
            assert_eq!(result.json(), "null");
        }
        (f, w) => panic!("fast path {f:?} vs whole parse {w:?}"),
    }
}

// ---------------------------------------------------------------------------------
// The reference: JSON-RPC 2.0 read off the top-level members.
// ---------------------------------------------------------------------------------

/// The top-level object's members, in order, duplicates kept.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    members.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

const KNOWN: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

fn reference(line: &[u8]) -> Result<Summary, Refused> {
    if line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(Refused::Batch);
    }
    let members: Members = serde_json::from_slice(line).map_err(|_| Refused::NotJson)?;
    let get = |key: &str| {
        let mut found = members.0.iter().filter(|(k, _)| k == key).map(|(_, v)| *v);
        let first = found.next();
        match found.next() {
            Some(_) => Err(Refused::NotJson), // a member given twice
            None => Ok(first.filter(|v| v.get() != "null")),
        }
    };
    let null_is_present = |key: &str| -> Result<Option<&RawValue>, Refused> {
        let mut found = members.0.iter().filter(|(k, _)| k == key).map(|(_, v)| *v);
        let first = found.next();
        match found.next() {
            Some(_) => Err(Refused::NotJson),
            None => Ok(first),
        }
    };
    for key in KNOWN {
        get(key)?;
    }
    let string = |raw: Option<&RawValue>| -> Result<Option<String>, Refused> {
        raw.map(|r| serde_json::from_str::<String>(r.get()).map_err(|_| Refused::NotJson))
            .transpose()
    };
    let jsonrpc = string(get("jsonrpc")?)?;
    let method = string(get("method")?)?;
    let id = match get("id")? {
        None => None,
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::String(s)) => Some(RequestId::String(s)),
            Ok(Value::Number(n)) => match n.as_i64() {
                Some(n) => Some(RequestId::Number(n)),
                None => return Err(Refused::NotJson),
            },
            _ => return Err(Refused::NotJson),
        },
    };
    let params = get("params")?.map(|r| r.get().to_owned());
    let result = null_is_present("result")?.map(|r| r.get().to_owned());
    let error = match get("error")? {
        None => None,
        Some(raw) => {
            Some(serde_json::from_str::<RpcError>(raw.get()).map_err(|_| Refused::NotJson)?)
        }
    };
    if jsonrpc.as_deref() != Some("2.0") {
        return Err(Refused::Malformed);
    }
    match (method, id, result, error) {
        (Some(method), Some(id), None, None) => Ok(Summary::Request { id, method, params }),
        (Some(method), None, None, None) => Ok(Summary::Notification { method, params }),
        (Some(_), _, _, _) => Err(Refused::Malformed),
        (None, Some(id), Some(result), None) => Ok(Summary::Result { id, result }),
        (None, id, None, Some(error)) => Ok(Summary::Error { id, error }),
        (None, _, _, _) => Err(Refused::Malformed),
    }
}

// ---------------------------------------------------------------------------------
// Through the core.
// ---------------------------------------------------------------------------------

/// The line as the answer to the first message of a handshake in `version` (or, with
/// the selector's high bit, of an automatic one that probes first).
fn through_the_handshake(version: ProtocolVersion, selector: u8, line: &[u8]) {
    let protocol = match selector & 0x80 {
        0 => ProtocolChoice::Exact(version),
        _ => ProtocolChoice::Auto,
    };
    let mut out = capable_core::Outbox::new();
    let n = Negotiating::start(config(protocol), t0(), &mut out);
    written(&out);
    out.clear();
    let step = match Incoming::parse(line.to_vec()) {
        Ok(msg) => n.handle(msg, t0(), &mut out),
        Err(e) => n.handle_unreadable(line, &e, t0(), &mut out),
    };
    let sent = written(&out);
    match step {
        Step::Ready(established) => {
            assert!(protocol.accepts(established.negotiated.version));
            for v in &sent {
                let m = &v["method"];
                assert!(m.is_null() || m == "notifications/initialized", "{v}");
            }
        }
        Step::Waiting(_) => {
            for v in &sent {
                let m = &v["method"];
                assert!(m.is_null() || m == "initialize", "{v}");
            }
        }
        Step::Failed(_) => {}
    }
}

/// The line fed to a connection ready in `version`, two requests in flight.
fn through_a_connection(version: ProtocolVersion, line: &[u8]) {
    let caps =
        r#"{"resources":{"subscribe":true},"tools":{},"prompts":{},"logging":{},"completions":{}}"#;
    let mut conn = connection::<u8>(version, caps).expect("a ready connection");
    let mut out = capable_core::Outbox::new();
    for (i, method) in [Method::ListTools, Method::ReadResource]
        .into_iter()
        .enumerate()
    {
        let params = serde_json::json!({"uri": "a://b"});
        conn.request(method, &params, Timing::new(), i as u8, t0(), &mut out)
            .expect("declared");
    }
    out.clear();
    let in_flight = conn.in_flight();
    match Incoming::parse(line.to_vec()) {
        Ok(msg) => {
            let _ = conn.handle(msg, now(), &mut out);
        }
        Err(e) => {
            let _ = conn.handle_unreadable(line, &e);
        }
    }
    assert!(conn.in_flight() <= in_flight);
    for v in written(&out) {
        // A server's message is answered (ping, a request the host cannot serve) or
        // noted; the client never starts a request of its own because of it.
        assert!(v.get("method").is_none() || v.get("id").is_none(), "{v}");
    }
}
