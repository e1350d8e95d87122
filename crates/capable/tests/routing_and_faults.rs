//! Routing by id and fault handling through the library, over real stdio: concurrent
//! requests each get their own answer, server notifications reach the host, and a
//! server that crashes, hangs, writes garbage, answers unknown ids or sends too much
//! fails requests clearly — never a hang, never a panic. The timing of timeouts and
//! progress is checked against a scripted in-process server under tokio's paused clock.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capable::transport::TransportError;
use capable::{
    connect_stdio, Error, Method, ProtocolChoice, ProtocolVersion, RequestOptions, ServerCommand,
    Session,
};
use common::{fixture, join_all, real_peer, within, RealPeer, Scripted, Wire, MANUAL};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);
const ARCHIVE: &str = "docs://manual/archive";

fn uri_of(i: usize) -> &'static str {
    if i % 2 == 0 {
        MANUAL
    } else {
        ARCHIVE
    }
}

#[track_caller]
fn assert_own_answer(i: usize, read: &capable::ResourceRead) {
    let uri = uri_of(i);
    assert_eq!(read.uri, uri, "request {i}");
    assert_eq!(
        read.contents[0].uri, uri,
        "request {i} got another request's answer"
    );
    let text = read.text();
    if uri == MANUAL {
        assert!(
            text.starts_with("Acceptance instructions"),
            "request {i}: {text}"
        );
    } else {
        assert_eq!(text, "Earlier instructions.", "request {i}");
    }
}

#[track_caller]
fn assert_distinct_ids(wire: &Wire, count: usize) {
    let ids: HashSet<String> = wire
        .sent_requests("resources/read")
        .iter()
        .map(|m| m["id"].to_string())
        .collect();
    assert_eq!(ids.len(), count, "every request has its own id");
}

#[tokio::test]
async fn sixty_four_concurrent_reads_on_one_task_each_get_their_own_answer() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("read-only")).await;
        let reads = join_all((0..64).map(|i| session.read_resource(uri_of(i))).collect()).await;
        for (i, read) in reads.iter().enumerate() {
            assert_own_answer(i, read.as_ref().expect("read"));
        }
        session.close().await;
        assert_distinct_ids(&wire, 64);
    })
    .await
}

/// Lone requests go out from their caller's task, bursts through the writer task in
/// one write: either way each request is sent once, whole, in the order of its id.
#[tokio::test]
async fn lone_and_burst_requests_are_each_sent_once_in_id_order() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("read-only")).await;
        let mut i = 0;
        for _ in 0..3 {
            assert_own_answer(i, &session.read_resource(uri_of(i)).await.expect("read"));
            i += 1;
        }
        let burst = join_all(
            (i..i + 16)
                .map(|j| session.read_resource(uri_of(j)))
                .collect(),
        )
        .await;
        for (j, read) in burst.iter().enumerate() {
            assert_own_answer(i + j, read.as_ref().expect("read"));
        }
        i += 16;
        for _ in 0..3 {
            assert_own_answer(i, &session.read_resource(uri_of(i)).await.expect("read"));
            i += 1;
        }
        session.close().await;
        let ids: Vec<i64> = wire
            .sent_requests("resources/read")
            .iter()
            .map(|m| m["id"].as_i64().expect("an integer id"))
            .collect();
        assert_eq!(ids.len(), 22, "each request sent once: {ids:?}");
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "sent in id order: {ids:?}"
        );
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_reads_from_spawned_tasks_on_a_multi_thread_runtime_each_get_their_own_answer() {
    within(LIMIT, async {
        let wire = Wire::default();
        let session = Arc::new(
            connect_stdio(&fixture("read-only"), wire.options())
                .await
                .expect("connect"),
        );
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let session = session.clone();
                tokio::spawn(async move { (i, session.read_resource(uri_of(i)).await) })
            })
            .collect();
        for task in tasks {
            let (i, read) = task.await.expect("the task did not panic");
            assert_own_answer(i, &read.expect("read"));
        }
        let session = Arc::into_inner(session).expect("every task is done");
        session.close().await;
        assert_distinct_ids(&wire, 64);
    })
    .await
}

#[tokio::test]
async fn the_notification_stream_delivers_server_everythings_tools_list_changed() {
    let Some(server) = real_peer(RealPeer::Everything) else {
        return;
    };
    within(LIMIT, async {
        let (session, _wire) = common::connect_wire(&server).await;
        let mut notifications = session.notifications().expect("the stream, taken once");
        assert!(
            session.notifications().is_none(),
            "the stream can be taken once"
        );
        let mut seen = Vec::new();
        let found = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(n) = notifications.recv().await {
                if n.method == "notifications/tools/list_changed" {
                    return true;
                }
                seen.push(n.method);
            }
            false
        })
        .await;
        assert_eq!(
            found,
            Ok(true),
            "no notifications/tools/list_changed; saw {seen:?}"
        );
        session.close().await;
    })
    .await
}

#[track_caller]
fn assert_exited_with_3(err: &Error) {
    match err {
        Error::ServerExited { status, stderr } => {
            assert_eq!(status.and_then(|s| s.code()), Some(3), "{err}");
            assert!(err.to_string().contains("exit code 3"), "{err}");
            assert!(stderr.contains("crashing as asked"), "{err}");
        }
        other => panic!("expected ServerExited, got {other:?}"),
    }
}

#[tokio::test]
async fn a_crash_mid_request_fails_every_pending_request_with_the_exit_status() {
    within(LIMIT, async {
        let (session, _wire) = common::connect_wire(&fixture("crash")).await;
        // The read makes the server exit; the others are in flight behind it. Each fails
        // with the exit status, not with a timeout: the crash does not wait for the
        // requests' timeout (10 s here) to fail them.
        let (read, list, ping) = tokio::join!(
            session.read_resource(MANUAL),
            session.list_resources(),
            session.ping()
        );
        assert_exited_with_3(&read.expect_err("the read crashed the server"));
        assert_exited_with_3(&list.expect_err("pending when it crashed"));
        assert_exited_with_3(&ping.expect_err("pending when it crashed"));
        // A request after the crash fails at once, with the same reason.
        assert_exited_with_3(&session.ping().await.expect_err("the server is gone"));
        session.close().await;
    })
    .await
}

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

#[tokio::test]
async fn a_garbage_line_from_the_server_is_skipped_and_the_session_goes_on() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("garbage")).await;
        for _ in 0..2 {
            let read = session.read_resource(MANUAL).await.expect("read");
            assert!(read.text().starts_with("Acceptance instructions"));
        }
        session.close().await;
        let garbage = wire
            .all()
            .iter()
            .filter(|s| s.direction == capable::Direction::Received && s.json().is_none())
            .count();
        assert_eq!(
            garbage, 2,
            "the server wrote a non-JSON line before each answer"
        );
    })
    .await
}

#[tokio::test]
async fn a_response_with_an_unknown_id_is_dropped_and_the_session_goes_on() {
    within(LIMIT, async {
        let (session, wire) = common::connect_wire(&fixture("unknown-id")).await;
        for _ in 0..2 {
            let read = session.read_resource(MANUAL).await.expect("read");
            assert!(read.text().starts_with("Acceptance instructions"));
        }
        session.close().await;
        let strays = wire.received().iter().filter(|m| m["id"] == 987654).count();
        assert_eq!(strays, 2);
    })
    .await
}

#[tokio::test]
async fn a_message_over_the_size_limit_fails_with_message_too_large_not_a_hang() {
    within(LIMIT, async {
        let wire = Wire::default();
        let mut options = wire.options();
        options.max_message_size = 1024 * 1024;
        let session = connect_stdio(&fixture("huge"), options)
            .await
            .expect("connect");
        let err = session
            .read_resource(MANUAL)
            .await
            .expect_err("32 MiB is over a 1 MiB limit");
        assert!(
            matches!(
                err,
                Error::Transport(TransportError::MessageTooLarge { limit: 1048576 })
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("1048576"), "{err}");
        // The session is over: later requests fail with the same reason.
        let again = session.ping().await.expect_err("the session ended");
        assert!(
            matches!(
                again,
                Error::Transport(TransportError::MessageTooLarge { .. })
            ),
            "{again:?}"
        );
        session.close().await;
    })
    .await
}

#[tokio::test]
async fn a_32_mib_resource_reads_fine_under_the_default_limit() {
    within(LIMIT, async {
        let session = connect_stdio(&fixture("huge"), Default::default())
            .await
            .expect("connect");
        let read = session.read_resource(MANUAL).await.expect("read");
        assert_eq!(read.text().len(), 32 * 1024 * 1024);
        session.close().await;
    })
    .await
}

/// The fixture behind `sh`, which prints its PID (`exec` keeps it) to stderr.
fn fixture_showing_pid(profile: &str) -> ServerCommand {
    let mut command = fixture(profile);
    let mut args = vec![
        "-c".to_owned(),
        r#"echo "pid $$" >&2; exec "$0" "$@""#.to_owned(),
        command.program.clone(),
    ];
    args.append(&mut command.args);
    command.program = "sh".into();
    command.args = args;
    command
}

async fn server_pid(session: &Session) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let tail = session.stderr_tail();
        if let Some(pid) = tail
            .lines()
            .find_map(|l| l.strip_prefix("pid "))
            .and_then(|p| p.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "the server never showed its PID: {tail}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn close_ends_the_server_process() {
    within(LIMIT, async {
        let session = connect_stdio(&fixture_showing_pid("read-only"), Default::default())
            .await
            .expect("connect");
        let pid = server_pid(&session).await;
        assert!(common::process_exists(pid), "the server {pid} is running");
        session.read_resource(MANUAL).await.expect("read");
        let status = session.close().await;
        assert_eq!(status.and_then(|s| s.code()), Some(0));
        assert!(
            !common::process_exists(pid),
            "the server {pid} still exists after close()"
        );
    })
    .await
}

/// The fixture behind a shell wrapper that first starts a background child of its own
/// (as `npx` starts `node`, or a script its helpers) and prints that child's PID.
fn fixture_with_a_background_child(profile: &str) -> ServerCommand {
    let mut command = fixture(profile);
    let mut args = vec![
        "-c".to_owned(),
        r#"sleep 300 & echo "pid $!" >&2; exec "$0" "$@""#.to_owned(),
        command.program.clone(),
    ];
    args.append(&mut command.args);
    command.program = "sh".into();
    command.args = args;
    command
}

#[tokio::test]
async fn close_ends_the_servers_whole_process_group_not_just_the_server() {
    within(LIMIT, async {
        let server = fixture_with_a_background_child("read-only");
        let session = connect_stdio(&server, Default::default())
            .await
            .expect("connect");
        let child = server_pid(&session).await;
        assert!(
            common::process_exists(child),
            "the background child {child} runs"
        );
        session.read_resource(MANUAL).await.expect("read");
        session.close().await;
        // The server exits on stdin EOF; its background child ignores that, so only a
        // signal to the group ends it. `sleep` is reaped by init: wait for it briefly.
        let gone = Instant::now() + Duration::from_secs(3);
        while common::process_exists(child) && Instant::now() < gone {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            !common::process_exists(child),
            "the server's background child {child} outlived the session"
        );
    })
    .await
}

#[tokio::test]
async fn close_ends_a_server_with_a_request_in_flight() {
    within(LIMIT, async {
        let session = connect_stdio(&fixture_showing_pid("hang"), Default::default())
            .await
            .expect("connect");
        let pid = server_pid(&session).await;
        // A read the server will never answer, abandoned by the host.
        let _ =
            tokio::time::timeout(Duration::from_millis(100), session.read_resource(MANUAL)).await;
        // It exits on its own when its input closes: no grace period ran out, no signal.
        let status = session.close().await;
        assert_eq!(status.and_then(|s| s.code()), Some(0));
        assert!(
            !common::process_exists(pid),
            "the server {pid} still exists"
        );
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_written_while_the_server_crashes_fail_with_its_exit_status_not_a_broken_pipe() {
    within(LIMIT, async {
        // Requests keep being written while the server dies: some writes hit the closed
        // pipe. Every failure must still be the server's exit, with its status.
        for _ in 0..20 {
            let session = Arc::new(
                connect_stdio(&fixture("crash"), Default::default())
                    .await
                    .expect("connect"),
            );
            let pingers: Vec<_> = (0..4)
                .map(|_| {
                    let session = session.clone();
                    tokio::spawn(async move {
                        loop {
                            if let Err(e) = session.ping().await {
                                return e;
                            }
                        }
                    })
                })
                .collect();
            let read = session.read_resource(MANUAL).await;
            assert_exited_with_3(&read.expect_err("the read crashed the server"));
            for pinger in pingers {
                let err = pinger.await.expect("the task did not panic");
                assert!(
                    matches!(&err, Error::ServerExited { status, .. } if status.and_then(|s| s.code()) == Some(3)),
                    "{err:?}"
                );
            }
            if let Some(session) = Arc::into_inner(session) {
                session.close().await;
            }
        }
    })
    .await
}
