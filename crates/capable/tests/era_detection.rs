//! Which era a server speaks is found by asking, never assumed: `server/discover`
//! first; any answer that is not a modern one — or silence within the probe timeout —
//! means legacy. A forced era sends no probe; an era the host remembers (the era hint)
//! orders the handshake and never locks a server out of the other era.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capable::{connect_stdio, Era, Method, ProtocolChoice, ProtocolVersion, ServerCommand};
use common::{fixture, real_peer, within, RealPeer, Scripted, Wire, MANUAL};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// The server's answer to the probe, if any.
fn probe_answer(wire: &Wire) -> Option<Value> {
    let probe = wire.sent_requests("server/discover").into_iter().next()?;
    wire.received()
        .into_iter()
        .find(|m| m.get("method").is_none() && m["id"] == probe["id"])
}

/// Connects with `Auto`, reads the manual, and returns the wire.
async fn auto_legacy(server: &ServerCommand) -> Wire {
    let (session, wire) = common::open(server, Era::Legacy).await;
    session.close().await;
    wire.assert_legacy_order();
    wire
}

#[track_caller]
fn assert_probed_then_initialized(wire: &Wire) {
    let methods = wire.sent_methods();
    assert_eq!(
        methods[..3],
        ["server/discover", "initialize", "notifications/initialized"],
        "{methods:?}"
    );
}

#[tokio::test]
async fn a_legacy_fixture_that_answers_the_probe_method_not_found_is_spoken_to_in_legacy() {
    within(LIMIT, async {
        let wire = auto_legacy(&fixture("read-only")).await;
        assert_probed_then_initialized(&wire);
        let answer = probe_answer(&wire).expect("the probe was answered");
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
    })
    .await
}

#[tokio::test]
async fn server_everything_answers_the_probe_method_not_found_and_is_spoken_to_in_legacy() {
    let Some(server) = real_peer(RealPeer::Everything) else {
        return;
    };
    within(LIMIT, async {
        let wire = auto_legacy(&server).await;
        assert_probed_then_initialized(&wire);
        let answer = probe_answer(&wire).expect("the probe was answered");
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
    })
    .await
}

#[tokio::test]
async fn a_legacy_server_that_answers_the_probe_invalid_params_is_spoken_to_in_legacy() {
    within(LIMIT, async {
        let wire = auto_legacy(&fixture("probe-invalid-params")).await;
        assert_probed_then_initialized(&wire);
        let answer = probe_answer(&wire).expect("the probe was answered");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    })
    .await
}

#[tokio::test]
async fn a_legacy_server_that_ignores_the_probe_costs_only_the_probe_timeout() {
    within(LIMIT, async {
        let probe_timeout = Duration::from_millis(300);
        let wire = Wire::default();
        let mut options = wire.options();
        options.config.timeouts.probe = probe_timeout;
        let started = Instant::now();
        let session = connect_stdio(&fixture("silent-probe"), options)
            .await
            .expect("connect");
        let took = started.elapsed();
        common::assert_era(&session, Era::Legacy, &wire);
        let read = session.read_resource(MANUAL).await.expect("read");
        assert!(read.text().contains("Acceptance instructions"));
        session.close().await;

        // That it costs no more than the probe timeout is shown in paused time below (a
        // real process cannot run under a paused clock).
        assert!(
            took >= probe_timeout,
            "connected in {took:?}, before the probe timeout of {probe_timeout:?} elapsed"
        );
        assert_probed_then_initialized(&wire);
        assert!(probe_answer(&wire).is_none(), "the silent server answered");
        wire.assert_legacy_order();
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_silent_probe_costs_exactly_the_probe_timeout_in_paused_time() {
    within(LIMIT, async {
        // A legacy server scripted in-process: it never answers `server/discover`, and
        // records when `initialize` arrived (on tokio's paused clock).
        let initialized_at = Arc::new(Mutex::new(None));
        let seen = initialized_at.clone();
        let server = Scripted::new(Box::new(move |msg: &Value| {
            let id = msg["id"].clone();
            match msg["method"].as_str() {
                Some("initialize") => {
                    *seen.lock().unwrap() = Some(tokio::time::Instant::now());
                    vec![capable_test_support::initialize_result(
                        &id,
                        "2025-11-25",
                        json!({"resources": {}}),
                    )]
                }
                Some("resources/read") => vec![json!({"jsonrpc": "2.0", "id": id, "result": {
                    "contents": [{"uri": MANUAL, "text": "Acceptance instructions (scripted)"}]
                }})],
                _ => Vec::new(),
            }
        }));
        let probe_timeout = Duration::from_millis(300);
        let wire = Wire::default();
        let mut options = wire.options();
        options.config.timeouts.probe = probe_timeout;
        let started = tokio::time::Instant::now();
        let session = capable::connect(server, options).await.expect("connect");
        assert_eq!(
            started.elapsed(),
            probe_timeout,
            "connecting costs exactly the probe timeout"
        );
        let initialized_at = initialized_at.lock().unwrap().expect("initialize arrived");
        assert_eq!(
            initialized_at - started,
            probe_timeout,
            "initialize is sent when the probe times out"
        );
        common::assert_era(&session, Era::Legacy, &wire);
        let read = session.read_resource(MANUAL).await.expect("read");
        assert!(read.text().contains("Acceptance instructions"));
        session.close().await;

        assert_eq!(
            wire.sent_methods(),
            [
                "server/discover",
                "initialize",
                "notifications/initialized",
                "resources/read"
            ]
        );
        assert!(probe_answer(&wire).is_none(), "the silent server answered");
        wire.assert_legacy_order();
        wire.assert_schema_valid(ProtocolVersion::V2025_11_25);
    })
    .await
}

#[tokio::test]
async fn the_modern_fixture_is_spoken_to_in_the_modern_era_without_initialize() {
    within(LIMIT, async {
        let (session, wire) = common::open(&fixture("modern"), Era::Modern).await;
        session.read_resource(MANUAL).await.expect("read");
        session.close().await;
        let methods = wire.sent_methods();
        assert_eq!(methods, ["server/discover", "resources/read"]);
    })
    .await
}

#[tokio::test]
async fn the_python_server_is_spoken_to_in_the_modern_era_without_initialize() {
    let Some(server) = real_peer(RealPeer::Python) else {
        return;
    };
    within(LIMIT, async {
        let (session, wire) = common::open(&server, Era::Modern).await;
        assert_eq!(session.server_info().name, "capable-python-peer");
        // Modern capabilities come from server/discover: subscribe is declared there.
        session.check(Method::Listen).expect("listen is offered");
        session.read_resource(MANUAL).await.expect("read");
        session.close().await;
        let methods = wire.sent_methods();
        assert_eq!(methods, ["server/discover", "resources/read"]);
    })
    .await
}

#[tokio::test]
async fn forcing_legacy_against_the_python_server_sends_no_probe_and_sees_no_subscribe() {
    let Some(server) = real_peer(RealPeer::Python) else {
        return;
    };
    within(LIMIT, async {
        let wire = Wire::default();
        let mut options = wire.options();
        options.config.protocol = ProtocolChoice::Legacy;
        let session = connect_stdio(&server, options).await.expect("connect");
        common::assert_era(&session, Era::Legacy, &wire);
        // In its legacy era the Python server declares resources.subscribe = false.
        assert!(session.check(Method::Subscribe).is_err());
        assert!(session.subscribe(MANUAL).await.is_err());
        session.read_resource(MANUAL).await.expect("read");
        session.close().await;
        let methods = wire.sent_methods();
        assert_eq!(
            methods,
            ["initialize", "notifications/initialized", "resources/read"]
        );
        wire.assert_legacy_order();
    })
    .await
}

#[tokio::test]
async fn a_legacy_era_hint_from_the_first_connection_skips_the_probe() {
    within(LIMIT, async {
        let server = fixture("read-only");
        let first = Wire::default();
        let session = connect_stdio(&server, first.options())
            .await
            .expect("first connect");
        common::assert_era(&session, Era::Legacy, &first);
        let remembered = session.era();
        session.close().await;
        assert_eq!(first.sent_methods()[0], "server/discover");

        let second = Wire::default();
        let options = second.options().with_era_hint(Some(remembered));
        let session = connect_stdio(&server, options)
            .await
            .expect("second connect");
        common::assert_era(&session, Era::Legacy, &second);
        session.read_resource(MANUAL).await.expect("read");
        session.close().await;
        let methods = second.sent_methods();
        assert_eq!(
            methods,
            ["initialize", "notifications/initialized", "resources/read"],
            "the era is remembered: no second probe"
        );
    })
    .await
}

#[tokio::test]
async fn a_modern_era_hint_keeps_a_modern_server_modern() {
    within(LIMIT, async {
        let server = fixture("modern");
        let mut hint = None;
        for _ in 0..2 {
            let wire = Wire::default();
            let options = wire.options().with_era_hint(hint);
            let session = connect_stdio(&server, options).await.expect("connect");
            common::assert_era(&session, Era::Modern, &wire);
            hint = Some(session.era());
            session.close().await;
            assert_eq!(wire.sent_methods(), ["server/discover"]);
        }
    })
    .await
}

#[tokio::test]
async fn a_legacy_hint_never_locks_out_a_server_that_became_modern() {
    within(LIMIT, async {
        // The host remembers legacy; the server is modern-only now and refuses
        // initialize, naming what it speaks. The client probes and speaks modern.
        let wire = Wire::default();
        let options = wire.options().with_era_hint(Some(Era::Legacy));
        let session = connect_stdio(&fixture("modern"), options)
            .await
            .expect("connect despite the stale hint");
        common::assert_era(&session, Era::Modern, &wire);
        session.read_resource(MANUAL).await.expect("read");
        session.close().await;
        assert_eq!(
            wire.sent_methods(),
            ["initialize", "server/discover", "resources/read"]
        );
    })
    .await
}

#[tokio::test]
async fn a_modern_hint_never_locks_out_a_server_that_is_legacy_now() {
    within(LIMIT, async {
        let wire = Wire::default();
        let options = wire.options().with_era_hint(Some(Era::Modern));
        let session = connect_stdio(&fixture("read-only"), options)
            .await
            .expect("connect despite the stale hint");
        common::assert_era(&session, Era::Legacy, &wire);
        session.close().await;
        assert_probed_then_initialized(&wire);
        wire.assert_legacy_order();
    })
    .await
}
