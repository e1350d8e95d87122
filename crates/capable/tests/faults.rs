//! Fault handling through the library, over real stdio: a server that crashes, writes
//! garbage, answers unknown ids or sends too much fails requests clearly — never a
//! hang, never a panic — and a large message under the limit reads fine.

mod common;

use std::sync::Arc;
use std::time::Duration;

use capable::transport::TransportError;
use capable::{connect_stdio, Error};
use common::{fixture, within, Wire, MANUAL};

const LIMIT: Duration = Duration::from_secs(20);

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
        assert!(err.to_string().contains("1 MiB"), "{err}");
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

#[tokio::test]
async fn a_crash_is_reported_at_once_even_while_a_child_of_the_server_holds_its_output() {
    within(LIMIT, async {
        // The wrapper leaves a background child that inherits the server's stdout, so the
        // pipe never ends; the server itself crashes on the read.
        let mut server = fixture("crash");
        let mut args = vec![
            "-c".to_owned(),
            r#"sleep 300 & exec "$0" "$@""#.to_owned(),
            server.program.clone(),
        ];
        args.append(&mut server.args);
        server.program = "sh".into();
        server.args = args;
        let options =
            capable::ClientOptions::default().with_request_timeout(Duration::from_secs(60));
        let session = connect_stdio(&server, options).await.expect("connect");
        let err = session
            .read_resource(MANUAL)
            .await
            .expect_err("the server crashed");
        // Its exit, with its status and last words — not a timeout a minute later.
        assert_exited_with_3(&err);
        session.close().await;
    })
    .await
}
