//! Shutdown through the library, over real stdio: `close()` ends the server process,
//! its whole process group with it, and a server that still has a request in flight.

mod common;

use std::time::{Duration, Instant};

use capable::{connect_stdio, ServerCommand, Session};
use common::{fixture, within, MANUAL};

const LIMIT: Duration = Duration::from_secs(20);

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

#[tokio::test]
async fn stderr_is_followed_line_by_line_until_the_server_is_gone() {
    use tokio::sync::broadcast::error::RecvError;
    let session = within(
        LIMIT,
        connect_stdio(&fixture("no-resources"), Default::default()),
    )
    .await
    .expect("connect");
    let mut lines = session.stderr_lines().expect("a stdio server has stderr");
    for message in ["one", "two", "three"] {
        let args = serde_json::json!({ "message": message });
        within(LIMIT, session.call_tool("echo", args.as_object()))
            .await
            .expect("echo");
    }
    // In the order written, each once; then, with the server closed, the end.
    for message in ["one", "two", "three"] {
        let line = within(LIMIT, lines.recv()).await.expect("a line");
        assert_eq!(&*line, format!("capable fixture: echo {message}"));
    }
    within(LIMIT, session.close()).await;
    assert!(matches!(
        within(LIMIT, lines.recv()).await,
        Err(RecvError::Closed)
    ));
}
