//! Test support shared by the capable crates: schema validation of every message the
//! client writes, small helpers to drive the sans-IO core with a scripted server, and
//! the location of the `capable-fixture` binary the process-level tests start.
//!
//! The schemas are the official MCP JSON schemas copied into `schemas/<revision>/` at
//! the repository root, so the tests depend on nothing outside the checkout.
//!
//! This crate depends on `capable-core` only (never on `capable`), so the core's own
//! tests can use it. With the `http-peer` feature it also has `http_peer`, a scripted
//! HTTP server on tokio that the tests of `capable` and the CLI share.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod from_server;
#[cfg(feature = "http-peer")]
pub mod http_peer;
mod ports;
mod redis_server;

pub use from_server::{assert_valid_from_server, take_from_server};
pub use ports::free_port;
pub use redis_server::{redis_binary, RedisServer};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use capable_core::{
    ClientConfig, Connection, Event, Incoming, Negotiating, Now, Outbox, Outgoing, ProtocolChoice,
    ProtocolVersion, RequestId, Step,
};
use jsonschema::Validator;
use serde_json::{json, Value};

/// Where the copied schemas live.
fn schema_path(version: ProtocolVersion) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas")
        .join(version.as_str())
        .join("schema.json")
}

/// The validators for one protocol revision.
struct Revision {
    /// The whole schema document, kept to build per-method validators for diagnostics.
    document: Value,
    /// `definitions` (draft-07) or `$defs` (2020-12).
    defs_key: &'static str,
    /// `JSONRPCRequest` ∧ `ClientRequest`.
    request: Vec<(String, Validator)>,
    /// `JSONRPCNotification` ∧ `ClientNotification`.
    notification: Vec<(String, Validator)>,
    /// `JSONRPCResponse` (≤ 2025-06-18) or `JSONRPCResultResponse` (2025-11-25+).
    result_envelope: (String, Validator),
    /// `ClientResult`, applied to the `result` member.
    client_result: (String, Validator),
    /// `JSONRPCError` (≤ 2025-06-18) or `JSONRPCErrorResponse` (2025-11-25+).
    error: (String, Validator),
    /// `JSONRPCRequest` ∧ `ServerRequest` (empty in 2026-07-28, which has none).
    server_request: Vec<(String, Validator)>,
    /// `JSONRPCNotification` ∧ `ServerNotification`.
    server_notification: Vec<(String, Validator)>,
}

/// Validates client→server messages against the official schema of a protocol revision.
pub struct SchemaValidator {
    revisions: HashMap<ProtocolVersion, Revision>,
}

/// What kind of JSON-RPC message a line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// It has an `id` and a `method`.
    Request,
    /// It has a `method` and no `id`.
    Notification,
    /// It answers a request with a `result`.
    Result,
    /// It answers a request with an `error`.
    Error,
}

/// Classifies a message by its members (not by the schema).
pub fn kind_of(message: &Value) -> Option<Kind> {
    let has = |k: &str| message.get(k).is_some();
    match (has("method"), has("id"), has("result"), has("error")) {
        (true, true, false, false) => Some(Kind::Request),
        (true, false, false, false) => Some(Kind::Notification),
        (false, true, true, false) => Some(Kind::Result),
        (false, _, false, true) => Some(Kind::Error),
        _ => None,
    }
}

fn compile(document: &Value, defs_key: &str, name: &str) -> Validator {
    let defs = document
        .get(defs_key)
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("schema has no {defs_key}"));
    assert!(
        defs.contains_key(name),
        "schema has no definition {name} under {defs_key}"
    );
    // A clone of the whole document (so every internal `#/…` reference resolves), with
    // the root constrained to the one definition.
    let mut schema = document.clone();
    schema
        .as_object_mut()
        .expect("the schema document is an object")
        .insert(
            "allOf".into(),
            json!([{ "$ref": format!("#/{defs_key}/{name}") }]),
        );
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("cannot compile {name}: {e}"))
}

fn has_def(document: &Value, defs_key: &str, name: &str) -> bool {
    document.get(defs_key).and_then(|d| d.get(name)).is_some()
}

impl Revision {
    fn load(version: ProtocolVersion) -> Revision {
        let path = schema_path(version);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let document: Value = serde_json::from_str(&text).expect("schema is JSON");
        let defs_key = if document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        let named = |name: &str| (name.to_owned(), compile(&document, defs_key, name));
        // The names of the response types changed in 2025-11-25: `JSONRPCResponse`
        // became the union of `JSONRPCResultResponse` and `JSONRPCErrorResponse`, and
        // `JSONRPCError` was renamed `JSONRPCErrorResponse`.
        let result_envelope = if has_def(&document, defs_key, "JSONRPCResultResponse") {
            "JSONRPCResultResponse"
        } else {
            "JSONRPCResponse"
        };
        let error = if has_def(&document, defs_key, "JSONRPCErrorResponse") {
            "JSONRPCErrorResponse"
        } else {
            "JSONRPCError"
        };
        let server_request = match has_def(&document, defs_key, "ServerRequest") {
            true => vec![named("JSONRPCRequest"), named("ServerRequest")],
            false => Vec::new(),
        };
        Revision {
            server_request,
            server_notification: vec![named("JSONRPCNotification"), named("ServerNotification")],
            request: vec![named("JSONRPCRequest"), named("ClientRequest")],
            notification: vec![named("JSONRPCNotification"), named("ClientNotification")],
            result_envelope: named(result_envelope),
            client_result: named("ClientResult"),
            error: named(error),
            document,
            defs_key,
        }
    }

    /// For a failed union: the member of `union` whose `method` is `method`, to give
    /// precise errors instead of "not valid under any of the schemas".
    fn member_for_method(&self, union: &str, method: &str) -> Option<(String, Validator)> {
        let defs = self.document.get(self.defs_key)?;
        let members = defs.get(union)?;
        let refs: Vec<String> = match members.get("anyOf").and_then(Value::as_array) {
            Some(list) => list
                .iter()
                .filter_map(|m| m.get("$ref")?.as_str().map(str::to_owned))
                .collect(),
            // A union of one (2026-07-28 `ClientNotification`) is inlined.
            None => return None,
        };
        refs.iter().find_map(|r| {
            let name = r.rsplit('/').next()?;
            let def = defs.get(name)?;
            let constant = def.pointer("/properties/method/const")?.as_str()?;
            (constant == method).then(|| {
                (
                    name.to_owned(),
                    compile(&self.document, self.defs_key, name),
                )
            })
        })
    }
}

fn errors_of(name: &str, validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{name}: at `{}`: {e}", e.instance_path))
        .collect()
}

impl SchemaValidator {
    /// The validator for every revision capable speaks (built once per test binary).
    pub fn get() -> &'static SchemaValidator {
        static V: OnceLock<SchemaValidator> = OnceLock::new();
        V.get_or_init(|| SchemaValidator {
            revisions: ProtocolVersion::ALL
                .into_iter()
                .map(|v| (v, Revision::load(v)))
                .collect(),
        })
    }

    /// Every schema violation of one client→server message under `version`; empty when
    /// the message is valid.
    pub fn errors(&self, version: ProtocolVersion, message: &Value) -> Vec<String> {
        let rev = &self.revisions[&version];
        let mut errors = Vec::new();
        match kind_of(message) {
            None => errors
                .push("neither a request, a notification, a result nor an error response".into()),
            Some(Kind::Request) | Some(Kind::Notification) => {
                let (checks, union) = if kind_of(message) == Some(Kind::Request) {
                    (&rev.request, "ClientRequest")
                } else {
                    (&rev.notification, "ClientNotification")
                };
                for (name, v) in checks {
                    errors.extend(errors_of(name, v, message));
                }
                let union_failed = errors.iter().any(|e| e.starts_with(union));
                if union_failed {
                    let method = message["method"].as_str().unwrap_or_default();
                    match rev.member_for_method(union, method) {
                        Some((name, v)) => errors.extend(errors_of(&name, &v, message)),
                        None => errors.push(format!(
                            "{method:?} is not a member of {union} in {version}"
                        )),
                    }
                }
            }
            Some(Kind::Result) => {
                let (name, v) = &rev.result_envelope;
                errors.extend(errors_of(name, v, message));
                let (name, v) = &rev.client_result;
                errors.extend(errors_of(name, v, &message["result"]));
            }
            Some(Kind::Error) => {
                let (name, v) = &rev.error;
                errors.extend(errors_of(name, v, message));
            }
        }
        errors
    }

    /// Every schema violation of one server→client response under `version`: the result
    /// envelope, and its `result` against `definition` (such as `InitializeResult` or
    /// `ReadResourceResult`). Empty when the response is valid.
    pub fn result_errors(
        &self,
        version: ProtocolVersion,
        definition: &str,
        message: &Value,
    ) -> Vec<String> {
        let rev = &self.revisions[&version];
        if kind_of(message) != Some(Kind::Result) {
            return vec![format!("not a result response (expected a {definition})")];
        }
        let (name, v) = &rev.result_envelope;
        let mut errors = errors_of(name, v, message);
        let result = compile(&rev.document, rev.defs_key, definition);
        errors.extend(errors_of(definition, &result, &message["result"]));
        errors
    }

    /// Whether one client→server line is a valid message under `version`.
    pub fn is_valid(&self, version: ProtocolVersion, line: &[u8]) -> bool {
        match serde_json::from_slice::<Value>(line) {
            Ok(message) => self.errors(version, &message).is_empty(),
            Err(_) => false,
        }
    }
}

/// Panics, naming the errors and the message, unless `line` is one valid client→server
/// message under `version`. A trailing newline is allowed; any other is not.
pub fn assert_valid(version: ProtocolVersion, line: &[u8]) {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let text = String::from_utf8_lossy(line);
    assert!(
        !line.contains(&b'\n'),
        "a written message spans more than one line: {text}"
    );
    let message: Value = serde_json::from_slice(line)
        .unwrap_or_else(|e| panic!("the client wrote a line that is not JSON ({e}): {text}"));
    let errors = SchemaValidator::get().errors(version, &message);
    assert!(
        errors.is_empty(),
        "the client wrote a message that is invalid under the {version} schema:\n  {}\nmessage: {text}",
        errors.join("\n  ")
    );
}

/// Panics, naming the errors and the message, unless `message` is a server's result
/// response whose `result` is a valid `definition` under `version`.
#[track_caller]
pub fn assert_valid_result(version: ProtocolVersion, definition: &str, message: &Value) {
    let errors = SchemaValidator::get().result_errors(version, definition, message);
    assert!(
        errors.is_empty(),
        "the server sent a response that is not a valid {definition} under the {version} \
         schema:\n  {}\nmessage: {message}",
        errors.join("\n  ")
    );
}

/// Splits an output buffer into its lines (without their `\n`). Panics if the buffer
/// does not end with a newline: every message must be a complete line.
pub fn lines(out: &[u8]) -> Vec<&[u8]> {
    if out.is_empty() {
        return Vec::new();
    }
    assert!(
        out.ends_with(b"\n"),
        "output does not end with a newline: {}",
        String::from_utf8_lossy(out)
    );
    out[..out.len() - 1].split(|b| *b == b'\n').collect()
}

/// The lines of `out` as JSON values, each validated under `version`.
pub fn written(version: ProtocolVersion, out: &[u8]) -> Vec<Value> {
    lines(out)
        .into_iter()
        .map(|line| {
            assert_valid(version, line);
            serde_json::from_slice(line).expect("validated JSON")
        })
        .collect()
}

/// Drains `out`, validating and returning what the client wrote; each message's
/// record must say what its line is.
pub fn take(version: ProtocolVersion, out: &mut Outbox) -> Vec<Value> {
    let messages = written(version, out);
    assert_eq!(out.count(), messages.len(), "one record per message");
    for ((what, _), message) in out.messages().zip(&messages) {
        assert_recorded(&what, message);
    }
    out.clear();
    messages
}

/// Holds a message's record to its JSON: kind, id, method, version.
#[track_caller]
pub fn assert_recorded(what: &Outgoing, message: &Value) {
    let id = |id: &RequestId| serde_json::to_value(id).unwrap();
    match what {
        Outgoing::Request(r) => {
            assert_eq!(message["id"], id(&r.id), "{message}");
            assert_eq!(message["method"], r.method.as_str(), "{message}");
            let meta = message.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion");
            assert_eq!(
                meta.and_then(Value::as_str),
                r.version.map(|v| v.as_str()),
                "{message}"
            );
            if let Some(member) = r.method.target_member().filter(|_| r.version.is_some()) {
                assert_eq!(
                    message["params"].get(member).and_then(Value::as_str),
                    r.target.as_deref(),
                    "{message}"
                );
            }
        }
        Outgoing::Initialized => {
            assert_eq!(message["method"], "notifications/initialized", "{message}")
        }
        Outgoing::Cancelled { id: cancelled } => {
            assert_eq!(message["method"], "notifications/cancelled", "{message}");
            assert_eq!(message["params"]["requestId"], id(cancelled), "{message}");
        }
        Outgoing::Notification { method } => {
            assert_eq!(message["method"], method.as_str(), "{message}")
        }
        Outgoing::Response { id: answered } => {
            assert_eq!(message["id"], id(answered), "{message}");
            assert!(message.get("method").is_none(), "{message}");
        }
        Outgoing::Related { method, .. } => {
            assert_eq!(message["method"], method.as_str(), "{message}");
            assert!(message.get("id").is_none(), "{message}");
        }
        Outgoing::ServerRequest {
            id: sent, method, ..
        } => {
            assert_eq!(message["id"], id(sent), "{message}");
            assert_eq!(message["method"], method.as_str(), "{message}");
        }
        Outgoing::Refused => {
            assert!(message.get("id").is_none(), "{message}");
            assert!(message["error"]["code"].is_i64(), "{message}");
        }
        other => panic!("an unknown record {other:?}"),
    }
}

/// Parses a server message given as JSON.
pub fn incoming(value: Value) -> Incoming {
    Incoming::parse(serde_json::to_vec(&value).unwrap()).expect("a valid server message")
}

/// A fixed wall-clock time, so violations are stamped deterministically.
pub fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// The start of a test's made-up monotonic clock: deadlines are computed from it,
/// never from the real time.
pub fn t0() -> Instant {
    static T0: OnceLock<Instant> = OnceLock::new();
    *T0.get_or_init(Instant::now)
}

/// `t0()` plus `ms` milliseconds.
pub fn at_ms(ms: u64) -> Instant {
    t0() + Duration::from_millis(ms)
}

/// The moment "now" on both clocks: [`t0`] and [`now`].
pub fn moment() -> Now {
    Now::new(t0(), now())
}

/// A config with a recognisable clientInfo.
pub fn config(protocol: ProtocolChoice) -> ClientConfig {
    ClientConfig {
        client_info: capable_core::model::Implementation::new("capable-test", "9.9.9"),
        protocol,
        ..Default::default()
    }
}

/// The `initialize` answer of a legacy server.
pub fn initialize_result(id: &Value, version: &str, capabilities: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": "scripted", "version": "1.2.3"}
        }
    })
}

/// Drives a legacy handshake to a ready connection: the server answers `version` with
/// `capabilities`. Every line written is validated.
pub fn legacy_connection<W>(
    config: ClientConfig,
    version: ProtocolVersion,
    capabilities: Value,
) -> Connection<W> {
    let proposed = config
        .protocol
        .legacy_proposal()
        .expect("a legacy configuration");
    let mut out = Outbox::new();
    let n = Negotiating::start(config, t0(), &mut out);
    let sent = take(proposed, &mut out);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "initialize");
    let answer = initialize_result(&sent[0]["id"], version.as_str(), capabilities);
    let Step::Ready(established) = n.handle(incoming(answer), t0(), &mut out) else {
        panic!("the handshake did not complete");
    };
    let sent = take(version, &mut out);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "notifications/initialized");
    Connection::new(*established).0
}

/// Drives a modern handshake to a ready connection: the server answers
/// `server/discover` with `capabilities`.
pub fn modern_connection<W>(config: ClientConfig, capabilities: Value) -> Connection<W> {
    let mut out = Outbox::new();
    let n = Negotiating::start(config, t0(), &mut out);
    let v = ProtocolVersion::V2026_07_28;
    let sent = take(v, &mut out);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "server/discover");
    let answer = discover_result(&sent[0]["id"], capabilities);
    let Step::Ready(established) = n.handle(incoming(answer), t0(), &mut out) else {
        panic!("the probe did not complete");
    };
    assert!(out.is_empty(), "nothing is written after a DiscoverResult");
    Connection::new(*established).0
}

/// A DiscoverResult for 2026-07-28.
pub fn discover_result(id: &Value, capabilities: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": capabilities,
            "ttlMs": 60000,
            "cacheScope": "public",
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "modern-scripted", "version": "2.0.0"}
            }
        }
    })
}

/// Feeds one server message to a connection.
pub fn feed<W>(conn: &mut Connection<W>, message: Value, out: &mut Outbox) -> Event<W> {
    conn.handle(incoming(message), moment(), out)
}

/// The `capable-fixture` binary (the fixture server), next to the running test
/// executable: a test runs from `<target>/<profile>/deps/`, the binary is
/// `<target>/<profile>/capable-fixture`.
///
/// No test builds anything: a plain `cargo test` (the fixture is a default member of
/// the workspace) and `cargo test --workspace` build the binary. When it is missing —
/// `cargo test -p capable` alone does not build it — the test fails, saying how to
/// build it.
pub fn fixture_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test executable's path");
        let profile_dir = exe.parent().and_then(Path::parent).unwrap_or_else(|| {
            panic!(
                "the test executable {} is not in <target>/<profile>/deps",
                exe.display()
            )
        });
        let bin = profile_dir.join(format!("capable-fixture{}", std::env::consts::EXE_SUFFIX));
        if !bin.is_file() {
            let flag = match profile_dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => String::new(),
                Some("release") => " --release".into(),
                Some(other) => format!(" --profile {other}"),
            };
            panic!(
                "the fixture server binary {} is missing; build it with \
                 `cargo build -p capable-fixture{flag}` (the same profile and target as the \
                 tests), or run `cargo test` from the workspace root, which builds it",
                bin.display()
            );
        }
        bin
    })
}

/// A field of this process's `/proc/self/status` given in KiB (`VmRSS`, the resident
/// set now; `VmHWM`, its peak); 0 where there is no such file or field.
pub fn own_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The processes whose environment has `var=value` (Linux, from `/proc`; a zombie has
/// no environment left, so it does not count): a test marks the servers it starts
/// with a variable of its own, then finds them — or checks none is left behind.
pub fn processes_with_env(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}
