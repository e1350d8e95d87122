//! End-to-end tests of the real `capable` binary against its own fixture server:
//! `capable <cmd> -- <capable> fixture --profile P`, each a real child process.

mod common;

use std::time::Duration;

use common::{capable, capable_with, fixture, revision, rfc3339_utc, trace, TempFile};
use serde_json::{json, Value};

const MANUAL: &str = "docs://manual/current";
const T: Duration = Duration::from_secs(20);

fn actions(report: &Value) -> Vec<&str> {
    report["actions"]
        .as_array()
        .expect("actions is an array")
        .iter()
        .map(|a| a.as_str().expect("action is a string"))
        .collect()
}

// ── inspect ────────────────────────────────────────────────────────────────────

#[test]
fn inspect_json_reports_exactly_what_read_only_declares() {
    let run = capable_with(&["inspect", "--json"], &fixture("read-only"), T);
    run.expect_code(0);
    let r = run.json();
    assert_eq!(r["era"], "legacy", "{r:#}");
    assert_eq!(r["protocolVersion"], "2025-11-25", "{r:#}");
    assert_eq!(r["capabilities"], json!({"resources": {}}), "{r:#}");
    assert_eq!(
        r["serverInfo"]["name"], "capable-fixture/read-only",
        "{r:#}"
    );
    let actions = actions(&r);
    assert!(actions.contains(&"resources/read"), "{actions:?}");
    assert!(actions.contains(&"resources/list"), "{actions:?}");
    assert!(!actions.contains(&"resources/subscribe"), "{actions:?}");
    assert!(!actions.contains(&"tools/call"), "{actions:?}");
}

#[test]
fn inspect_shows_the_capability_matrix_to_people() {
    let run = capable_with(&["inspect"], &fixture("read-only"), T);
    run.expect_code(0);
    let rows: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.contains(&vec!["capability", "present", "subscribe", "listChanged"]),
        "no matrix header:\n{}",
        run.stdout
    );
    assert!(
        rows.contains(&vec!["resources", "yes", "no", "no"]),
        "no `resources yes no no` row:\n{}",
        run.stdout
    );
    assert!(
        rows.iter()
            .any(|r| r.first() == Some(&"tools") && r.get(1) == Some(&"no")),
        "tools should be shown as absent:\n{}",
        run.stdout
    );
    assert!(run.stdout.contains("2025-11-25"), "{}", run.stdout);
    assert!(
        run.stdout.contains(r#"{"resources":{}}"#),
        "the raw declaration should be shown:\n{}",
        run.stdout
    );
    let may_call = run
        .stdout
        .lines()
        .find(|l| l.starts_with("a host may call:"))
        .unwrap_or_else(|| panic!("no `a host may call:` line:\n{}", run.stdout));
    assert!(may_call.contains("resources/read"), "{may_call}");
    assert!(!may_call.contains("resources/subscribe"), "{may_call}");
}

// ── read ───────────────────────────────────────────────────────────────────────

#[test]
fn read_json_has_uri_time_revision_and_text() {
    let first = capable_with(&["read", "--json", MANUAL], &fixture("read-only"), T);
    first.expect_code(0);
    let r = first.json();
    assert_eq!(r["uri"], MANUAL, "{r:#}");
    let read_at = r["readAt"].as_str().expect("readAt is a string");
    let when = rfc3339_utc(read_at);
    let now = common::now_unix();
    assert!(
        (now - when).abs() <= 120,
        "readAt {read_at} is not the time of the read (now is {now} Unix)"
    );
    let rev = revision(&r["revision"]);
    assert!(rev.starts_with("sha256:"), "{rev}");
    assert_eq!(rev.len(), "sha256:".len() + 64, "{rev}");
    let text = r["contents"][0]["text"].as_str().expect("text");
    assert!(text.contains("Acceptance instructions"), "{text}");

    let second = capable_with(&["read", "--json", MANUAL], &fixture("read-only"), T);
    second.expect_code(0);
    assert_eq!(
        revision(&second.json()["revision"]),
        rev,
        "the same content must give the same revision"
    );
}

#[test]
fn read_shows_text_revision_and_time_to_people() {
    let run = capable_with(&["read", MANUAL], &fixture("read-only"), T);
    run.expect_code(0);
    let out = &run.stdout;
    assert!(out.contains("Acceptance instructions"), "{out}");
    let rev_line = out
        .lines()
        .find(|l| l.starts_with("revision"))
        .unwrap_or_else(|| panic!("no revision line:\n{out}"));
    assert!(rev_line.contains("sha256:"), "{rev_line}");
    let at_line = out
        .lines()
        .find(|l| l.starts_with("read at"))
        .unwrap_or_else(|| panic!("no `read at` line:\n{out}"));
    let stamp = at_line.trim_start_matches("read at").trim();
    rfc3339_utc(stamp);
}

#[test]
fn read_without_resources_is_refused_locally() {
    let run = capable_with(&["read", MANUAL], &fixture("no-resources"), T);
    run.expect_code(5);
    assert!(run.stderr.contains("`resources`"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was sent"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);

    let run = capable_with(&["read", "--json", MANUAL], &fixture("no-resources"), T);
    run.expect_code(5);
    let e = run.json();
    assert_eq!(e["error"]["kind"], "capability_not_offered", "{e:#}");
    assert_eq!(e["error"]["exitCode"], 5, "{e:#}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("resources"),
        "{e:#}"
    );

    let run = capable_with(&["read", "--trace", MANUAL], &fixture("no-resources"), T);
    run.expect_code(5);
    let sent = run.sent_methods();
    assert!(
        sent.contains(&"notifications/initialized".to_owned()),
        "the handshake completed: {sent:?}"
    );
    assert!(
        !sent.iter().any(|m| m.starts_with("resources/")),
        "nothing about resources may be sent: {sent:?}"
    );
}

// ── protocol negotiation ──────────────────────────────────────────────────────

#[test]
fn an_unsupported_version_is_refused_and_nothing_more_is_sent() {
    let run = capable_with(
        &["read", "--trace", MANUAL],
        &fixture("unsupported-version"),
        T,
    );
    run.expect_code(4);
    let message = common::untraced(&run.stderr);
    for v in [
        "1999-01-01",
        "2025-11-25",
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
    ] {
        assert!(
            message.contains(v),
            "the message should name {v}:\n{message}"
        );
    }

    // After the initialize answer arrives, nothing is sent (no notifications/initialized).
    let lines: Vec<&str> = run.stderr.lines().collect();
    let answer = lines
        .iter()
        .position(|l| l.starts_with("< ") && l.contains("1999-01-01"))
        .unwrap_or_else(|| panic!("no initialize answer in the trace:\n{}", run.stderr));
    let after: Vec<&&str> = lines[answer + 1..]
        .iter()
        .filter(|l| l.starts_with("> "))
        .collect();
    assert!(after.is_empty(), "sent after the refused answer: {after:?}");
    let sent = run.sent_methods();
    assert_eq!(
        sent.last().map(String::as_str),
        Some("initialize"),
        "{sent:?}"
    );
    assert!(
        !sent.contains(&"notifications/initialized".to_owned()),
        "{sent:?}"
    );

    let run = capable_with(&["inspect", "--json"], &fixture("unsupported-version"), T);
    run.expect_code(4);
    assert_eq!(run.json()["error"]["kind"], "protocol_version_refused");
}

#[test]
fn protocol_legacy_skips_discovery_and_auto_probes_first() {
    let run = capable_with(
        &["read", "--trace", "--protocol", "legacy", MANUAL],
        &fixture("read-only"),
        T,
    );
    run.expect_code(0);
    let sent = run.sent_methods();
    assert!(!sent.contains(&"server/discover".to_owned()), "{sent:?}");
    assert_eq!(
        sent,
        ["initialize", "notifications/initialized", "resources/read"],
        "legacy: handshake, then the read"
    );

    let run = capable_with(&["read", "--trace", MANUAL], &fixture("read-only"), T);
    run.expect_code(0);
    let sent = run.sent_methods();
    assert_eq!(
        sent,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "resources/read"
        ],
        "auto: probe the modern era, then fall back to initialize"
    );
}

// ── transport failures ────────────────────────────────────────────────────────

#[test]
fn a_crashing_server_fails_fast_with_its_exit_code() {
    // The timeout (30 s) is longer than the test's deadline (20 s): a crash that waited
    // for it would fail the test; the error is the exit, never a timeout.
    let run = capable_with(&["read", "--timeout", "30s", MANUAL], &fixture("crash"), T);
    run.expect_code(3);
    assert!(run.stderr.contains("exit code 3"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("no answer within"),
        "a crash must not wait for the timeout: {}",
        run.stderr
    );

    let run = capable_with(&["read", "--json", MANUAL], &fixture("crash"), T);
    run.expect_code(3);
    assert_eq!(run.json()["error"]["kind"], "server_exited");
}

#[test]
fn a_hanging_read_times_out_and_is_cancelled() {
    let run = capable_with(
        &["read", "--trace", "--timeout", "1s", MANUAL],
        &fixture("hang"),
        T,
    );
    run.expect_code(3);
    // The run includes the whole timeout, which never fires early; that it fires
    // exactly at it is checked in paused time (crates/capable/tests/timeouts.rs).
    assert!(
        run.elapsed >= Duration::from_secs(1),
        "gave up after {:?}, before the 1s timeout",
        run.elapsed
    );
    // The message for people (not the trace lines) says what happened and what to do.
    let message = common::untraced(&run.stderr);
    assert!(message.contains("no answer within 1s"), "{message}");
    assert!(message.contains("cancelled"), "{message}");
    assert!(
        message.contains("--timeout"),
        "the hint names the flag: {message}"
    );
    let sent = run.sent();
    let read_id = sent
        .iter()
        .find(|m| m["method"] == "resources/read")
        .map(|m| m["id"].clone())
        .unwrap_or_else(|| panic!("the read was not sent:\n{}", run.stderr));
    let read_at = sent
        .iter()
        .position(|m| m["method"] == "resources/read")
        .expect("the read was sent");
    let cancel_at = sent
        .iter()
        .position(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled sent:\n{}", run.stderr));
    let cancelled = &sent[cancel_at];
    assert_eq!(cancelled["params"]["requestId"], read_id, "{cancelled}");
    assert!(
        cancelled.get("id").is_none(),
        "a notification has no id: {cancelled}"
    );
    assert!(cancel_at > read_at, "cancelled after it was sent");
    let answered = trace(&run.stderr, "< ")
        .iter()
        .any(|m| m.get("method").is_none() && m["id"] == read_id);
    assert!(
        !answered,
        "the hang profile never answers reads:\n{}",
        run.stderr
    );
}

#[test]
fn a_hanging_read_is_a_timeout_for_scripts() {
    let run = capable_with(
        &["read", "--json", "--timeout", "1s", MANUAL],
        &fixture("hang"),
        T,
    );
    run.expect_code(3);
    let e = run.json();
    assert_eq!(e["error"]["kind"], "timeout", "{e:#}");
    assert_eq!(e["error"]["exitCode"], 3, "{e:#}");
}

#[test]
fn garbage_and_unknown_ids_do_not_break_a_read() {
    for profile in ["garbage", "unknown-id"] {
        let run = capable_with(&["read", "--json", MANUAL], &fixture(profile), T);
        run.expect_code(0);
        let r = run.json();
        let text = r["contents"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains("Acceptance instructions"), "{profile}: {r:#}");
    }
}

#[test]
fn a_32_mib_read_succeeds() {
    let run = capable_with(
        &["read", "--json", MANUAL],
        &fixture("huge"),
        Duration::from_secs(60),
    );
    run.expect_code(0);
    let r = run.json();
    let text = r["contents"][0]["text"].as_str().expect("text");
    assert_eq!(text.len(), 33_554_432);
    assert!(text.bytes().all(|b| b == b'x'));
}

#[test]
fn a_message_over_the_size_limit_ends_the_session_clearly() {
    let run = capable_with(
        &["read", "--max-message", "1MiB", MANUAL],
        &fixture("huge"),
        Duration::from_secs(30),
    );
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("larger than the limit of 1048576 bytes"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--max-message"), "{}", run.stderr);
}

#[test]
fn progress_extends_the_timeout() {
    let run = capable_with(
        &[
            "tools",
            "call",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--timeout",
            "1s",
            "--trace",
        ],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "hi");
    // The call outlived the 1s timeout, as the test needs to prove anything: the
    // fixture sends progress 1/7 … 7/7, 200 ms apart, all before its answer. (The timing
    // itself is checked in paused time in crates/capable/tests/timeouts.rs.)
    let call_id = run
        .sent()
        .into_iter()
        .find(|m| m["method"] == "tools/call")
        .map(|m| m["id"].clone())
        .unwrap_or_else(|| panic!("the call was not sent:\n{}", run.stderr));
    let received = trace(&run.stderr, "< ");
    let answer_at = received
        .iter()
        .position(|m| m.get("method").is_none() && m["id"] == call_id)
        .unwrap_or_else(|| panic!("the call was never answered:\n{}", run.stderr));
    assert!(
        received[answer_at].get("result").is_some(),
        "{}",
        received[answer_at]
    );
    let progress = |ms: &[Value]| -> Vec<Value> {
        ms.iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"]["progress"].clone())
            .collect()
    };
    assert_eq!(
        progress(&received[..answer_at]),
        (1..=7).map(|k| json!(k)).collect::<Vec<_>>(),
        "every progress before the answer"
    );
    assert!(progress(&received[answer_at..]).is_empty());
    assert!(
        !run.sent_methods()
            .contains(&"notifications/cancelled".to_owned()),
        "nothing was cancelled:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.lines().any(|l| l.starts_with("progress ")),
        "progress should be shown:\n{}",
        run.stderr
    );
}

#[test]
fn every_progress_notification_is_shown() {
    let run = capable_with(
        &["tools", "call", "echo", "--args", r#"{"message":"hi"}"#],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(0);
    let shown: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress "))
        .collect();
    // The fixture sends progress 1/7 … 7/7, all before its answer.
    assert_eq!(shown.len(), 7, "{shown:?}");
    assert!(shown[6].starts_with("progress 7/7"), "{shown:?}");
}

// ── usage ──────────────────────────────────────────────────────────────────────

#[test]
fn invalid_tool_arguments_are_a_usage_error() {
    let run = capable_with(
        &["tools", "call", "echo", "--args", "{not json"],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(2);
    assert!(run.stderr.contains("--args"), "{}", run.stderr);

    let run = capable_with(
        &["tools", "call", "echo", "--args", "[1,2]"],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(2);
    assert!(run.stderr.contains("JSON object"), "{}", run.stderr);
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let run = capable(&["frobnicate"], T);
    run.expect_code(2);
    assert!(run.stderr.contains("frobnicate"), "{}", run.stderr);
}

#[test]
fn no_server_is_a_usage_error_that_says_how() {
    let run = capable(&["read", MANUAL], T);
    run.expect_code(2);
    assert!(run.stderr.contains("--"), "{}", run.stderr);
    assert!(run.stderr.contains("--server"), "{}", run.stderr);

    let run = capable(&["inspect", "--json"], T);
    run.expect_code(2);
    assert_eq!(run.json()["error"]["kind"], "usage");
}

// ── config files ──────────────────────────────────────────────────────────────

fn entry() -> Value {
    json!({"command": common::bin(), "args": ["fixture", "--profile", "read-only"]})
}

#[test]
fn a_server_from_an_mcp_servers_config() {
    let config = TempFile::new(
        "mcpServers.json",
        &json!({"mcpServers": {"fx": entry()}}).to_string(),
    );
    let run = capable(
        &[
            "read",
            "--json",
            "--server",
            "fx",
            "--config",
            config.path(),
            MANUAL,
        ],
        T,
    );
    run.expect_code(0);
    let text = run.json()["contents"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(text.contains("Acceptance instructions"), "{text}");
}

#[test]
fn a_server_from_a_vscode_config() {
    let mut e = entry();
    e["type"] = json!("stdio");
    let config = TempFile::new("vscode.json", &json!({"servers": {"fx": e}}).to_string());
    let run = capable(
        &[
            "inspect",
            "--json",
            "--server",
            "fx",
            "--config",
            config.path(),
        ],
        T,
    );
    run.expect_code(0);
    assert_eq!(
        run.json()["serverInfo"]["name"],
        "capable-fixture/read-only"
    );
}

#[test]
fn an_unknown_server_name_lists_the_known_ones() {
    let config = TempFile::new(
        "unknown.json",
        &json!({"mcpServers": {"fx": entry(), "other": entry()}}).to_string(),
    );
    let run = capable(
        &[
            "read",
            "--server",
            "nope",
            "--config",
            config.path(),
            MANUAL,
        ],
        T,
    );
    run.expect_code(2);
    for name in ["nope", "fx", "other"] {
        assert!(
            run.stderr.contains(name),
            "should name {name}: {}",
            run.stderr
        );
    }
}

// ── demo ───────────────────────────────────────────────────────────────────────

fn sent_of(entry: &Value) -> Vec<&str> {
    entry["sent"]
        .as_array()
        .unwrap_or_else(|| panic!("no sent list: {entry:#}"))
        .iter()
        .map(|m| m.as_str().unwrap_or(""))
        .collect()
}

#[test]
fn demo_json_tells_the_story_of_each_profile() {
    let run = capable(&["demo", "--json"], T);
    run.expect_code(0);
    let all = run.json();
    let by = |p: &str| -> Value {
        all.as_array()
            .expect("an array of profiles")
            .iter()
            .find(|e| e["profile"] == p)
            .unwrap_or_else(|| panic!("no {p} entry in the demo"))
            .clone()
    };

    // lying-subscribe: the violation, with evidence; subscribe tried once, then read.
    let lying = by("lying-subscribe");
    let v = &lying["outcome"]["violation"];
    assert_eq!(v["request"]["method"], "resources/subscribe", "{lying:#}");
    assert_eq!(v["response"]["error"]["code"], -32601, "{lying:#}");
    assert_eq!(
        v["server"]["name"], "capable-fixture/lying-subscribe",
        "{lying:#}"
    );
    assert!(
        v["server"]["version"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{lying:#}"
    );
    let sent = sent_of(&lying);
    let subs: Vec<usize> = sent
        .iter()
        .enumerate()
        .filter(|(_, m)| **m == "resources/subscribe")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(subs.len(), 1, "subscribe exactly once: {sent:?}");
    assert_eq!(
        sent.get(subs[0] + 1),
        Some(&"resources/read"),
        "the fallback read follows: {sent:?}"
    );
    assert!(
        lying["outcome"]["read"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Acceptance instructions")),
        "{lying:#}"
    );

    // unsupported-version: the handshake is never completed.
    let unsupported = by("unsupported-version");
    let sent = sent_of(&unsupported);
    assert!(sent.contains(&"initialize"), "{sent:?}");
    assert!(!sent.contains(&"notifications/initialized"), "{sent:?}");

    // no-resources: nothing about resources is sent.
    let none = by("no-resources");
    let sent = sent_of(&none);
    assert!(
        !sent.iter().any(|m| m.starts_with("resources/")),
        "{sent:?}"
    );

    // subscribe: an update arrives and the re-read shows a new revision.
    let sub = by("subscribe");
    let first = revision(&sub["outcome"]["read"]["revision"]);
    let after = &sub["outcome"]["afterUpdate"];
    assert!(after.is_object(), "no re-read after the update: {sub:#}");
    assert_ne!(revision(&after["revision"]), first, "{sub:#}");
}

#[test]
fn demo_for_people_exits_zero() {
    let run = capable(&["demo"], T);
    run.expect_code(0);
    for p in [
        "read-only",
        "subscribe",
        "no-resources",
        "list-changed",
        "unsupported-version",
        "lying-subscribe",
    ] {
        assert!(run.stdout.contains(p), "{p} missing:\n{}", run.stdout);
    }
    assert!(run.stdout.contains("CONTRACT VIOLATION"), "{}", run.stdout);
}
