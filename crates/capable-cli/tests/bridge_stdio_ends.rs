//! How the stdio bridge ends when its host misbehaves: a host that stops reading its
//! stdout still ends it with a signal, its server's whole process group gone; a host
//! that sends a line past `--max-message` is named for it, with a non-zero exit; a
//! signal with a request in flight leaves none of the server's children behind.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_support::{wait_gone, Bridge, ANSWER};
use capable::internal::ProtocolVersion;
use serde_json::json;

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;

#[test]
fn a_host_that_stops_reading_still_ends_the_bridge_with_a_signal() {
    let mut args = vec!["bridge".to_owned(), "--".to_owned()];
    args.extend(common::fixture("huge"));
    let mut child = Command::new(common::bin())
        .args(&args)
        .stdin(Stdio::piped())
        // Never read: once the pipe is full, every write of the bridge's waits.
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let kept = stderr.clone();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            kept.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V.as_str(), "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // 32 MiB answers, twice, for a pipe that holds 64 KiB.
    for id in 2..4 {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
            "params": {"uri": "docs://manual/current"}}),
        );
    }
    // The server answered (so the bridge holds a write the host does not read).
    let until = Instant::now() + ANSWER;
    let server_pid = loop {
        let text = stderr.lock().unwrap().clone();
        let ready = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|l| l["state"] == "ready");
        if let Some(pid) = ready.and_then(|l| l["pid"].as_u64()) {
            break pid as u32;
        }
        assert!(Instant::now() < until, "the server never started\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The pipe to the host is full: the bridge's write waits for a reader that never
    // comes.
    let out = child.stdout.take().unwrap();
    let full = Instant::now() + ANSWER;
    loop {
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD on our own end of the pipe, into a c_int we own.
        unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&out),
                libc::FIONREAD,
                &mut unread,
            )
        };
        if unread >= 60 * 1024 {
            break;
        }
        assert!(
            Instant::now() < full,
            "the bridge never filled its stdout ({unread} bytes)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = signalled(&mut child, libc::SIGTERM, || {
        format!(
            "SIGTERM did not end a bridge whose host reads nothing\n{}",
            stderr.lock().unwrap()
        )
    });
    assert_eq!(status.code(), Some(143), "{}", stderr.lock().unwrap());
    wait_gone(server_pid);
}

#[test]
fn a_host_line_past_the_limit_is_the_hosts_fault_and_a_non_zero_exit() {
    let server = common::fixture("read-only");
    let mut args = vec!["--max-message", "1KiB", "--"];
    args.extend(server.iter().map(String::as_str));
    let mut b = Bridge::start(&args);
    b.initialize(V, json!({}));
    let pid = b.server_pid();
    let long = "x".repeat(4096);
    // The bridge stops reading at its limit and ends the host's side: the rest of the
    // line may meet a closed pipe, which is what the host then sees.
    let sent = b.try_send_line(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{long}"}}}}"#
    ));
    assert!(
        sent.as_ref()
            .map_or_else(|e| e.kind() == std::io::ErrorKind::BrokenPipe, |()| true),
        "{sent:?}"
    );
    let failed = b.audit_until(|l| l["event"] == "host_failed");
    let why = failed["error"].as_str().unwrap();
    assert!(why.contains("the host sent a line longer"), "{failed}");
    wait_gone(pid);
    assert_eq!(b.close(), Some(3));
}

/// SIGTERM, SIGINT or SIGHUP while a request waits on the server: the bridge exits
/// 128 + the signal, and the server's whole process group goes with it — a child the
/// server started in the background (`sleep 300`) too.
#[test]
fn a_signal_with_a_request_in_flight_leaves_no_child_of_the_server_behind() {
    use std::os::unix::fs::PermissionsExt;
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let pid_file = common::TempFile::new("grandchild.pid", "");
        let fixture = common::fixture("hang").join(" ");
        let script = common::TempFile::new(
            "server-with-a-child.sh",
            &format!(
                "#!/bin/sh\nsleep 300 &\necho $! > {}\nexec {fixture}\n",
                pid_file.path()
            ),
        );
        std::fs::set_permissions(script.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut child = Command::new(common::bin())
            .args(["bridge", "--", script.path()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
        send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": V.as_str(), "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
        );
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert!(line.contains("\"result\""), "{line}");
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // The server never answers this: it is in flight when the signal comes.
        send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
            "params": {"uri": "docs://manual/current"}}),
        );
        let grandchild: u32 = std::fs::read_to_string(pid_file.path())
            .unwrap()
            .trim()
            .parse()
            .expect("the server wrote its child's pid before it answered");
        let status = signalled(&mut child, signal, || {
            format!("signal {signal} did not end the bridge")
        });
        assert_eq!(status.code(), Some(128 + signal));
        wait_gone(grandchild);
    }
}

/// Sends `signal` to the bridge `child` and waits (at most [`ANSWER`]) for it to exit:
/// its status; `why` says what did not happen, past the wait.
fn signalled(
    child: &mut std::process::Child,
    signal: i32,
    why: impl Fn() -> String,
) -> std::process::ExitStatus {
    // SAFETY: a plain kill(2) of the bridge, our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, signal) };
    let until = Instant::now() + ANSWER;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < until, "{}", why());
        std::thread::sleep(Duration::from_millis(20));
    }
}
