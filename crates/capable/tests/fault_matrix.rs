//! The fault matrix, through the library: every way a server breaks mid-conversation
//! (exit during the handshake, mid-request, mid-answer or mid-stream; truncated JSON;
//! results for notifications; a compressed body past the limit; a server that ignores
//! the end of its input and SIGTERM), over stdio and over HTTP. Each case checks the
//! error a host gets (its type, and that it came at once rather than at a timeout), and
//! that afterwards nothing is left: no open file descriptor, no tokio task, no process
//! of the server's group.
//!
//! Everything runs in one test, case after case, so that the counts of descriptors and
//! tasks belong to one case at a time. The HTTP peer runs on a runtime of its own, so its
//! tasks are not counted as the client's.

mod common;
use capable_test_support::http_peer;

use std::time::{Duration, Instant};

use capable::transport::TransportError;
use capable::{connect_stdio, ClientOptions, Error, HttpConfig, Reconnect, ServerCommand, Session};
use common::{fixture_with, within, MANUAL};
use http_peer::faults::{fault_server, OwnRuntimePeer};

/// A request's timeout in these cases: an error that comes "at once" comes well before.
const TIMEOUT: Duration = Duration::from_secs(10);
/// An error that took longer than this waited for something it should not have.
const AT_ONCE: Duration = Duration::from_secs(3);

fn options() -> ClientOptions {
    let mut o = ClientOptions::default().with_request_timeout(TIMEOUT);
    o.shutdown_grace = Duration::from_millis(500);
    o
}

// ---------------------------------------------------------------------------------
// What is left after a case.

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// The live processes (zombies included: they are not reaped) of process group `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command's closing parenthesis: state, ppid, pgrp.
        let rest = &stat[stat.rfind(')')? + 2..];
        let pgrp: u32 = rest.split(' ').nth(2)?.parse().ok()?;
        (pgrp == pgid).then_some(pid)
    })
    .collect()
}

#[derive(Clone, Copy)]
struct Baseline {
    fds: usize,
    tasks: usize,
}

fn baseline() -> Baseline {
    Baseline {
        fds: open_fds(),
        tasks: alive_tasks(),
    }
}

/// Waits (bounded) for descriptors, tasks and the server's process group to be gone:
/// the ends of a closed session are released as its tasks finish, not all at once.
async fn nothing_left(before: Baseline, group: Option<u32>) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (fds, tasks) = (open_fds(), alive_tasks());
        let members = group.map(group_members).unwrap_or_default();
        if fds <= before.fds && tasks <= before.tasks && members.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "left behind: {} fds (before {}), {} tasks (before {}), processes {members:?} of group {group:?}",
                fds, before.fds, tasks, before.tasks
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------
// Expectations.

fn exited_with_3(what: &str, e: &Error) -> Result<(), String> {
    match e {
        Error::ServerExited { status, .. } if status.and_then(|s| s.code()) == Some(3) => Ok(()),
        other => Err(format!(
            "{what}: expected the server's exit (3), got {other:?}"
        )),
    }
}

fn not_a_timeout(what: &str, e: &Error, took: Duration) -> Result<(), String> {
    if matches!(e, Error::Timeout { .. }) || took > AT_ONCE {
        return Err(format!(
            "{what}: should fail at once, got after {took:?}: {e}"
        ));
    }
    Ok(())
}

async fn read(session: &Session) -> (Result<String, Error>, Duration) {
    let started = Instant::now();
    let r = session.read_resource(MANUAL).await.map(|r| r.text());
    (r, started.elapsed())
}

async fn reads_fine(what: &str, session: &Session) -> Result<(), String> {
    match read(session).await.0 {
        Ok(text) if text.starts_with("Acceptance instructions") => Ok(()),
        Ok(text) => Err(format!("{what}: unexpected text {text:?}")),
        Err(e) => Err(format!("{what}: the session should go on, got {e}")),
    }
}

// ---------------------------------------------------------------------------------
// stdio

/// The fixture with `fault`, behind `sh` (`exec` keeps its pid): with `ignore_term`,
/// SIGTERM is ignored, as the server inherits that from the shell.
fn faulty(fault: &str, ignore_term: bool) -> ServerCommand {
    let mut command = fixture_with("read-only", &["--fault", fault]);
    let trap = if ignore_term { "trap '' TERM; " } else { "" };
    let mut args = vec![
        "-c".to_owned(),
        format!(r#"{trap}exec "$0" "$@""#),
        command.program.clone(),
    ];
    args.append(&mut command.args);
    command.program = "sh".into();
    command.args = args;
    command
}

async fn stdio_case(fault: &str) -> Result<(), String> {
    let before = baseline();
    let command = faulty(fault, fault == "ignore-eof");
    let options = match fault {
        "stall-mid-answer" => options().with_request_timeout(Duration::from_millis(300)),
        _ => options(),
    };
    let connected = connect_stdio(&command, options).await;
    if fault == "exit-in-handshake" {
        let e = connected
            .err()
            .ok_or("a server that exits in the handshake cannot be connected")?;
        exited_with_3("connect", &e)?;
        // Nothing of it is left, although no session was ever handed out.
        return nothing_left(before, None).await;
    }
    let session = connected.map_err(|e| format!("connect: {e}"))?;
    let pid = session
        .server_process_id()
        .ok_or("a stdio server has a pid")?;
    let outcome = stdio_expectations(fault, &session).await;
    let closed = session.close().await;
    outcome?;
    if fault == "ignore-eof" && closed.is_none() {
        return Err("close should reap a server that ignores EOF and SIGTERM".into());
    }
    nothing_left(before, Some(pid)).await
}

async fn stdio_expectations(fault: &str, session: &Session) -> Result<(), String> {
    match fault {
        "exit-mid-answer" | "orphan" => {
            let (r, took) = read(session).await;
            let e = r.err().ok_or("the read cannot succeed")?;
            exited_with_3("read", &e)?;
            not_a_timeout("read", &e, took)?;
            // Every later request fails at once with the same reason.
            let (r, _) = read(session).await;
            exited_with_3(
                "a read after the exit",
                &r.err().ok_or("the server is gone")?,
            )
        }
        "stall-mid-answer" => {
            // Its timeout is short (see `stdio_case`).
            match read(session).await.0 {
                Err(Error::Timeout { .. }) => Ok(()),
                other => Err(format!("a half-written answer is a timeout, got {other:?}")),
            }
        }
        "truncated-answer" => {
            let (r, took) = read(session).await;
            let e = r.err().ok_or("a truncated answer cannot be a result")?;
            not_a_timeout("read", &e, took)?;
            // The server answers the next read whole.
            session.clear_cache();
            reads_fine("the read after", session).await
        }
        "answers-notifications" | "ignore-eof" => {
            reads_fine("read", session).await?;
            reads_fine("second read", session).await
        }
        other => Err(format!("no expectation for {other}")),
    }
}

// ---------------------------------------------------------------------------------
// HTTP

fn http_config(url: &str) -> HttpConfig {
    let mut c = HttpConfig::new(url.parse().unwrap());
    c.reconnect = Reconnect {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(50),
        attempts: 2,
        reissues: 1,
        ..Reconnect::default()
    };
    c
}

async fn http_case(fault: &'static str) -> Result<(), String> {
    let peer = OwnRuntimePeer::start(fault_server(fault));
    let before = baseline();
    let mut options = options();
    if fault == "compressed-past-limit" {
        options.max_message_size = 1 << 20;
    }
    let connected = capable::connect_http(http_config(&peer.url()), options).await;
    if fault == "exit-in-handshake" {
        match connected {
            Err(Error::Transport(_)) => {}
            other => {
                return Err(format!(
                    "a connection closed without an answer is a transport error, got {:?}",
                    other.map(|_| "a session")
                ))
            }
        }
        return nothing_left(before, None).await;
    }
    let session = connected.map_err(|e| format!("connect: {e}"))?;
    let outcome = http_expectations(fault, &session).await;
    session.close().await;
    outcome?;
    nothing_left(before, None).await
}

async fn http_expectations(fault: &str, session: &Session) -> Result<(), String> {
    if fault == "answers-notifications" {
        return reads_fine("read", session).await;
    }
    let rss = capable_test_support::own_status_kib("VmRSS");
    let (r, took) = read(session).await;
    let e = r.err().ok_or("the first read breaks")?;
    not_a_timeout("read", &e, took)?;
    match (fault, &e) {
        ("compressed-past-limit", Error::Transport(TransportError::MessageTooLarge { .. })) => {
            let grew = capable_test_support::own_status_kib("VmRSS").saturating_sub(rss);
            if grew > 32 * 1024 {
                return Err(format!(
                    "refusing a 64 MiB answer cost {grew} KiB: it was inflated whole"
                ));
            }
        }
        ("compressed-past-limit", other) => {
            return Err(format!("expected the size limit, got {other:?}"))
        }
        ("server-error", Error::Http { status, .. }) if *status == 500 => {}
        ("server-error", other) => return Err(format!("expected HTTP 500, got {other:?}")),
        ("exit-mid-request" | "exit-mid-stream", Error::Transport(_)) => {}
        ("truncated-answer", Error::MalformedResult { .. } | Error::Transport(_)) => {}
        (f, other) => return Err(format!("{f}: unexpected error {other:?}")),
    }
    // A broken answer is one request's failure: the session goes on.
    reads_fine("the read after", session).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_gives_a_clear_error_at_once_and_leaves_nothing_behind() {
    within(Duration::from_secs(120), async {
        // Warm up what lives as long as the process (the runtime's blocking threads,
        // the HTTP client's shared state), so that it is not counted as a leak.
        let warm = connect_stdio(&faulty("answers-notifications", false), options())
            .await
            .expect("warm-up");
        warm.close().await;
        let _ = http_case("none").await;

        let mut failures = Vec::new();
        for fault in [
            "exit-in-handshake",
            "exit-mid-answer",
            "stall-mid-answer",
            "truncated-answer",
            "answers-notifications",
            "orphan",
            "ignore-eof",
        ] {
            if let Err(e) = stdio_case(fault).await {
                failures.push(format!("stdio {fault}: {e}"));
            }
        }
        for fault in [
            "exit-in-handshake",
            "exit-mid-request",
            "exit-mid-stream",
            "truncated-answer",
            "answers-notifications",
            "compressed-past-limit",
            "server-error",
        ] {
            if let Err(e) = http_case(fault).await {
                failures.push(format!("http {fault}: {e}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    })
    .await
}
