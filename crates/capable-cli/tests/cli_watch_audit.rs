//! End-to-end tests of `capable watch` and `capable audit` against the fixture
//! profiles, each a real child process. What was sent is read from `--trace`.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{bin, capable_with, fixture, rfc3339_utc, trace, untraced, TempFile};
use serde_json::Value;

const MANUAL: &str = "docs://manual/current";
const T: Duration = Duration::from_secs(20);
const HANDSHAKE: [&str; 3] = ["server/discover", "initialize", "notifications/initialized"];

/// The JSON lines on stdout.
fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

fn events<'a>(all: &'a [Value], kind: &str) -> Vec<&'a Value> {
    all.iter().filter(|e| e["event"] == kind).collect()
}

fn count(sent: &[String], method: &str) -> usize {
    sent.iter().filter(|m| *m == method).count()
}

/// A `capable` process we interrupt with SIGINT (Ctrl-C) once `ready` says so.
struct Interrupted {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `capable ARGS -- SERVER`, sends SIGINT to it (by its PID) once its stdout has
/// `revisions` revision lines and `linger` has passed, and waits for it to exit.
fn interrupt_after(
    args: &[&str],
    server: &[String],
    revisions: usize,
    linger: Duration,
) -> Interrupted {
    let started = Instant::now();
    let mut child = Command::new(bin())
        .args(args)
        .arg("--")
        .args(server)
        .current_dir(common::workspace())
        .env_remove("CAPABLE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start capable");
    let pid = child.id();
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut stderr = child.stderr.take().expect("stderr");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut seen = 0;
    while seen < revisions {
        let left = T.saturating_sub(started.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("\"event\":\"revision\"") => seen += 1,
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "saw {seen} of {revisions} revisions before the deadline:\n{}",
                    err_reader.join().unwrap_or_default()
                );
            }
        }
    }
    std::thread::sleep(linger);
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let exit = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > T {
            let _ = child.kill();
            panic!("capable did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Interrupted {
        code: exit.code(),
        stdout: reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}

fn sent_methods(stderr: &str) -> Vec<String> {
    trace(stderr, "> ")
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("").to_owned())
        .collect()
}

// ── watch ──────────────────────────────────────────────────────────────────────

#[test]
fn honest_subscribe_follows_updates_then_unsubscribes() {
    let mut server = fixture("subscribe");
    server.extend(["--update-interval".into(), "200ms".into()]);
    let run = capable_with(
        &["watch", "--json", "--trace", "--updates", "2", MANUAL],
        &server,
        T,
    );
    run.expect_code(0);
    let all = lines(&run.stdout);
    assert_eq!(all[0]["event"], "mode", "{all:#?}");
    assert_eq!(all[0]["mode"], "subscribe", "{all:#?}");
    let revisions = events(&all, "revision");
    assert_eq!(revisions.len(), 3, "the first and two updates: {all:#?}");
    for (a, b) in revisions.iter().zip(revisions.iter().skip(1)) {
        assert_ne!(
            a["revision"], b["revision"],
            "only changed revisions are reported"
        );
    }
    for r in &revisions {
        rfc3339_utc(r["readAt"].as_str().expect("readAt"));
        assert!(r["contents"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("Acceptance instructions"));
    }
    assert!(events(&all, "violation").is_empty());
    let sent = run.sent_methods();
    assert_eq!(count(&sent, "resources/subscribe"), 1, "{sent:?}");
    assert_eq!(
        count(&sent, "resources/read"),
        3,
        "one read per update: {sent:?}"
    );
    assert_eq!(
        sent.last().map(String::as_str),
        Some("resources/unsubscribe"),
        "{sent:?}"
    );
    // Updates came from the server, not from polling: one notification per re-read.
    let received = trace(&run.stderr, "< ");
    let updates = received
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .count();
    assert!(updates >= 2, "{received:#?}");
}

#[test]
fn ctrl_c_unsubscribes_before_closing() {
    let run = interrupt_after(
        &["watch", "--json", "--trace", MANUAL],
        &fixture("subscribe"),
        1,
        Duration::from_millis(100),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let sent = sent_methods(&run.stderr);
    assert_eq!(count(&sent, "resources/subscribe"), 1, "{sent:?}");
    assert_eq!(
        sent.last().map(String::as_str),
        Some("resources/unsubscribe"),
        "{sent:?}"
    );
    assert!(!lines(&run.stdout).is_empty());
}

#[test]
fn lying_subscribe_without_a_policy_is_a_violation_exit_6() {
    let run = capable_with(
        &["watch", "--json", "--trace", MANUAL],
        &fixture("lying-subscribe"),
        T,
    );
    run.expect_code(6);
    let all = lines(&run.stdout);
    let modes = events(&all, "mode");
    assert_eq!(modes.len(), 1, "no fallback without a policy: {all:#?}");
    let v = events(&all, "violation");
    assert_eq!(v.len(), 1, "recorded once: {all:#?}");
    let v = v[0];
    assert_eq!(v["capability"], "resources.subscribe");
    assert_eq!(v["method"], "resources/subscribe");
    assert_eq!(v["request"]["method"], "resources/subscribe");
    assert_eq!(v["request"]["params"]["uri"], MANUAL);
    assert_eq!(v["response"]["error"]["code"], -32601);
    assert_eq!(v["response"]["id"], v["request"]["id"]);
    assert_eq!(v["server"]["name"], "capable-fixture/lying-subscribe");
    assert!(v["server"]["version"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(events(&all, "revision").is_empty(), "{all:#?}");
    let error = all.last().expect("an error line");
    assert_eq!(error["error"]["exitCode"], 6, "{all:#?}");
    let message = untraced(&run.stderr);
    for needle in ["resources.subscribe", "resources/subscribe", "0.1.0"] {
        assert!(message.contains(needle), "{needle} missing: {message}");
    }
    let sent = run.sent_methods();
    assert_eq!(
        count(&sent, "resources/subscribe"),
        1,
        "one attempt only: {sent:?}"
    );
    assert_eq!(count(&sent, "resources/unsubscribe"), 0, "{sent:?}");
    assert_eq!(count(&sent, "resources/read"), 0, "{sent:?}");
}

#[test]
fn lying_subscribe_with_a_policy_falls_back_to_polling() {
    let run = interrupt_after(
        &["watch", "--json", "--trace", "--poll", "150ms", MANUAL],
        &fixture("lying-subscribe"),
        1,
        Duration::from_millis(700),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let all = lines(&run.stdout);
    let kinds: Vec<&str> = all
        .iter()
        .map(|e| e["event"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds[..4],
        ["mode", "violation", "mode", "revision"],
        "{all:#?}"
    );
    assert_eq!(all[0]["mode"], "subscribe");
    assert_eq!(all[2]["mode"], "poll");
    assert_eq!(all[2]["intervalMs"], 150);
    assert_eq!(
        events(&all, "violation").len(),
        1,
        "recorded once: {all:#?}"
    );
    assert_eq!(
        events(&all, "revision").len(),
        1,
        "the content never changes: {all:#?}"
    );
    let sent = sent_methods(&run.stderr);
    assert_eq!(
        count(&sent, "resources/subscribe"),
        1,
        "never retried: {sent:?}"
    );
    assert_eq!(count(&sent, "resources/unsubscribe"), 0, "{sent:?}");
    assert!(
        count(&sent, "resources/read") >= 3,
        "re-read on the policy: {sent:?}"
    );
}

#[test]
fn no_subscribe_and_no_policy_is_refused_and_nothing_is_sent() {
    for (profile, declared) in [
        ("read-only", r#""resources": {}"#),
        ("list-changed", "listChanged"),
    ] {
        let run = capable_with(&["watch", "--trace", MANUAL], &fixture(profile), T);
        run.expect_code(5);
        let message = untraced(&run.stderr);
        assert!(message.contains(declared), "{profile}: {message}");
        assert!(message.contains("--poll"), "{profile}: {message}");
        let sent = run.sent_methods();
        assert_eq!(sent, HANDSHAKE, "{profile}: nothing beyond the handshake");
        assert!(run.stdout.trim().is_empty(), "{}", run.stdout);
    }
}

#[test]
fn no_subscribe_with_a_policy_polls() {
    let run = capable_with(
        &[
            "watch",
            "--json",
            "--trace",
            "--poll",
            "100ms",
            "--updates",
            "0",
            MANUAL,
        ],
        &fixture("list-changed"),
        T,
    );
    run.expect_code(0);
    let all = lines(&run.stdout);
    assert_eq!(all[0]["mode"], "poll", "{all:#?}");
    assert_eq!(events(&all, "revision").len(), 1);
    let sent = run.sent_methods();
    assert_eq!(count(&sent, "resources/subscribe"), 0, "{sent:?}");
}

#[test]
fn modern_watch_goes_through_listen() {
    let run = capable_with(
        &["watch", "--json", "--trace", "--updates", "2", MANUAL],
        &fixture("modern"),
        T,
    );
    run.expect_code(0);
    let all = lines(&run.stdout);
    assert_eq!(all[0]["mode"], "listen", "{all:#?}");
    assert_eq!(events(&all, "revision").len(), 3, "{all:#?}");
    let sent = trace(&run.stderr, "> ");
    let listens: Vec<&Value> = sent
        .iter()
        .filter(|m| m["method"] == "subscriptions/listen")
        .collect();
    assert_eq!(listens.len(), 1, "{sent:#?}");
    assert_eq!(
        listens[0]["params"]["notifications"]["resourceSubscriptions"],
        serde_json::json!([MANUAL])
    );
    let cancelled = sent
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("the listen stream is closed");
    assert_eq!(cancelled["params"]["requestId"], listens[0]["id"]);
    assert!(!sent.iter().any(|m| m["method"] == "resources/subscribe"));
}

#[test]
fn people_see_each_revision_with_its_read_time() {
    let mut server = fixture("subscribe");
    server.extend(["--update-interval".into(), "200ms".into()]);
    let run = capable_with(&["watch", "--updates", "1", MANUAL], &server, T);
    run.expect_code(0);
    assert!(run.stdout.contains("mode      subscribe"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("read at ").count(), 2, "{}", run.stdout);
    assert!(
        run.stdout.contains("Acceptance instructions (revision 2)"),
        "{}",
        run.stdout
    );
}

/// `capable ARGS -- SERVER` with stdout and stderr written to one file, in the order
/// they were written (each line is one write).
fn interleaved(args: &[&str], server: &[String]) -> (Option<i32>, String) {
    let out = TempFile::new("watch-interleaved.txt", "");
    let file = std::fs::File::create(&out.0).expect("output file");
    let status = Command::new(bin())
        .args(args)
        .arg("--")
        .args(server)
        .env_remove("CAPABLE_LOG")
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("a second handle"))
        .stderr(file)
        .status()
        .expect("capable runs");
    let text = std::fs::read_to_string(&out.0).expect("output");
    (status.code(), text)
}

#[test]
fn people_are_told_it_waits_after_the_first_revision() {
    let mut server = fixture("subscribe");
    server.extend(["--update-interval".into(), "50ms".into()]);
    let (code, text) = interleaved(&["watch", "--updates", "1", MANUAL], &server);
    assert_eq!(code, Some(0), "{text}");
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"))
    };
    let waiting = at("capable: waiting for changes (the server says when it changes)");
    let first = at("read at ");
    let second = text[first + 1..]
        .find("read at ")
        .expect("a second revision")
        + first
        + 1;
    assert!(first < waiting && waiting < second, "{text}");
    assert_eq!(text.matches("waiting for changes").count(), 1, "{text}");

    // --json says nothing of the kind: its mode line says how changes arrive.
    let json = capable_with(&["--json", "watch", "--updates", "1", MANUAL], &server, T);
    json.expect_code(0);
    assert!(!json.stderr.contains("waiting"), "{}", json.stderr);
}

// ── audit ──────────────────────────────────────────────────────────────────────

fn check<'a>(report: &'a Value, capability: &str, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["capability"] == capability && c["check"] == name)
        .unwrap_or_else(|| panic!("no check {capability}/{name}: {report:#}"))
}

#[test]
fn audit_of_a_lying_server_is_exit_6_with_evidence() {
    let md = TempFile::new("lying-audit.md", "");
    let run = capable_with(
        &["audit", "--json", "--trace", "--report", md.path()],
        &fixture("lying-subscribe"),
        T,
    );
    run.expect_code(6);
    let r = run.json();
    assert_eq!(r["server"]["name"], "capable-fixture/lying-subscribe");
    assert_eq!(r["era"], "legacy");
    assert_eq!(
        check(&r, "resources.subscribe", "subscribe")["outcome"],
        "violation"
    );
    assert_eq!(check(&r, "resources", "list")["outcome"], "ok");
    assert_eq!(
        check(&r, "resources", "read the first listed resource")["outcome"],
        "ok"
    );
    let v = r["violations"].as_array().expect("violations");
    assert_eq!(v.len(), 1, "{r:#}");
    assert_eq!(v[0]["capability"], "resources.subscribe");
    assert_eq!(v[0]["method"], "resources/subscribe");
    assert_eq!(v[0]["request"]["method"], "resources/subscribe");
    assert_eq!(v[0]["response"]["error"]["code"], -32601);
    assert_eq!(v[0]["server"]["name"], "capable-fixture/lying-subscribe");
    let sent = run.sent_methods();
    assert_eq!(count(&sent, "resources/subscribe"), 1, "{sent:?}");
    assert_eq!(
        count(&sent, "resources/unsubscribe"),
        0,
        "marked broken: {sent:?}"
    );
    assert_eq!(count(&sent, "tools/call"), 0);
    let report = std::fs::read_to_string(&md.0).expect("report written");
    assert!(
        report.starts_with("# MCP contract audit: capable-fixture/lying-subscribe"),
        "{report}"
    );
    assert!(report.contains("## Violations"), "{report}");
    assert!(report.contains("\"code\": -32601"), "{report}");
    assert!(report.contains("What to change"), "{report}");
}

#[test]
fn audit_of_honest_fixtures_is_clean() {
    for profile in [
        "read-only",
        "subscribe",
        "list-changed",
        "no-resources",
        "modern",
    ] {
        let run = capable_with(&["audit", "--json", "--trace"], &fixture(profile), T);
        run.expect_code(0);
        let r = run.json();
        assert_eq!(r["violations"], serde_json::json!([]), "{profile}: {r:#}");
        let sent = run.sent_methods();
        assert_eq!(
            count(&sent, "tools/call"),
            0,
            "{profile}: tools are never called"
        );
        match profile {
            "subscribe" => {
                assert_eq!(
                    check(&r, "resources.subscribe", "unsubscribe")["outcome"],
                    "ok"
                );
            }
            "list-changed" => {
                let c = check(&r, "resources.listChanged", "list change notification");
                assert_eq!(c["outcome"], "unverifiable");
            }
            "modern" => {
                let c = check(&r, "resources.subscribe", "open and close a listen stream");
                assert_eq!(c["outcome"], "ok", "{r:#}");
                assert!(
                    sent.contains(&"notifications/cancelled".to_owned()),
                    "{sent:?}"
                );
                assert_eq!(
                    check(
                        &r,
                        "tools",
                        "each tool's input schema is a valid JSON Schema"
                    )["outcome"],
                    "ok"
                );
            }
            _ => {}
        }
    }
}

#[test]
fn audit_for_people_is_a_table() {
    let run = capable_with(&["audit"], &fixture("lying-subscribe"), T);
    run.expect_code(6);
    for needle in [
        "CAPABILITY",
        "OUTCOME",
        "violation",
        "CONTRACT VIOLATIONS",
        "-32601",
    ] {
        assert!(
            run.stdout.contains(needle),
            "{needle} missing:\n{}",
            run.stdout
        );
    }
}
