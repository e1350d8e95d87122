//! End-to-end tests of `capable bench` against the fixture profiles.

mod common;

use std::time::Duration;

use common::{capable_with, fixture};

const T: Duration = Duration::from_secs(60);

#[test]
fn bench_json_reports_every_phase() {
    let run = capable_with(
        &[
            "bench",
            "--json",
            "-n",
            "50",
            "-c",
            "8",
            "--warmup",
            "5",
            "--tool",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
        ],
        &fixture("modern"),
        T,
    );
    run.expect_code(0);
    let r = run.json();
    assert_eq!(r["era"], "modern", "{r:#}");
    assert!(r["handshake_ms"].as_f64().unwrap() > 0.0, "{r:#}");
    for key in ["seq_read_rps", "pipelined_read_rps", "seq_call_rps"] {
        assert!(r[key].as_f64().unwrap() > 0.0, "{key}: {r:#}");
    }
    for phase in ["seq_read", "pipelined_read", "seq_call"] {
        let p = &r[phase];
        assert_eq!(p["requests"], 50, "{phase}: {r:#}");
        assert_eq!(p["errors"], 0, "{phase}: {r:#}");
        let (p50, p99, max) = (
            p["p50_ms"].as_f64().unwrap(),
            p["p99_ms"].as_f64().unwrap(),
            p["max_ms"].as_f64().unwrap(),
        );
        assert!(p50 <= p99 && p99 <= max, "{phase}: {r:#}");
    }
    // The default resource is the first one the server lists.
    assert_eq!(r["uri"], "docs://manual/current", "{r:#}");
}

#[test]
fn bench_without_a_tool_reports_no_call_phase() {
    let run = capable_with(
        &["bench", "--json", "-n", "20", "--warmup", "0"],
        &fixture("read-only"),
        T,
    );
    run.expect_code(0);
    let r = run.json();
    assert!(r["seq_call_rps"].is_null(), "{r:#}");
    assert!(r["seq_call"].is_null(), "{r:#}");
}

#[test]
fn bench_sends_no_read_to_a_server_without_resources() {
    let run = capable_with(
        &["bench", "--trace", "-n", "20"],
        &fixture("no-resources"),
        T,
    );
    run.expect_code(5);
    assert!(run.stderr.contains("`resources`"), "{}", run.stderr);
    let sent = run.sent_methods();
    assert!(
        !sent.iter().any(|m| m.starts_with("resources/")),
        "nothing about resources may be sent: {sent:?}"
    );
}

#[test]
fn bench_sends_nothing_but_the_handshake_without_resources() {
    let run = capable_with(
        &["bench", "--json", "--trace", "-n", "10", "--tool", "echo"],
        &fixture("no-resources"),
        T,
    );
    run.expect_code(5);
    assert_eq!(run.json()["error"]["kind"], "capability_not_offered");
    let sent = run.sent_methods();
    assert!(
        !sent
            .iter()
            .any(|m| m.starts_with("resources/") || m == "tools/call"),
        "only the handshake may be sent: {sent:?}"
    );
}

/// Runs `capable ARGS -- SERVER` with stderr on a terminal of 80 columns (a
/// pseudo-terminal) and stdout piped; returns stdout and what the terminal showed.
fn on_a_terminal(args: &[&str], server: &[String]) -> (Option<i32>, String, String) {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::process::{Command, Stdio};

    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors into the integers given and reads the
    // window size; no name buffer and no terminal settings are passed.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let child = Command::new(common::bin())
        .args(args)
        .arg("--")
        .args(server)
        .env("TERM", "xterm")
        .env_remove("CAPABLE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("start capable");
    // The terminal's side is read until the child (its last holder) closes it.
    let shown = std::thread::spawn(move || {
        let mut file = std::fs::File::from(master);
        let mut bytes = Vec::new();
        let mut buf = [0; 4096];
        while let Ok(n @ 1..) = file.read(&mut buf) {
            bytes.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    });
    // Bounded by the phases' own timeouts (the global --timeout of each request).
    let out = child.wait_with_output().expect("wait for capable");
    let shown = shown.join().unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), stdout, shown)
}

/// The lines a terminal shows: escape sequences left out, split at `\r` and `\n`.
fn terminal_lines(shown: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = shown.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, then a final letter.
            if chars.peek() == Some(&'[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        plain.push(c);
    }
    plain
        .split(['\r', '\n'])
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_progress_line_fits_80_columns_with_whole_rates() {
    let (code, stdout, shown) = on_a_terminal(
        &["bench", "-n", "3000", "--timeout", "10s", "--warmup", "0"],
        &fixture("read-only"),
    );
    assert_eq!(code, Some(0), "{stdout}\n{shown}");
    let lines = terminal_lines(&shown);
    let progress: Vec<&String> = lines.iter().filter(|l| l.contains("reads [")).collect();
    assert!(!progress.is_empty(), "no progress line shown:\n{shown}");
    for line in &progress {
        assert!(
            line.chars().count() <= 80,
            "wider than 80 columns: {line:?}"
        );
        // Whole, and not cut off at the edge: `… 856/3000 3850/s`.
        let rate = line.rsplit(' ').next().unwrap_or("");
        let digits = rate
            .strip_suffix("/s")
            .unwrap_or_else(|| panic!("{line:?}"));
        assert!(
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
            "not a whole rate: {line:?}"
        );
    }
    // The table's rates are whole too.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("sequential reads"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let rps = row.split_whitespace().nth(4).unwrap_or("");
    assert!(rps.bytes().all(|b| b.is_ascii_digit()), "{row}");
}
