//! `capable bridge`, traced: every request a span (its upstream call a child span) with
//! the MCP semantic conventions, exported over OTLP/HTTP to a loopback collector that
//! decodes them with the official OTLP protobuf definitions (`otlp_support`); the
//! caller's W3C context (`_meta`, or the `traceparent` header) is the parent, and the
//! server behind gets the child's. A collector that hangs, or is down, never slows a
//! call; the spans it lost are counted on `/metrics`.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;
#[path = "otlp_support/mod.rs"]
mod otlp_support;

use std::time::{Duration, Instant};

use bridge_support::Bridge;
use listen_support::{http_at, listening_env, post};
use otlp_support::{Collector, Got, CLIENT, SERVER};
use serde_json::json;

/// The caller's context: its trace, and its span (the bridge's span's parent).
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";
/// A caller's trace that it does not sample.
const UNSAMPLED: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn caller_parent() -> String {
    format!("00-{TRACE}-{CALLER_SPAN}-01")
}

/// Batches leave every 20 ms, not every 5 s.
const QUICK: (&str, &str) = ("OTEL_BSP_SCHEDULE_DELAY", "20");

/// A legacy session over HTTP, initialized: its id.
fn open_session(port: u16) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}});
    let started = post(port, &[], init);
    assert_eq!(started.status, 200, "{}", started.body);
    let session = started.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [("Mcp-Session-Id", session.as_str())];
    assert_eq!(post(port, &headers, initialized).status, 202);
    session
}

/// Request `id` over stdio, and its answer (what the bridge writes is the relay's,
/// checked against the schemas by the other bridge tests; not here, where the first
/// check would cost a debug build seconds).
#[track_caller]
fn ask(b: &mut Bridge, id: i64, method: &str, params: serde_json::Value) -> serde_json::Value {
    b.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    loop {
        let message = b
            .next_unchecked_within(bridge_support::ANSWER)
            .unwrap_or_else(|| panic!("no answer to {id}\n{}", b.stderr_text()));
        if message["id"] == id && message.get("method").is_none() {
            return message;
        }
    }
}

/// The one span named `name` of `kind`.
#[track_caller]
fn one<'a>(spans: &'a [Got], name: &str, kind: i32) -> &'a Got {
    let found: Vec<_> = spans
        .iter()
        .filter(|s| s.name == name && s.kind == kind)
        .collect();
    assert_eq!(found.len(), 1, "{name} ({kind}) in {spans:#?}");
    found[0]
}

/// The span id in a `traceparent`.
fn span_of(traceparent: &str) -> (&str, &str) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (parts[1], parts[2])
}

#[test]
fn a_tool_call_over_stdio_is_a_server_span_under_the_callers_with_its_upstream_call_a_child() {
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let env = [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
        QUICK,
    ];
    traced_tool_call(&collector, &env);
}

#[test]
fn over_grpc_a_collector_gets_the_same_spans() {
    // The generated `TraceService` on tonic's server: what a collector's OTLP/gRPC
    // receiver is.
    let collector = Collector::grpc();
    let endpoint = collector.base();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        QUICK,
    ];
    traced_tool_call(&collector, &env);
}

/// A bridge over stdio in front of the fixture, traced as `env` says, its host's
/// session initialized (request 0).
fn traced_stdio(env: &[(&str, &str)]) -> Bridge {
    let server = common::fixture("no-resources");
    let mut args = vec!["--"];
    args.extend(server.iter().map(String::as_str));
    let mut b = Bridge::start_env(&args, env);
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "h", "version": "1"}});
    ask(&mut b, 0, "initialize", init);
    b.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    b
}

/// A bridge over stdio exporting to `collector` as `env` says: a tool call under the
/// caller's context is a server span under the caller's, its upstream call a child of
/// it (the server got the child's context), with the MCP attributes; a request without
/// a context is a trace of its own.
fn traced_tool_call(collector: &Collector, env: &[(&str, &str)]) {
    let mut b = traced_stdio(env);
    // A caller whose trace is not sampled: nothing recorded (the default sampler
    // follows the caller), the trace still handed on, unsampled.
    let unsampled = format!("00-{UNSAMPLED}-{CALLER_SPAN}-00");
    let call = ask(
        &mut b,
        6,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"},
            "_meta": {"traceparent": unsampled}}),
    );
    let seen = call["result"]["_meta"]["capable.fixture/traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("an unsampled trace was not handed on: {call}"));
    let parts: Vec<&str> = seen.split('-').collect();
    assert_eq!(parts.len(), 4, "{seen}");
    assert_eq!((parts[1], parts[3]), (UNSAMPLED, "00"), "{seen}");
    assert_ne!(parts[2], CALLER_SPAN);
    let parent = caller_parent();
    let call = ask(
        &mut b,
        7,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"},
            "_meta": {"traceparent": parent, "tracestate": "team=blue"}}),
    );
    assert_eq!(call["result"]["content"][0]["text"], "hi", "{call}");
    // What the server got: the caller's trace, under a span of the bridge's.
    let seen = call["result"]["_meta"]["capable.fixture/traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("the server got no traceparent: {call}"))
        .to_owned();
    let (seen_trace, seen_span) = span_of(&seen);
    assert_eq!(seen_trace, TRACE);
    assert_ne!(seen_span, CALLER_SPAN);
    // A request without a context starts a trace of its own.
    let listed = ask(&mut b, 8, "tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    let spans = collector.spans_until(|s| s.len() >= 4);
    let request = one(&spans, "tools/call echo", SERVER);
    assert_eq!(
        (request.trace_id.as_str(), request.parent_span_id.as_str()),
        (TRACE, CALLER_SPAN)
    );
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "7"),
        ("mcp.protocol.version", "2025-11-25"),
        ("network.transport", "pipe"),
        ("capable.outcome", "ok"),
    ] {
        assert_eq!(request.attr(key), Some(value), "{key} in {request:#?}");
    }
    assert_eq!(request.attr("error.type"), None);
    let upstream = one(&spans, "tools/call echo", CLIENT);
    assert_eq!(upstream.trace_id, TRACE);
    assert_eq!(upstream.parent_span_id, request.span_id);
    // The server's traceparent is the upstream call's own span.
    assert_eq!(upstream.span_id, seen_span);
    assert_eq!(upstream.attr("capable.outcome"), Some("ok"));

    let list = one(&spans, "tools/list", SERVER);
    assert_eq!(list.parent_span_id, "", "a root span");
    assert_ne!(list.trace_id, TRACE);
    let list_upstream = one(&spans, "tools/list", CLIENT);
    assert_eq!(list_upstream.parent_span_id, list.span_id);
    // The unsampled call ended first: had it been recorded, its spans would be here.
    assert!(
        spans.iter().all(|s| s.trace_id != UNSAMPLED),
        "an unsampled trace was recorded: {spans:#?}"
    );
}

#[test]
fn spans_leave_in_whole_batches_and_the_rest_when_the_bridge_stops() {
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let env = [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
        // Never by the clock, here: a batch leaves when a whole one waits.
        ("OTEL_BSP_SCHEDULE_DELAY", "3600000"),
    ];
    let mut b = traced_stdio(&env);
    // Seven requests, two spans each: three whole batches while it runs.
    for id in 1..=7 {
        ask(&mut b, id, "tools/list", json!({}));
    }
    let spans = collector.spans_until(|s| s.len() >= 12);
    assert_eq!(spans.len(), 12, "{spans:#?}");
    // The last two when it stops: every export but the last a whole batch.
    b.close();
    let spans = collector.spans_until(|s| s.len() >= 14);
    assert_eq!(spans.len(), 14);
    assert_eq!(collector.headers.lock().unwrap().len(), 4);
}

#[test]
fn over_http_the_traceparent_header_is_the_parent_and_the_server_of_many_is_named() {
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let config = json!({"mcpServers": {"a": bridge_support::many_entry("no-resources", &[])}});
    let file = common::TempFile::new("bridge-traces-header.json", &config.to_string());
    let env = [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            endpoint.trim_end_matches("/v1/traces"),
        ),
        QUICK,
    ];
    let (_b, port) = listening_env(&["--config", file.path()], &env);
    let session = open_session(port);
    let parent = caller_parent();
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("traceparent", parent.as_str()),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "a__echo", "arguments": {"message": "m"}}});
    let answer = post(port, &headers, call);
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = answer.events().pop().unwrap_or_else(|| answer.json());
    let seen = answer["result"]["_meta"]["capable.fixture/traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("the server got no traceparent: {answer}"))
        .to_owned();
    assert_eq!(span_of(&seen).0, TRACE);

    let spans = collector.spans_until(|s| s.iter().any(|s| s.kind == CLIENT));
    let request = one(&spans, "tools/call a__echo", SERVER);
    assert_eq!(
        (request.trace_id.as_str(), request.parent_span_id.as_str()),
        (TRACE, CALLER_SPAN)
    );
    assert_eq!(request.attr("network.transport"), Some("tcp"));
    assert_eq!(request.attr("capable.server"), Some("a"));
    // The session's id is a bearer of the session: a span shows a hash of it.
    let shown = request.attr("mcp.session.id").expect("a session id");
    assert_eq!(shown.len(), 16, "{shown}");
    assert!(!session.contains(shown) && shown != session);
    let upstream = one(&spans, "tools/call a__echo", CLIENT);
    assert_eq!(upstream.parent_span_id, request.span_id);
    assert_eq!(upstream.span_id, span_of(&seen).1);
    assert_eq!(upstream.attr("capable.server"), Some("a"));
}

#[test]
fn an_http_server_gets_the_upstream_calls_context_as_the_traceparent_header_too() {
    if !common::peers_wanted(&[common::servers::FASTMCP]) {
        return;
    }
    // FastMCP over Streamable HTTP, with a tool that says the headers it was called with.
    let port = common::servers::free_port();
    let py = common::servers::path(common::servers::FASTMCP);
    let fastmcp = common::servers::start(
        &py,
        &["tests/peers/fastmcp_server.py", "--http", &port.to_string()],
        &[("PEER_TRACE_HEADERS", "1".to_owned())],
        port,
    );
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let env = [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
        QUICK,
    ];
    let url = fastmcp.url("/mcp");
    let mut b = Bridge::start_env(&["--url", &url], &env);
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "h", "version": "1"}});
    ask(&mut b, 0, "initialize", init);
    b.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let parent = caller_parent();
    let call = ask(
        &mut b,
        3,
        "tools/call",
        json!({"name": "trace_headers", "arguments": {},
            "_meta": {"traceparent": parent, "tracestate": "team=blue"}}),
    );
    let got = &call["result"]["structuredContent"];
    let header = got["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent header reached the server: {call}"));
    assert_eq!(got["tracestate"], "team=blue", "{call}");
    let (trace, span) = span_of(header);
    assert_eq!(trace, TRACE);
    // The header names the bridge's upstream call, not the caller's span.
    let spans = collector.spans_until(|s| s.iter().any(|s| s.kind == CLIENT));
    let upstream = one(&spans, "tools/call trace_headers", CLIENT);
    assert_eq!(upstream.span_id, span);
    assert_ne!(span, CALLER_SPAN);
}

/// `n` calls of `echo` in `session`, each answered: how long they took.
fn calls(port: u16, session: &str, n: usize) -> Duration {
    let started = Instant::now();
    for id in 0..n {
        let call = json!({"jsonrpc": "2.0", "id": 100 + id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "m"}}});
        let answer = post(port, &[("Mcp-Session-Id", session)], call);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(answer.body.contains(r#""text":"m""#), "{}", answer.body);
    }
    started.elapsed()
}

/// `capable_bridge_spans_dropped_total`, once it is at least `n` (within 20 s).
#[track_caller]
fn dropped_at_least(port: u16, n: f64) -> f64 {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let scrape = http_at(port, "GET", "/metrics", &[], "").body;
        let dropped = scrape
            .lines()
            .find_map(|l| {
                l.strip_prefix("capable_bridge_spans_dropped_total ")?
                    .parse()
                    .ok()
            })
            .unwrap_or(0.0);
        if dropped >= n {
            return dropped;
        }
        assert!(Instant::now() < until, "dropped {dropped} < {n}:\n{scrape}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_collector_that_hangs_or_is_down_never_slows_a_call_and_what_it_lost_is_counted() {
    // A collector that takes the connection and never answers, and exports that may
    // wait 30 s each: were a call to wait for one, 40 calls would take minutes.
    let hanging = Collector::hanging();
    let endpoint = hanging.endpoint();
    let env = [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "30000"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "4"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2"),
        QUICK,
    ];
    let server = common::fixture("no-resources");
    let mut args = vec!["--"];
    args.extend(server.iter().map(String::as_str));
    let (_b, port) = listening_env(&args, &env);
    let session = open_session(port);
    let took = calls(port, &session, 40);
    assert!(took < Duration::from_secs(10), "40 calls took {took:?}");
    // Two spans a call, a queue of four: most were dropped, and said to be.
    dropped_at_least(port, 40.0);

    // A collector that is down: every batch is lost, and counted.
    let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1/traces",
        down.local_addr().unwrap().port()
    );
    drop(down);
    let env = [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
        QUICK,
    ];
    let (_b, port) = listening_env(&args, &env);
    let session = open_session(port);
    let took = calls(port, &session, 10);
    assert!(took < Duration::from_secs(10), "10 calls took {took:?}");
    dropped_at_least(port, 20.0);

    // The same over gRPC.
    let endpoint = endpoint.trim_end_matches("/v1/traces");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        QUICK,
    ];
    let (_b, port) = listening_env(&args, &env);
    let session = open_session(port);
    let took = calls(port, &session, 10);
    assert!(took < Duration::from_secs(10), "10 calls took {took:?}");
    dropped_at_least(port, 20.0);
}

#[test]
fn without_a_collector_named_nothing_is_traced_or_counted() {
    let server = common::fixture("no-resources");
    let mut args = vec!["--"];
    args.extend(server.iter().map(String::as_str));
    let (_b, port) = listening_env(&args, &[]);
    let session = open_session(port);
    calls(port, &session, 1);
    let scrape = http_at(port, "GET", "/metrics", &[], "").body;
    assert!(!scrape.contains("spans_dropped"), "{scrape}");
}
