//! End-to-end tests of the real `capable` binary against fixture servers that fail: a
//! crash, a hanging read, garbage and unknown ids, a message over the size limit; and a
//! slow call that progress keeps inside its timeout. Each run is a real child process.

mod common;

use std::time::Duration;

use common::{capable_with, fixture, trace};
use serde_json::{json, Value};

const MANUAL: &str = "docs://manual/current";
const T: Duration = Duration::from_secs(20);

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
        run.stderr.contains("larger than the limit of 1 MiB"),
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
