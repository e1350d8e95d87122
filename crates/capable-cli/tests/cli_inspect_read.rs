//! End-to-end tests of `capable inspect` and `capable read` against the fixture
//! server: what a profile declares, for people and for scripts, and a read with its time
//! and revision, refused locally where resources are not offered. Each run is a real
//! child process: `capable <cmd> -- <capable> fixture --profile P`.

mod common;

use std::time::Duration;

use common::{capable_with, fixture, revision, rfc3339_utc};
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
