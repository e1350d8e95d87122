//! Timeouts and cancellation through the library: a request that gets no answer fails
//! with a timeout and is cancelled, progress restarts the timeout, and a request whose
//! future is dropped is cancelled too. The timing is checked against a scripted
//! in-process server under tokio's paused clock, the rest over real stdio.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::{Error, Method, ProtocolChoice, ProtocolVersion, RequestOptions, Session};
use common::{fixture, within, Scripted, Wire, MANUAL};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_request_that_times_out_fails_with_timeout_and_is_cancelled() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("hang")).await;
        // That it fails exactly at its timeout is shown in paused time below.
        let timeout = Duration::from_millis(300);
        let err = session
            .request::<_, Value>(
                Method::ReadResource,
                &json!({"uri": MANUAL}),
                RequestOptions {
                    timeout: Some(timeout),
                    ..Default::default()
                },
            )
            .await
            .expect_err("the hang profile never answers reads");
        match &err {
            Error::Timeout { method, after } => {
                assert_eq!(*method, Method::ReadResource);
                assert!(*after >= timeout, "{err}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        let read_id = wire.sent_requests("resources/read")[0]["id"].clone();
        wire.until_sent("notifications/cancelled for the read", |s| {
            s.iter().any(|m| {
                m["method"] == "notifications/cancelled" && m["params"]["requestId"] == read_id
            })
        })
        .await;
        // The session still works for what the server does answer.
        session
            .list_resources()
            .await
            .expect("list after a timeout");
        session.close().await;
    })
    .await
}

/// A legacy server scripted in-process, like the fixture's `hang` and `slow-progress`
/// profiles: it never answers reads; `tools/call` with a progress token sends progress
/// 1/7 … 7/7 200 ms apart, then the answer; without a token it answers after 1.5 s.
fn scripted_slow() -> Scripted {
    Scripted::timed(Box::new(|msg: &Value| {
        let id = msg["id"].clone();
        let now = Duration::ZERO;
        match msg["method"].as_str() {
            Some("initialize") => vec![(
                now,
                capable_test_support::initialize_result(
                    &id,
                    "2025-11-25",
                    json!({"resources": {}, "tools": {}}),
                ),
            )],
            Some("resources/list") => vec![(
                now,
                json!({"jsonrpc": "2.0", "id": id, "result": {"resources": []}}),
            )],
            Some("tools/call") => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "hi"}]
                }});
                match msg.pointer("/params/_meta/progressToken") {
                    Some(token) => {
                        let mut out: Vec<(Duration, Value)> = (1..=7)
                            .map(|k| {
                                let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                                    "progressToken": token, "progress": k, "total": 7
                                }});
                                (Duration::from_millis(200), progress)
                            })
                            .collect();
                        out.push((now, answer));
                        out
                    }
                    None => vec![(Duration::from_millis(1500), answer)],
                }
            }
            _ => Vec::new(),
        }
    }))
}

async fn scripted_session() -> (Session, Wire) {
    let wire = Wire::default();
    let mut options = wire.options();
    options.config.protocol = ProtocolChoice::Legacy;
    let session = capable::connect(scripted_slow(), options)
        .await
        .expect("connect");
    (session, wire)
}

/// Waits until the client sent `notifications/cancelled` for `id`.
async fn cancelled(wire: &Wire, id: &Value) {
    wire.until_sent("notifications/cancelled for the timed-out request", |s| {
        s.iter()
            .any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == *id)
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_request_times_out_exactly_at_its_timeout_in_paused_time() {
    within(LIMIT, async {
        let (session, wire) = scripted_session().await;
        let timeout = Duration::from_millis(300);
        let started = tokio::time::Instant::now();
        let err = session
            .request::<_, Value>(
                Method::ReadResource,
                &json!({"uri": MANUAL}),
                RequestOptions {
                    timeout: Some(timeout),
                    ..Default::default()
                },
            )
            .await
            .expect_err("reads are never answered");
        assert_eq!(
            started.elapsed(),
            timeout,
            "it fails exactly at its timeout"
        );
        match &err {
            Error::Timeout { method, after } => {
                assert_eq!(*method, Method::ReadResource);
                assert_eq!(*after, timeout, "{err}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        let read_id = wire.sent_requests("resources/read")[0]["id"].clone();
        cancelled(&wire, &read_id).await;
        session
            .list_resources()
            .await
            .expect("list after a timeout");
        session.close().await;
        wire.assert_schema_valid(ProtocolVersion::V2025_11_25);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn progress_restarts_the_timeout_in_paused_time() {
    within(LIMIT, async {
        let (session, wire) = scripted_session().await;
        let timeout = Duration::from_secs(1);
        let started = tokio::time::Instant::now();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let args = json!({"message": "hi"});
        let result = session
            .call_tool_with(
                "echo",
                args.as_object(),
                RequestOptions {
                    timeout: Some(timeout),
                    on_progress: Some(Box::new(move |p| {
                        log.lock().unwrap().push((started.elapsed(), p.progress));
                    })),
                    ..Default::default()
                },
            )
            .await
            .expect("each progress notification restarts the 1 s timeout");
        // The answer came 1.4 s in: past the timeout, which progress kept extending.
        assert_eq!(started.elapsed(), Duration::from_millis(1400));
        assert_eq!(result.is_error, None);
        let expected: Vec<(Duration, f64)> = (1..=7)
            .map(|k| (Duration::from_millis(200 * k), k as f64))
            .collect();
        assert_eq!(*seen.lock().unwrap(), expected, "every progress, in order");
        assert!(wire.cancellations().is_empty(), "nothing was cancelled");
        session.close().await;
        wire.assert_schema_valid(ProtocolVersion::V2025_11_25);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn without_progress_the_same_slow_call_times_out_at_its_timeout_in_paused_time() {
    within(LIMIT, async {
        let (session, wire) = scripted_session().await;
        let timeout = Duration::from_secs(1);
        let started = tokio::time::Instant::now();
        let args = json!({"message": "hi"});
        let err = session
            .call_tool_with(
                "echo",
                args.as_object(),
                RequestOptions {
                    timeout: Some(timeout),
                    ..Default::default()
                },
            )
            .await
            .expect_err("the answer comes after 1.5 s");
        assert_eq!(started.elapsed(), timeout);
        assert!(
            matches!(err, Error::Timeout { method: Method::CallTool, after } if after == timeout),
            "{err:?}"
        );
        let call_id = wire.sent_requests("tools/call")[0]["id"].clone();
        cancelled(&wire, &call_id).await;
        session.close().await;
        wire.assert_schema_valid(ProtocolVersion::V2025_11_25);
    })
    .await
}

#[tokio::test]
async fn dropping_a_request_future_mid_flight_sends_notifications_cancelled() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("hang")).await;
        let gave_up =
            tokio::time::timeout(Duration::from_millis(200), session.read_resource(MANUAL)).await;
        assert!(gave_up.is_err(), "the hang profile answered a read");
        let read_id = wire.sent_requests("resources/read")[0]["id"].clone();
        let sent = wire
            .until_sent("notifications/cancelled for the dropped read", |s| {
                s.iter().any(|m| m["method"] == "notifications/cancelled")
            })
            .await;
        let cancelled: Vec<&Value> = sent
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .collect();
        assert_eq!(cancelled.len(), 1, "{}", common::show(&sent));
        assert_eq!(cancelled[0]["params"]["requestId"], read_id);
        session.list_resources().await.expect("list after the drop");
        session.close().await;
        wire.assert_schema_valid(capable::ProtocolVersion::V2025_11_25);
    })
    .await
}
