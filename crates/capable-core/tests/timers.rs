//! Every timing rule of the core, on a made-up clock: the probe timeout, the handshake
//! timeout, request deadlines, their extension by progress up to the cap, the closed
//! state, and the era hint that orders the handshake without locking a server out.
//! Nothing here sleeps: time is an argument.

use std::time::Duration;

use capable_core::internal::jsonrpc::codes;
use capable_core::Outbox;
use capable_core::{
    ClientConfig, Connection, Era, Event, Method, Negotiating, NegotiationError, NotSent, Notice,
    Now, ProtocolChoice, ProtocolVersion, Step, Timing,
};
use capable_test_support::{
    at_ms, config, discover_result, incoming, initialize_result, legacy_connection, now, t0, take,
};
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

type Conn = Connection<&'static str>;

fn timed(request: Duration, progress_cap: Duration) -> Conn {
    let mut cfg = config(ProtocolChoice::Legacy);
    cfg.timeouts.request = request;
    cfg.timeouts.progress_cap = progress_cap;
    legacy_connection(cfg, V, json!({"resources": {}, "tools": {}}))
}

fn read(conn: &mut Conn, timing: Timing, waiter: &'static str, at: u64) -> i64 {
    let mut out = Outbox::new();
    let id = conn
        .request(
            Method::ReadResource,
            &json!({"uri": "docs://a"}),
            timing,
            waiter,
            at_ms(at),
            &mut out,
        )
        .unwrap_or_else(|(why, _)| panic!("not sent: {why}"));
    take(V, &mut out);
    id
}

fn progress(conn: &mut Conn, id: i64, at: u64) -> Event<&'static str> {
    let mut out = Outbox::new();
    let message = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": id, "progress": at as f64}});
    let event = conn.handle(incoming(message), Now::new(at_ms(at), now()), &mut out);
    assert!(out.is_empty(), "progress is never answered");
    event
}

/// Calls `handle_timeout` at `at` ms and returns the waiters that timed out, checking
/// that a valid `notifications/cancelled` was written for each.
fn expire(conn: &mut Conn, at: u64) -> Vec<(&'static str, Duration)> {
    let mut out = Outbox::new();
    let expired = conn.handle_timeout(at_ms(at), &mut out);
    let sent = take(V, &mut out);
    assert_eq!(sent.len(), expired.len());
    for (message, e) in sent.iter().zip(&expired) {
        assert_eq!(message["method"], "notifications/cancelled");
        assert_eq!(message["params"]["requestId"], json!(e.id));
    }
    expired.into_iter().map(|e| (e.waiter, e.after)).collect()
}

#[test]
fn a_request_times_out_at_its_deadline_and_not_a_moment_before() {
    let mut conn = timed(Duration::from_secs(3), Duration::from_secs(600));
    let id = read(&mut conn, Timing::new(), "read", 0);
    assert_eq!(conn.poll_timeout(), Some(at_ms(3000)));
    assert!(expire(&mut conn, 2999).is_empty(), "not yet");
    assert_eq!(conn.in_flight(), 1);
    assert_eq!(expire(&mut conn, 3000), [("read", Duration::from_secs(3))]);
    assert_eq!(conn.in_flight(), 0);
    assert_eq!(conn.poll_timeout(), None, "nothing left to time");
    // The answer that comes after is dropped as late.
    let mut out = Outbox::new();
    let late = json!({"jsonrpc": "2.0", "id": id, "result": {"contents": []}});
    assert!(matches!(
        capable_test_support::feed(&mut conn, late, &mut out),
        Event::Handled
    ));
    assert!(conn
        .take_notices()
        .iter()
        .any(|n| matches!(n, Notice::LateResponse { .. })));
}

#[test]
fn each_request_may_have_its_own_timeout_and_a_listen_stream_none() {
    let mut conn = timed(Duration::from_secs(60), Duration::from_secs(600));
    read(
        &mut conn,
        Timing::new().with_timeout(Some(Duration::from_millis(500))),
        "short",
        0,
    );
    read(&mut conn, Timing::new(), "default", 100);
    assert_eq!(conn.poll_timeout(), Some(at_ms(500)));
    assert_eq!(
        expire(&mut conn, 500),
        [("short", Duration::from_millis(500))]
    );
    assert_eq!(conn.poll_timeout(), Some(at_ms(60_100)));
    assert_eq!(
        expire(&mut conn, 60_100),
        [("default", Duration::from_secs(60))]
    );

    let mut modern: Connection<&str> = capable_test_support::modern_connection(
        config(ProtocolChoice::Auto),
        json!({"resources": {"subscribe": true}}),
    );
    let mut out = Outbox::new();
    let filter = capable_core::ListenFilter {
        resource_subscriptions: vec!["docs://a".into()],
        ..Default::default()
    };
    modern.listen(&filter, "listen", t0(), &mut out).unwrap();
    take(MODERN, &mut out);
    assert_eq!(modern.poll_timeout(), None, "a listen stream is not timed");
    assert!(modern
        .handle_timeout(at_ms(365 * 24 * 3600 * 1000), &mut out)
        .is_empty());
}

#[test]
fn progress_restarts_the_timeout_but_never_past_the_cap() {
    let mut conn = timed(Duration::from_secs(3), Duration::from_secs(10));
    let id = read(&mut conn, Timing::new().with_progress(true), "slow", 0);
    // Progress every 2 s keeps it alive: each restarts the 3 s timeout…
    for at in [2000, 4000, 6000] {
        assert!(matches!(
            progress(&mut conn, id, at),
            Event::Progress { .. }
        ));
        assert!(expire(&mut conn, at + 2999).is_empty(), "extended at {at}");
    }
    // …but never past 10 s after it was sent, however much progress comes.
    for at in [8000, 9500] {
        assert!(matches!(
            progress(&mut conn, id, at),
            Event::Progress { .. }
        ));
        assert!(expire(&mut conn, 9999).is_empty());
    }
    assert_eq!(
        expire(&mut conn, 10_000),
        [("slow", Duration::from_secs(10))]
    );
}

#[test]
fn progress_for_a_request_that_did_not_ask_for_it_extends_nothing() {
    let mut conn = timed(Duration::from_secs(3), Duration::from_secs(600));
    let id = read(&mut conn, Timing::new(), "plain", 0);
    assert!(matches!(progress(&mut conn, id, 2000), Event::Handled));
    assert!(conn
        .take_notices()
        .iter()
        .any(|n| matches!(n, Notice::UnknownProgress { .. })));
    assert_eq!(
        expire(&mut conn, 3000).len(),
        1,
        "the timeout was not restarted"
    );
}

#[test]
fn the_timer_is_a_lower_bound_that_an_early_wake_refreshes() {
    let mut conn = timed(Duration::from_secs(3), Duration::from_secs(600));
    let first = read(&mut conn, Timing::new(), "first", 0);
    read(&mut conn, Timing::new(), "second", 1000);
    let mut out = Outbox::new();
    let answer = json!({"jsonrpc": "2.0", "id": first, "result": {"contents": []}});
    assert!(matches!(
        capable_test_support::feed(&mut conn, answer, &mut out),
        Event::Response { .. }
    ));
    // The answered request's deadline may still wake the host: nothing is due then,
    // and the bound moves to what is left.
    assert_eq!(conn.poll_timeout(), Some(at_ms(3000)));
    assert!(expire(&mut conn, 3000).is_empty());
    assert_eq!(conn.poll_timeout(), Some(at_ms(4000)));
}

#[test]
fn an_absurd_timeout_does_not_overflow() {
    let mut conn = timed(Duration::MAX, Duration::MAX);
    read(&mut conn, Timing::new().with_progress(true), "forever", 0);
    read(
        &mut conn,
        Timing::new().with_timeout(Some(Duration::MAX)),
        "also",
        0,
    );
    let at = conn.poll_timeout().expect("timed");
    assert!(at > at_ms(10 * 365 * 24 * 3600 * 1000));
}

#[test]
fn a_closed_connection_sends_routes_and_times_out_nothing() {
    let mut conn = timed(Duration::from_secs(3), Duration::from_secs(600));
    read(&mut conn, Timing::new(), "a", 0);
    read(&mut conn, Timing::new(), "b", 0);
    let mut waiters = conn.close();
    waiters.sort();
    assert_eq!(
        waiters,
        ["a", "b"],
        "every waiter is handed back to be failed"
    );
    assert!(conn.is_closed());
    assert_eq!(conn.poll_timeout(), None);
    let mut out = Outbox::new();
    let refused = conn.request(
        Method::ReadResource,
        &json!({"uri": "docs://a"}),
        Timing::new(),
        "c",
        t0(),
        &mut out,
    );
    assert!(matches!(refused, Err((NotSent::Closed, "c"))));
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    assert!(matches!(
        capable_test_support::feed(&mut conn, ping, &mut out),
        Event::Handled
    ));
    assert!(conn.handle_timeout(at_ms(99_000), &mut out).is_empty());
    assert!(conn.cancel(0, "late", &mut out).is_none());
    assert!(
        out.is_empty(),
        "nothing is written once closed: {:?}",
        String::from_utf8_lossy(&out)
    );
}

// ── the handshake's clock ─────────────────────────────────────────────────────

fn timed_config(protocol: ProtocolChoice) -> ClientConfig {
    let mut cfg = config(protocol);
    cfg.timeouts.probe = Duration::from_millis(300);
    cfg.timeouts.request = Duration::from_secs(5);
    cfg
}

fn first_message(out: &mut Outbox, version: ProtocolVersion) -> Value {
    let mut sent = take(version, out);
    assert_eq!(sent.len(), 1, "{sent:?}");
    sent.remove(0)
}

#[test]
fn the_probe_waits_its_timeout_then_initialize_waits_the_request_timeout() {
    let mut out = Outbox::new();
    let n = Negotiating::start(timed_config(ProtocolChoice::Auto), t0(), &mut out);
    assert_eq!(first_message(&mut out, MODERN)["method"], "server/discover");
    assert_eq!(n.poll_timeout(), at_ms(300));
    let Step::Waiting(n) = n.handle_timeout(at_ms(299), &mut out) else {
        panic!("gave up early")
    };
    assert!(out.is_empty(), "nothing before the probe timeout");
    let Step::Waiting(n) = n.handle_timeout(at_ms(300), &mut out) else {
        panic!("no fallback")
    };
    assert_eq!(first_message(&mut out, V)["method"], "initialize");
    assert_eq!(
        n.poll_timeout(),
        at_ms(5300),
        "the request timeout, from the fallback"
    );
    let Step::Failed(error) = n.handle_timeout(at_ms(5300), &mut out) else {
        panic!("initialize never times out")
    };
    assert_eq!(
        error,
        NegotiationError::Timeout {
            method: Method::Initialize,
            after: Duration::from_millis(5300)
        },
        "the whole handshake: the probe's 300 ms and initialize's 5 s"
    );
    assert!(out.is_empty(), "nothing is sent after giving up");
}

#[test]
fn a_probe_that_cannot_fall_back_waits_as_long_as_any_request() {
    // Only the modern era is allowed: `server/discover` is the handshake, and a server
    // slow to start is not refused after the short probe timeout.
    let mut out = Outbox::new();
    let n = Negotiating::start(timed_config(ProtocolChoice::Modern), t0(), &mut out);
    assert_eq!(first_message(&mut out, MODERN)["method"], "server/discover");
    assert_eq!(n.poll_timeout(), at_ms(5000), "the request timeout");
    let Step::Waiting(n) = n.handle_timeout(at_ms(300), &mut out) else {
        panic!("gave up at the probe timeout")
    };
    assert!(out.is_empty(), "no fallback: nothing else to send");
    let Step::Failed(error) = n.handle_timeout(at_ms(5000), &mut out) else {
        panic!("never times out")
    };
    assert_eq!(
        error,
        NegotiationError::Timeout {
            method: Method::Discover,
            after: Duration::from_millis(5000)
        }
    );
    assert!(out.is_empty(), "nothing is sent after giving up");
}

fn hinted(hint: Option<Era>, protocol: ProtocolChoice) -> (Negotiating, Value) {
    let mut cfg = timed_config(protocol);
    cfg.era_hint = hint;
    let mut out = Outbox::new();
    let n = Negotiating::start(cfg, t0(), &mut out);
    let version = if n.is_probing() { MODERN } else { V };
    let first = first_message(&mut out, version);
    (n, first)
}

fn error(id: &Value, code: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "no"}})
}

#[test]
fn a_legacy_hint_starts_with_initialize_and_costs_no_probe() {
    let (n, first) = hinted(Some(Era::Legacy), ProtocolChoice::Auto);
    assert_eq!(first["method"], "initialize");
    assert_eq!(
        n.poll_timeout(),
        at_ms(5000),
        "no probe timeout to wait out"
    );
    let mut out = Outbox::new();
    let answer = initialize_result(&first["id"], "2025-11-25", json!({"resources": {}}));
    let Step::Ready(established) = n.handle(incoming(answer), t0(), &mut out) else {
        panic!("not ready")
    };
    assert_eq!(established.negotiated.era(), Era::Legacy);
    assert_eq!(
        first_message(&mut out, V)["method"],
        "notifications/initialized"
    );
}

#[test]
fn a_legacy_hint_never_locks_a_server_that_became_modern_out() {
    let (n, first) = hinted(Some(Era::Legacy), ProtocolChoice::Auto);
    let mut out = Outbox::new();
    // A modern-only server refuses initialize (naming what it speaks, as it should).
    let mut refusal = error(&first["id"], codes::INVALID_PARAMS);
    refusal["error"]["data"] = json!({"supported": ["2026-07-28"]});
    let Step::Waiting(mut n) = n.handle(incoming(refusal), t0(), &mut out) else {
        panic!("the refusal was final")
    };
    let probe = first_message(&mut out, MODERN);
    assert_eq!(probe["method"], "server/discover");
    assert!(n
        .take_notices()
        .iter()
        .any(|notice| matches!(notice, Notice::ModernFallback { .. })));
    let answer = discover_result(&probe["id"], json!({"tools": {}}));
    let Step::Ready(established) = n.handle(incoming(answer), t0(), &mut out) else {
        panic!("not ready")
    };
    assert_eq!(established.negotiated.era(), Era::Modern);
    assert!(out.is_empty());
}

#[test]
fn a_legacy_hint_refused_by_both_eras_reports_the_refusal_without_a_second_initialize() {
    let (n, first) = hinted(Some(Era::Legacy), ProtocolChoice::Auto);
    let mut out = Outbox::new();
    let Step::Waiting(n) = n.handle(
        incoming(error(&first["id"], codes::INTERNAL_ERROR)),
        t0(),
        &mut out,
    ) else {
        panic!("no probe")
    };
    let probe = first_message(&mut out, MODERN);
    let step = n.handle(
        incoming(error(&probe["id"], codes::METHOD_NOT_FOUND)),
        t0(),
        &mut out,
    );
    let Step::Failed(NegotiationError::InitializeRefused(e)) = step else {
        panic!("{step:?}")
    };
    assert_eq!(
        e.code,
        codes::INTERNAL_ERROR,
        "the initialize refusal is the answer"
    );
    assert!(out.is_empty(), "no second initialize");
}

#[test]
fn a_modern_hint_still_falls_back_to_initialize() {
    let (n, first) = hinted(Some(Era::Modern), ProtocolChoice::Auto);
    assert_eq!(first["method"], "server/discover");
    let mut out = Outbox::new();
    let step = n.handle(
        incoming(error(&first["id"], codes::METHOD_NOT_FOUND)),
        t0(),
        &mut out,
    );
    let Step::Waiting(n) = step else {
        panic!("{step:?}")
    };
    let init = first_message(&mut out, V);
    assert_eq!(init["method"], "initialize");
    let answer = initialize_result(&init["id"], "2025-06-18", json!({}));
    assert!(matches!(
        n.handle(incoming(answer), t0(), &mut out),
        Step::Ready(_)
    ));
}

#[test]
fn a_forced_protocol_ignores_the_hint() {
    let (_, first) = hinted(Some(Era::Modern), ProtocolChoice::Legacy);
    assert_eq!(first["method"], "initialize");
    let (_, first) = hinted(Some(Era::Legacy), ProtocolChoice::Modern);
    assert_eq!(first["method"], "server/discover");
}
