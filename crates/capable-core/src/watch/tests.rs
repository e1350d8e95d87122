//! The watch's decisions on a made-up clock: no server, no runtime.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::*;
use crate::capabilities::ServerCapabilities;
use crate::model::{Implementation, ResourceContents};
use crate::version::ProtocolVersion;

const URI: &str = "docs://manual";
const MS: Duration = Duration::from_millis(1);

fn negotiated(version: ProtocolVersion, caps: Value) -> Negotiated {
    Negotiated {
        version,
        server_info: Implementation::new("docs", "1.0"),
        capabilities: ServerCapabilities::from_value(caps),
        instructions: None,
        server_versions: Vec::new(),
    }
}

fn legacy(caps: Value) -> Negotiated {
    negotiated(ProtocolVersion::V2025_11_25, caps)
}

fn modern(caps: Value) -> Negotiated {
    negotiated(ProtocolVersion::V2026_07_28, caps)
}

/// A watch behind the gating table, with `broken` methods refused as a session that
/// saw them violated would.
fn watch(
    n: &Negotiated,
    policy: WatchPolicy,
    broken: &[Method],
) -> Result<Watcher<&'static str>, Refusal> {
    let broken: HashSet<Method> = broken.iter().copied().collect();
    Watcher::new(URI, policy, n, |m| {
        if broken.contains(&m) {
            return Err(Refusal::MarkedBroken { method: m });
        }
        gating::check(m, n.version, &n.capabilities)
    })
}

fn revision(text: &str) -> Revision {
    let contents: ResourceContents =
        serde_json::from_value(json!({"uri": URI, "text": text})).expect("contents");
    Revision::of(&[contents])
}

fn violation(method: Method) -> Box<Violation> {
    Box::new(Violation {
        capability: "resources.subscribe".into(),
        method,
        request: json!({"method": method.as_str()}),
        response: json!({"error": {"code": -32601}}),
        server: Implementation::new("liar", "9.9.9"),
        protocol_version: ProtocolVersion::V2025_11_25,
        at: SystemTime::UNIX_EPOCH,
    })
}

/// Every action the watch asks for now, in order.
fn actions(w: &mut Watcher<&'static str>) -> Vec<WatchAction> {
    std::iter::from_fn(|| w.poll_action()).collect()
}

/// Every event the watch reports now, as short words.
fn events(w: &mut Watcher<&'static str>) -> Vec<String> {
    std::iter::from_fn(|| w.poll_event())
        .map(|e| match e {
            WatchEvent::Mode { mode, interval, .. } => match interval {
                Some(i) => format!("mode {} {}ms", mode.as_str(), i.as_millis()),
                None => format!("mode {}", mode.as_str()),
            },
            WatchEvent::Revision(read) => format!("revision {read}"),
            WatchEvent::Violation(v) => format!("violation {}", v.method),
        })
        .collect()
}

#[test]
fn the_mode_follows_what_was_negotiated_alone() {
    let subscribe = json!({"resources": {"subscribe": true}});
    let plain = json!({"resources": {}});
    let poll = WatchPolicy::poll(Duration::from_secs(5));
    let none = WatchPolicy::subscriptions_only();
    let mode = |n: &Negotiated, p| watch(n, p, &[]).map(|w| w.mode());
    assert_eq!(
        mode(&legacy(subscribe.clone()), none),
        Ok(WatchMode::Subscribe)
    );
    assert_eq!(
        mode(&legacy(subscribe.clone()), poll),
        Ok(WatchMode::Subscribe)
    );
    assert_eq!(
        mode(&modern(subscribe.clone()), none),
        Ok(WatchMode::Listen)
    );
    assert_eq!(mode(&legacy(plain.clone()), poll), Ok(WatchMode::Poll));
    assert_eq!(mode(&modern(plain.clone()), poll), Ok(WatchMode::Poll));
    // No subscription and no policy: refused by the gate, saying what is missing.
    assert!(matches!(
        mode(&legacy(plain.clone()), none),
        Err(Refusal::FlagNotDeclared {
            method: Method::Subscribe,
            flag: Flag::Subscribe,
            ..
        })
    ));
    assert!(matches!(
        mode(&modern(plain), none),
        Err(Refusal::FlagNotDeclared {
            method: Method::Listen,
            ..
        })
    ));
    // No resources at all: not even a read is allowed, whatever the policy.
    assert!(matches!(
        mode(&legacy(json!({"tools": {}})), poll),
        Err(Refusal::CapabilityNotDeclared {
            method: Method::ReadResource,
            ..
        })
    ));
}

#[test]
fn a_subscription_broken_earlier_polls_when_allowed_and_is_refused_otherwise() {
    let n = legacy(json!({"resources": {"subscribe": true}}));
    let poll = WatchPolicy::poll(Duration::from_secs(5));
    let mut w = watch(&n, poll, &[Method::Subscribe]).expect("polls");
    assert_eq!(w.mode(), WatchMode::Poll);
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    assert!(w.poll_event().is_none(), "not before the read is back");
    w.handle_read(Instant::now(), "r0", &revision("a"), None);
    let Some(WatchEvent::Mode { reason, .. }) = w.poll_event() else {
        panic!("the mode first")
    };
    assert!(reason.contains("refused earlier"), "{reason}");
    assert_eq!(
        watch(&n, WatchPolicy::default(), &[Method::Subscribe]).err(),
        Some(Refusal::MarkedBroken {
            method: Method::Subscribe
        })
    );
}

#[test]
fn a_subscription_reads_once_per_burst_of_updates_that_concern_the_uri() {
    let n = legacy(json!({"resources": {"subscribe": true}}));
    let mut w = watch(&n, WatchPolicy::default(), &[]).unwrap();
    let t0 = Instant::now();
    // Subscribed before anything is reported, then the first read.
    assert_eq!(w.poll_action(), Some(WatchAction::Subscribe));
    assert!(w.poll_event().is_none(), "events wait for the action");
    w.handle_subscribed();
    assert!(w.is_subscribed());
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    w.handle_read(t0, "r0", &revision("a"), None);
    assert_eq!(events(&mut w), ["mode subscribe", "revision r0"]);
    assert_eq!(w.poll_timeout(), None, "a subscription waits for updates");

    // Three updates (one of a sub-resource) are one read; another URI none.
    w.handle_update("docs://manual/ch1");
    w.handle_update(URI);
    w.handle_update("docs://manual#top");
    w.handle_update("docs://manualx");
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    // The same content again: nothing to report.
    w.handle_read(t0 + MS, "r1", &revision("a"), None);
    assert!(events(&mut w).is_empty());
    w.handle_update("docs://other");
    assert!(actions(&mut w).is_empty());
    // Fell behind the event stream: an update may be lost, so a read.
    w.handle_lagged();
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    w.handle_read(t0 + 2 * MS, "r2", &revision("b"), None);
    assert_eq!(events(&mut w), ["revision r2"]);

    w.close();
    assert_eq!(actions(&mut w), [WatchAction::Unsubscribe]);
    assert!(!w.is_subscribed());
    assert_eq!(w.end(), None);
}

#[test]
fn a_broken_subscription_is_reported_then_polled_at_the_callers_interval() {
    let n = legacy(json!({"resources": {"subscribe": true}}));
    let mut w = watch(&n, WatchPolicy::poll(Duration::from_millis(50)), &[]).unwrap();
    let t0 = Instant::now();
    assert_eq!(w.poll_action(), Some(WatchAction::Subscribe));
    w.handle_violation(t0, violation(Method::Subscribe));
    // No read had been made: the first one now.
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    w.handle_read(t0, "r0", &revision("a"), None);
    assert_eq!(
        events(&mut w),
        [
            "mode subscribe",
            "violation resources/subscribe",
            "mode poll 50ms",
            "revision r0"
        ]
    );
    assert_eq!(w.mode(), WatchMode::Poll);
    assert!(!w.is_subscribed(), "nothing to unsubscribe");
    // Updates no longer lead to reads; time does.
    w.handle_update(URI);
    assert!(actions(&mut w).is_empty());
    assert_eq!(w.poll_timeout(), Some(t0 + 50 * MS));
    w.handle_timeout(t0 + 49 * MS);
    assert!(
        actions(&mut w).is_empty(),
        "a wake-up before the time is harmless"
    );
    w.handle_timeout(t0 + 50 * MS);
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    assert_eq!(w.poll_timeout(), None, "a read is due, not a timer");
    w.close();
    assert!(actions(&mut w).is_empty(), "nothing to undo");
}

#[test]
fn without_a_policy_a_violation_ends_the_watch_and_nothing_more_is_sent() {
    let n = legacy(json!({"resources": {"subscribe": true}}));
    let mut w = watch(&n, WatchPolicy::default(), &[]).unwrap();
    assert_eq!(w.poll_action(), Some(WatchAction::Subscribe));
    w.handle_violation(Instant::now(), violation(Method::Subscribe));
    assert!(actions(&mut w).is_empty(), "no read after the refusal");
    assert_eq!(w.end(), None, "the events come first");
    assert_eq!(
        events(&mut w),
        ["mode subscribe", "violation resources/subscribe"]
    );
    let Some(WatchEnd::Violation(v)) = w.end() else {
        panic!("the violation ends it")
    };
    assert_eq!(v.server.name, "liar");
    assert!(w.end().is_some(), "and it stays ended");
    w.handle_update(URI);
    assert!(actions(&mut w).is_empty());
}

#[test]
fn a_listen_stream_acknowledged_without_the_uri_falls_back_to_polling() {
    let n = modern(json!({"resources": {"subscribe": true}}));
    let mut w = watch(&n, WatchPolicy::poll(Duration::from_secs(2)), &[]).unwrap();
    let t0 = Instant::now();
    assert_eq!(
        w.poll_action(),
        Some(WatchAction::Listen(listen_filter(URI)))
    );
    w.handle_listening();
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    w.handle_read(t0, "r0", &revision("a"), Some(60_000.0));
    assert_eq!(events(&mut w), ["mode listen", "revision r0"]);
    // A ttl does not matter while the server tells of changes.
    assert_eq!(w.poll_timeout(), None);

    // Honoured: nothing changes. An update on the stream: a read.
    w.handle_acknowledged(t0, &json!({"resourceSubscriptions": [URI]}));
    assert!(actions(&mut w).is_empty() && events(&mut w).is_empty());
    w.handle_notification(&Notification::ResourceUpdated { uri: URI.into() });
    w.handle_notification(&Notification::ToolsListChanged);
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    w.handle_read(t0 + MS, "r1", &revision("b"), None);
    assert_eq!(events(&mut w), ["revision r1"]);

    // Acknowledged without the URI: the stream is let go, polling starts an interval on.
    let t1 = t0 + Duration::from_secs(1);
    w.handle_acknowledged(t1, &json!({"resourceSubscriptions": []}));
    assert_eq!(actions(&mut w), [WatchAction::StopListening]);
    let Some(WatchEvent::Mode {
        mode: WatchMode::Poll,
        reason,
        interval: Some(interval),
    }) = w.poll_event()
    else {
        panic!("a fallback to polling")
    };
    assert!(
        reason.contains("acknowledged the subscription without docs://manual"),
        "{reason}"
    );
    assert_eq!(interval, Duration::from_secs(2));
    assert_eq!(w.poll_timeout(), Some(t1 + Duration::from_secs(2)));
    w.close();
    assert!(actions(&mut w).is_empty(), "the stream is already let go");
}

#[test]
fn a_listen_stream_the_server_ends_ends_the_watch_without_a_policy() {
    let n = modern(json!({"resources": {"subscribe": true}}));
    let t0 = Instant::now();
    for end in ["completed", "cancelled", "violation"] {
        let mut w = watch(&n, WatchPolicy::default(), &[]).unwrap();
        assert!(matches!(w.poll_action(), Some(WatchAction::Listen(_))));
        w.handle_listening();
        assert_eq!(actions(&mut w), [WatchAction::Read]);
        w.handle_read(t0, "r0", &revision("a"), None);
        match end {
            "completed" => w.handle_listen_completed(t0),
            "cancelled" => w.handle_listen_ended(t0, "shutting down".into()),
            _ => w.handle_violation(t0, violation(Method::Listen)),
        }
        assert_eq!(actions(&mut w), [WatchAction::StopListening], "{end}");
        events(&mut w);
        match (end, w.end()) {
            ("completed", Some(WatchEnd::ListenEnded { reason })) => {
                assert_eq!(reason, "it completed the listen request")
            }
            ("cancelled", Some(WatchEnd::ListenEnded { reason })) => {
                assert_eq!(reason, "shutting down")
            }
            ("violation", Some(WatchEnd::Violation(_))) => {}
            (end, other) => panic!("{end}: {other:?}"),
        }
        assert_eq!(w.poll_timeout(), None);
    }
}

#[test]
fn a_listen_stream_the_server_ends_is_polled_after_when_allowed() {
    let n = modern(json!({"resources": {"subscribe": true}}));
    let mut w = watch(&n, WatchPolicy::poll(Duration::from_millis(300)), &[]).unwrap();
    let t0 = Instant::now();
    actions(&mut w);
    w.handle_listening();
    actions(&mut w);
    w.handle_read(t0, "r0", &revision("a"), None);
    events(&mut w);
    w.handle_listen_ended(t0 + MS, String::new());
    assert_eq!(actions(&mut w), [WatchAction::StopListening]);
    let Some(WatchEvent::Mode { reason, .. }) = w.poll_event() else {
        panic!("the fallback")
    };
    assert_eq!(
        reason,
        "the server ended the subscription stream; falling back to the caller's re-read policy"
    );
    assert_eq!(w.poll_timeout(), Some(t0 + MS + 300 * MS));
    // A violation after the first read: polling goes on from it, not at once.
    let mut w = watch(&n, WatchPolicy::poll(Duration::from_millis(300)), &[]).unwrap();
    actions(&mut w);
    w.handle_listening();
    actions(&mut w);
    w.handle_read(t0, "r0", &revision("a"), None);
    w.handle_violation(t0 + MS, violation(Method::Listen));
    assert_eq!(actions(&mut w), [WatchAction::StopListening]);
    assert_eq!(w.poll_timeout(), Some(t0 + MS + 300 * MS));
}

#[test]
fn polling_never_reads_sooner_than_the_ttl_and_caps_an_absurd_one() {
    let n = modern(json!({"resources": {}}));
    let mut w = watch(&n, WatchPolicy::poll(Duration::from_millis(100)), &[]).unwrap();
    let t0 = Instant::now();
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    // Fresh for a second: the next read a second on, not 100 ms.
    w.handle_read(t0, "r0", &revision("a"), Some(1000.0));
    assert_eq!(events(&mut w), ["mode poll 100ms", "revision r0"]);
    assert_eq!(w.poll_timeout(), Some(t0 + Duration::from_secs(1)));
    w.handle_timeout(t0 + Duration::from_secs(1));
    assert_eq!(actions(&mut w), [WatchAction::Read]);
    // No ttl any more: the caller's interval again.
    let t1 = t0 + Duration::from_secs(1);
    w.handle_read(t1, "r1", &revision("a"), None);
    assert_eq!(w.poll_timeout(), Some(t1 + 100 * MS));
    // Nonsense is ignored; an absurd ttl is capped at a day, with a notice.
    w.handle_read(t1, "r2", &revision("a"), Some(f64::NAN));
    assert_eq!(w.poll_timeout(), Some(t1 + 100 * MS));
    assert!(w.take_notices().is_empty());
    w.handle_read(t1, "r3", &revision("a"), Some(1e30));
    assert_eq!(w.poll_timeout(), Some(t1 + time::MAX_TTL));
    assert_eq!(w.take_notices(), [Notice::TtlCapped { ttl_ms: 1e30 }]);
    assert!(events(&mut w).is_empty(), "the same revision throughout");
}
