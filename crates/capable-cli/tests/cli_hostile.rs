//! The command line against hostile servers and hostile circumstances: a server whose
//! words try to act on the terminal is shown, never obeyed; output into a closed pipe
//! ends quietly; a signal shuts the server's whole process group down in order and exits
//! 128 + signal; a load test stops at its first failure to reach the server; absurd
//! numbers are usage errors, never panics.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, capable, capable_with, fixture, workspace};

const T: Duration = Duration::from_secs(20);

fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t') || ('\u{202a}'..='\u{202e}').contains(c)
        })
        .collect()
}

#[test]
fn a_servers_words_are_shown_never_obeyed() {
    for args in [
        &["inspect"][..],
        &["tools"],
        &["read", "docs://manual/current"],
        &["audit"],
    ] {
        let run = capable_with(args, &fixture("hostile"), T);
        for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            let raw = raw_controls(text);
            assert!(
                raw.is_empty(),
                "`capable {}`: raw control characters {raw:?} on {name}:\n{text}",
                args.join(" ")
            );
        }
    }
    let run = capable_with(&["inspect"], &fixture("hostile"), T);
    run.expect_code(0);
    assert!(
        run.stdout.contains("\\u{1b}[2J"),
        "the sequence is spelled out: {}",
        run.stdout
    );
    // JSON keeps the server's words exactly, escaped by JSON itself.
    let run = capable_with(&["inspect", "--json"], &fixture("hostile"), T);
    run.expect_code(0);
    assert!(
        raw_controls(&run.stdout).is_empty(),
        "JSON escapes them itself"
    );
    assert_eq!(
        run.json()["instructions"]
            .as_str()
            .map(|s| s.contains('\u{1b}')),
        Some(true),
        "--json carries the exact text"
    );
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let mut child = Command::new(bin())
        .arg("tools")
        .arg("--")
        .args(fixture("no-resources"))
        .current_dir(workspace())
        .env_remove("CAPABLE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start capable");
    // Nobody will read: close the reading end before capable writes anything.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("exit");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.trim().is_empty(), "nothing to say: {stderr}");
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_signal_shuts_the_servers_whole_process_group_down_and_exits_128_plus_it() {
    for (signal, number) in [("-TERM", 15), ("-HUP", 1), ("-INT", 2)] {
        let dir =
            std::env::temp_dir().join(format!("capable-signal-{}-{number}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("child.pid");
        let _ = std::fs::remove_file(&pidfile);
        // A wrapper whose background child ignores stdin EOF, then the hanging fixture.
        let script = format!(
            r#"sleep 300 & echo $! > {}; exec "$0" "$@""#,
            pidfile.display()
        );
        let mut server = vec!["sh".to_owned(), "-c".into(), script];
        server.extend(fixture("hang"));
        let mut child = Command::new(bin())
            .args(["--trace", "read", "docs://manual/current", "--"])
            .args(&server)
            .current_dir(workspace())
            .env_remove("CAPABLE_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start capable");
        // Once the read is on its way, the server is up and holds its background child.
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let started = Instant::now();
        for line in lines.by_ref() {
            let line = line.unwrap_or_default();
            if line.starts_with("> ") && line.contains("\"resources/read\"") {
                break;
            }
            assert!(started.elapsed() < T, "the read was never sent");
        }
        let background: u32 = std::fs::read_to_string(&pidfile)
            .expect("the wrapper wrote its child's pid")
            .trim()
            .parse()
            .unwrap();
        assert!(pid_alive(background));
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(started.elapsed() < T, "capable did not exit after {signal}");
            std::thread::sleep(Duration::from_millis(10));
        };
        let expected = if number == 2 { 130 } else { 128 + number };
        assert_eq!(status.code(), Some(expected), "{signal}");
        let gone = Instant::now() + Duration::from_secs(5);
        while pid_alive(background) && Instant::now() < gone {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !pid_alive(background),
            "{signal}: the server's background child {background} was orphaned"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_load_test_stops_at_its_first_failure_to_reach_the_server() {
    // 1000 reads of a server that never answers, each allowed 300 ms: without the stop
    // this would take five minutes.
    let run = capable_with(
        &["bench", "-n", "1000", "--warmup", "0", "--timeout", "300ms"],
        &fixture("hang"),
        T,
    );
    run.expect_code(3);
    assert!(
        run.stderr.contains("stopped after 1 request"),
        "{}",
        run.stderr
    );
}

#[test]
fn absurd_numbers_are_usage_errors_never_panics() {
    for args in [
        &["--timeout", "10000000000000000000", "inspect", "--", "x"][..],
        &["--timeout", "1e300s", "inspect", "--", "x"],
        &[
            "watch",
            "docs://x",
            "--poll",
            "9999999999999999999s",
            "--",
            "x",
        ],
        &["bench", "-c", "0", "--", "x"],
    ] {
        let run = capable(args, T);
        run.expect_code(2);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

#[test]
fn a_flood_of_bad_lines_costs_a_few_log_lines_not_one_each() {
    // The garbage fixture writes a line that is not JSON before every answer: 100 reads,
    // 100 skipped lines, a handful of warnings.
    let run = capable_with(
        &["bench", "-n", "50", "--warmup", "0"],
        &fixture("garbage"),
        T,
    );
    run.expect_code(0);
    let warned = run
        .stderr
        .lines()
        .filter(|l| l.contains("skipped a line"))
        .count();
    assert!(
        (1..=6).contains(&warned),
        "{warned} warnings for 100 bad lines:\n{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains('\u{1b}'),
        "no colour codes into a pipe: {}",
        run.stderr
    );
}

#[test]
fn a_stdio_server_gets_a_minimal_environment_unless_told_otherwise() {
    // The server prints what it sees of the environment, then crashes: capable shows the
    // end of its stderr.
    let server = [
        "sh".to_owned(),
        "-c".into(),
        r#"echo "secret=[$CAPABLE_TEST_SECRET] home=[$HOME]" >&2; exit 3"#.into(),
    ];
    let run = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["inspect", "--"]);
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend(server.iter().cloned());
        let out = Command::new(bin())
            .args(&all)
            .env("CAPABLE_TEST_SECRET", "s3cret-marker")
            .env("HOME", "/home/someone")
            .current_dir(workspace())
            .stdin(Stdio::null())
            .output()
            .expect("run capable");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&[]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("secret=[]"), "not inherited: {stderr}");
    assert!(stderr.contains("home=[/home/someone]"), "HOME is: {stderr}");
    let (_, stderr) = run(&["--inherit-env"]);
    assert!(
        stderr.contains("secret=[s3cret-marker]"),
        "opted in: {stderr}"
    );
}

#[test]
fn a_missing_working_directory_or_root_is_named_as_such() {
    let dir = std::env::temp_dir().join(format!("capable-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"s": {"command": "sh", "args": ["-c", "exit 0"], "cwd": "/nonexistent/capable-dir"}}}"#,
    )
    .unwrap();
    let run = capable(
        &[
            "inspect",
            "--config",
            config.to_str().unwrap(),
            "--server",
            "s",
        ],
        T,
    );
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("working directory /nonexistent/capable-dir does not exist"),
        "{}",
        run.stderr
    );
    let run = capable(
        &["inspect", "--root", "/nonexistent/capable-root", "--", "x"],
        T,
    );
    run.expect_code(2);
    assert!(run.stderr.contains("is not a directory"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn progress_extends_a_timeout_only_up_to_its_cap() {
    // The slow-progress tool reports every 200 ms and answers after 1.4 s.
    let run = capable_with(
        &[
            "--timeout",
            "300ms",
            "--progress-cap",
            "700ms",
            "tools",
            "call",
            "echo",
            "--args",
            r#"{"message":"x"}"#,
        ],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(3);
    assert!(run.stderr.contains("within 700ms"), "{}", run.stderr);
    // Without a cap of its own, ten times the timeout: 3 s is plenty for 1.4 s.
    let run = capable_with(
        &[
            "--timeout",
            "300ms",
            "tools",
            "call",
            "echo",
            "--args",
            r#"{"message":"x"}"#,
        ],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(0);
}
