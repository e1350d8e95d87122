//! Shared helpers of the core's scripted-peer tests: the versions they speak, the first
//! steps of a handshake, ready connections in either era, and requests and answers that
//! check what was written (or that nothing was). Every line the client writes is
//! validated against the official schema of the version it speaks.
//!
//! Each test file uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod http;
pub mod server;

use capable_core::Outbox;
use capable_core::{
    Connection, Established, Event, GatePolicy, Method, Negotiating, NegotiationError, NotSent,
    Notice, ProtocolChoice, ProtocolVersion, Refusal, ResponseError, Step, Timing,
};
use capable_test_support::{config, feed, legacy_connection, modern_connection, t0, take};
use serde_json::{json, Value};

/// The latest legacy revision, which a legacy handshake proposes.
pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;
/// The version the `legacy` and `lenient` connections negotiate.
pub const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
/// The modern revision.
pub const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
/// Every legacy revision, oldest first.
pub const LEGACY: [ProtocolVersion; 4] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
];

// ---------------------------------------------------------------------------------
// The handshake.
// ---------------------------------------------------------------------------------

/// Starts negotiating and returns the state and the one message written, validated
/// under `expected_version`.
pub fn start(protocol: ProtocolChoice, expected_version: ProtocolVersion) -> (Negotiating, Value) {
    let mut out = Outbox::new();
    let n = Negotiating::start(config(protocol), t0(), &mut out);
    let mut sent = take(expected_version, &mut out);
    assert_eq!(sent.len(), 1, "exactly one first message: {sent:?}");
    (n, sent.remove(0))
}

pub fn waiting(step: Step) -> Negotiating {
    match step {
        Step::Waiting(n) => n,
        Step::Ready(e) => panic!("unexpectedly ready: {:?}", e.negotiated),
        Step::Failed(e) => panic!("unexpectedly failed: {e}"),
    }
}

pub fn ready(step: Step) -> Established {
    match step {
        Step::Ready(e) => *e,
        Step::Waiting(_) => panic!("still waiting"),
        Step::Failed(e) => panic!("failed: {e}"),
    }
}

pub fn failed(step: Step) -> NegotiationError {
    match step {
        Step::Failed(e) => e,
        Step::Waiting(_) => panic!("still waiting"),
        Step::Ready(e) => panic!("unexpectedly ready: {:?}", e.negotiated),
    }
}

pub fn error_answer(id: &Value, code: i64, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": "scripted error"});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

// ---------------------------------------------------------------------------------
// A ready connection.
// ---------------------------------------------------------------------------------

pub type Conn = Connection<&'static str>;

pub fn legacy(capabilities: Value) -> Conn {
    legacy_connection(config(ProtocolChoice::Legacy), V, capabilities)
}

pub fn lenient(capabilities: Value) -> Conn {
    let mut cfg = config(ProtocolChoice::Legacy);
    cfg.gate_policy = GatePolicy::Lenient;
    legacy_connection(cfg, V, capabilities)
}

pub fn modern(capabilities: Value) -> Conn {
    modern_connection(config(ProtocolChoice::Auto), capabilities)
}

/// Issues a request that must be allowed; returns its id and the one line written.
pub fn send(conn: &mut Conn, method: Method, params: Value, waiter: &'static str) -> (i64, Value) {
    let mut out = Outbox::new();
    let id = conn
        .request(
            method,
            &params,
            Timing::new().with_progress(false),
            waiter,
            t0(),
            &mut out,
        )
        .unwrap_or_else(|(refusal, _)| panic!("{method} refused: {refusal}"));
    let mut sent = take(conn.version(), &mut out);
    assert_eq!(sent.len(), 1);
    let line = sent.remove(0);
    assert_eq!(line["id"], json!(id));
    assert_eq!(line["method"], method.as_str());
    (id, line)
}

/// Issues a request that must be refused locally, with nothing written.
pub fn refuse(conn: &mut Conn, method: Method, params: Value) -> Refusal {
    let mut out = Outbox::new();
    let in_flight = conn.in_flight();
    match conn.request(
        method,
        &params,
        Timing::new().with_progress(false),
        "refused",
        t0(),
        &mut out,
    ) {
        Ok(id) => panic!(
            "{method} was sent as {id}: {}",
            String::from_utf8_lossy(&out)
        ),
        Err((NotSent::Refused(refusal), waiter)) => {
            assert!(out.is_empty(), "a refusal writes nothing");
            assert_eq!(waiter, "refused", "the waiter is handed back");
            assert_eq!(conn.in_flight(), in_flight, "nothing registered");
            assert_eq!(refusal.method(), method);
            refusal
        }
        Err((other, _)) => panic!("{method} was not sent, but not refused: {other}"),
    }
}

/// A request that was not sent because the gate refused it: the refusal and the waiter.
pub fn refusal_of<W>((why, waiter): (NotSent, W)) -> (Refusal, W) {
    match why {
        NotSent::Refused(refusal) => (refusal, waiter),
        other => panic!("not a refusal: {other}"),
    }
}

pub fn result(id: impl Into<Value>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "result": result})
}

pub fn error(id: impl Into<Value>, code: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "error": {"code": code, "message": "scripted"}})
}

/// Feeds a message that must produce the response to `id`.
pub fn response(
    conn: &mut Conn,
    message: Value,
) -> (
    i64,
    Method,
    &'static str,
    Result<capable_core::Payload, ResponseError>,
) {
    let mut out = Outbox::new();
    match feed(conn, message, &mut out) {
        Event::Response {
            id,
            method,
            waiter,
            outcome,
        } => {
            assert!(out.is_empty(), "a response is not answered");
            (id, method, waiter, outcome)
        }
        other => panic!("expected a response, got {other:?}"),
    }
}

/// Feeds a message that must be handled internally, returning what was written
/// (validated) and the notices it raised.
pub fn handled(conn: &mut Conn, message: Value) -> (Vec<Value>, Vec<Notice>) {
    let mut out = Outbox::new();
    match feed(conn, message, &mut out) {
        Event::Handled => {}
        other => panic!("expected Handled, got {other:?}"),
    }
    (take(conn.version(), &mut out), conn.take_notices())
}

/// A declaration of every server capability, with every flag.
pub const EVERYTHING: &str = r#"{"resources": {"subscribe": true, "listChanged": true},
    "tools": {"listChanged": true}, "prompts": {"listChanged": true},
    "completions": {}, "logging": {}}"#;

pub fn everything() -> Value {
    serde_json::from_str(EVERYTHING).unwrap()
}
