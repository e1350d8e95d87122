//! The fault matrix through the `capable` binary: each way a server breaks
//! mid-conversation, over stdio (the fixture with `--fault`) and over HTTP (a scripted
//! server on 127.0.0.1), gives the right exit code and `--json` kind, a message in
//! plain words, no panic, and — over stdio — no process of the server's group left once
//! capable has exited. (The library's matrix, `crates/capable/tests/fault_matrix.rs`,
//! also counts descriptors and tasks.)

mod common;
use capable_test_support::http_peer;

use std::time::{Duration, Instant};

use common::{bin, capable, capable_with, Run};
use http_peer::faults::{fault_server, OwnRuntimePeer, MANUAL};

const T: Duration = Duration::from_secs(30);

/// What a case must end with.
struct Expect {
    code: i32,
    /// The `--json` error kind (`None`: success).
    kind: Option<&'static str>,
    /// Words the message for people must contain.
    says: &'static str,
}

const fn fails(code: i32, kind: &'static str, says: &'static str) -> Expect {
    Expect {
        code,
        kind: Some(kind),
        says,
    }
}

const WORKS: Expect = Expect {
    code: 0,
    kind: None,
    says: "",
};

fn check(what: &str, run: &Run, expect: &Expect) -> Result<(), String> {
    if run.code != Some(expect.code) {
        return Err(format!(
            "{what}: exit {:?}, expected {}\n--- stdout\n{}\n--- stderr\n{}",
            run.code, expect.code, run.stdout, run.stderr
        ));
    }
    if run.stderr.contains("panicked") {
        return Err(format!("{what}: panicked\n{}", run.stderr));
    }
    if let Some(kind) = expect.kind {
        let json: serde_json::Value = serde_json::from_str(run.stdout.trim())
            .map_err(|e| format!("{what}: --json printed no JSON ({e}): {}", run.stdout))?;
        if json["error"]["kind"] != kind {
            return Err(format!("{what}: kind {}, expected {kind}", json["error"]));
        }
        if !run.stderr.contains(expect.says) {
            return Err(format!(
                "{what}: the message should say {:?}: {}",
                expect.says, run.stderr
            ));
        }
    }
    Ok(())
}

/// The processes of group `pgid` still alive (zombies included).
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        let pgrp: u32 = rest.split(' ').nth(2)?.parse().ok()?;
        (pgrp == pgid).then_some(pid)
    })
    .collect()
}

/// Waits (bounded) for the server's process group to be empty.
fn group_gone(pgid: u32) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = group_members(pgid);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "processes {left:?} of the server's group were left"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stdio_case(fault: &str, extra: &[&str], expect: Expect) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("capable-faults-{}-{fault}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let pidfile = dir.join("server.pid");
    // `ignore-eof` also ignores SIGTERM (inherited from the shell): only SIGKILL ends it.
    let trap = if fault == "ignore-eof" {
        "trap '' TERM; "
    } else {
        ""
    };
    let server = vec![
        "sh".to_owned(),
        "-c".into(),
        format!(r#"echo $$ > {}; {trap}exec "$0" "$@""#, pidfile.display()),
        bin().to_owned(),
        "fixture".into(),
        "--fault".into(),
        fault.into(),
    ];
    let mut args = vec!["--json", "read"];
    if !extra.contains(&"--timeout") {
        args.extend(["--timeout", "10s"]);
    }
    args.extend_from_slice(extra);
    args.push(MANUAL);
    let run = capable_with(&args, &server, T);
    let outcome = check(&format!("stdio {fault}"), &run, &expect).and_then(|()| {
        if run.elapsed > Duration::from_secs(8) {
            return Err(format!("stdio {fault}: took {:?}", run.elapsed));
        }
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .map_err(|e| format!("no pid file: {e}"))?
            .trim()
            .parse()
            .map_err(|e| format!("pid file: {e}"))?;
        group_gone(pid).map_err(|e| format!("stdio {fault}: {e}"))
    });
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn http_case(fault: &'static str, extra: &[&str], expect: Expect) -> Result<(), String> {
    let peer = OwnRuntimePeer::start(fault_server(fault));
    let url = peer.url();
    let mut args = vec!["--json", "read", "--timeout", "10s", "--url", &url];
    args.extend_from_slice(extra);
    args.push(MANUAL);
    let run = capable(&args, T);
    check(&format!("http {fault}"), &run, &expect)?;
    if run.elapsed > Duration::from_secs(8) {
        return Err(format!("http {fault}: took {:?}", run.elapsed));
    }
    Ok(())
}

#[test]
fn every_fault_ends_with_its_exit_code_and_words_and_leaves_no_process() {
    let exited = || fails(3, "server_exited", "exit code 3");
    let cases: Vec<Result<(), String>> = vec![
        stdio_case("exit-in-handshake", &[], exited()),
        stdio_case("exit-mid-answer", &[], exited()),
        stdio_case(
            "stall-mid-answer",
            &["--timeout", "1s"],
            fails(3, "timeout", "no answer within 1s"),
        ),
        stdio_case(
            "truncated-answer",
            &[],
            fails(6, "contract_violation", "malformed"),
        ),
        stdio_case("answers-notifications", &[], WORKS),
        // The exit is seen at once although a child of the server holds its output.
        stdio_case("orphan", &[], exited()),
        // Neither EOF nor SIGTERM ends it: capable's SIGKILL does, in bounded time.
        stdio_case("ignore-eof", &[], WORKS),
        http_case(
            "exit-in-handshake",
            &[],
            fails(3, "transport", "connection closed"),
        ),
        http_case(
            "exit-mid-request",
            &[],
            fails(3, "transport", "connection closed"),
        ),
        http_case("exit-mid-stream", &[], fails(3, "transport", "stream")),
        http_case(
            "truncated-answer",
            &[],
            fails(6, "contract_violation", "malformed"),
        ),
        http_case("answers-notifications", &[], WORKS),
        http_case(
            "compressed-past-limit",
            &["--max-message", "1MiB"],
            fails(3, "transport", "larger than the limit of 1 MiB"),
        ),
        http_case("server-error", &[], fails(3, "transport", "500")),
    ];
    let failures: Vec<String> = cases.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
