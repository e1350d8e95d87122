//! `capable watch --reconnect` against a server that keeps dying: it is started again
//! by the restart rule (bounded, with delays), the watch goes on across sessions, and
//! giving up says so and ends with the server's exit code. What cannot be cured by a
//! restart is not retried.

mod common;

use std::time::Duration;

use common::{bin, capable_with, TempFile};
use serde_json::Value;

const MANUAL: &str = "docs://manual/current";
const T: Duration = Duration::from_secs(30);

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

/// A server that answers for about a second and is then killed (`timeout -s KILL`),
/// recording each start's pid in `pids`. It declares `resources` without `subscribe`,
/// and the watches re-read every 30 s: one revision per session.
fn short_lived(pids: &TempFile) -> Vec<String> {
    let script = format!(
        "echo $$ >> '{}'; exec timeout -s KILL 1 '{}' fixture --profile read-only",
        pids.path(),
        bin()
    );
    vec!["sh".into(), "-c".into(), script]
}

fn assert_none_left(pids: &TempFile) {
    let text = std::fs::read_to_string(pids.path()).expect("pid file");
    for pid in text.split_whitespace() {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains("fixture"),
            "server process {pid} outlived capable"
        );
    }
}

#[test]
fn a_server_that_keeps_dying_is_restarted_a_bounded_number_of_times_then_given_up() {
    let pids = TempFile::new("reconnect-pids", "");
    let run = capable_with(
        &[
            "--json",
            "watch",
            MANUAL,
            "--poll",
            "30s",
            "--reconnect",
            "--max-restarts",
            "2",
        ],
        &short_lived(&pids),
        T,
    );
    // Given up: the last failure's exit code (the server went away: 3).
    run.expect_code(3);
    let all = lines(&run.stdout);
    let reconnects = events(&all, "reconnect");
    assert_eq!(reconnects.len(), 2, "two restarts, no more: {all:?}");
    for (i, r) in reconnects.iter().enumerate() {
        assert_eq!(r["attempt"], i as u64 + 1);
        assert_eq!(r["maxAttempts"], 2);
        assert_eq!(r["reason"], "exited", "{r}");
        assert!(r["delayMs"].as_u64().is_some_and(|d| d > 0), "{r}");
    }
    // The delay doubles (jitter shortens each by at most a fifth).
    let (d1, d2) = (
        reconnects[0]["delayMs"].as_u64().unwrap(),
        reconnects[1]["delayMs"].as_u64().unwrap(),
    );
    assert!(
        d2 > d1,
        "the second delay ({d2} ms) is longer than the first ({d1} ms)"
    );
    // Each of the three sessions read the resource once: the watch went on each time.
    assert_eq!(events(&all, "revision").len(), 3, "{all:?}");
    assert_eq!(events(&all, "mode").len(), 3, "{all:?}");
    assert_eq!(
        std::fs::read_to_string(pids.path())
            .unwrap()
            .lines()
            .count(),
        3
    );
    assert!(
        run.stderr.contains("giving up after 2 restarts in a row"),
        "{}",
        run.stderr
    );
    let last = all.last().expect("an error line");
    assert_eq!(last["error"]["exitCode"], 3, "{last}");
    assert_none_left(&pids);
}

#[test]
fn updates_count_across_restarts_and_end_the_watch_cleanly() {
    let pids = TempFile::new("reconnect-updates-pids", "");
    // A revision per session: the first, then two more after two restarts.
    let run = capable_with(
        &[
            "--json",
            "watch",
            MANUAL,
            "--poll",
            "30s",
            "--reconnect",
            "--updates",
            "2",
        ],
        &short_lived(&pids),
        T,
    );
    run.expect_code(0);
    let all = lines(&run.stdout);
    assert_eq!(events(&all, "revision").len(), 3, "{all:?}");
    assert_eq!(events(&all, "reconnect").len(), 2, "{all:?}");
    // No error line: every line is an event.
    assert!(all.iter().all(|e| e.get("event").is_some()), "{all:?}");
    assert_none_left(&pids);
}

#[test]
fn without_reconnect_a_dying_server_ends_the_watch_at_once() {
    let pids = TempFile::new("no-reconnect-pids", "");
    let run = capable_with(
        &["--json", "watch", MANUAL, "--poll", "30s"],
        &short_lived(&pids),
        T,
    );
    run.expect_code(3);
    let all = lines(&run.stdout);
    assert!(events(&all, "reconnect").is_empty(), "{all:?}");
    assert_eq!(
        std::fs::read_to_string(pids.path())
            .unwrap()
            .lines()
            .count(),
        1
    );
}

#[test]
fn what_a_restart_cannot_cure_is_not_retried() {
    // No subscription and no --poll: refused before anything is sent beyond the
    // handshake, and a restart would be refused the same way.
    let run = capable_with(
        &["--json", "watch", MANUAL, "--reconnect"],
        &common::fixture("read-only"),
        T,
    );
    run.expect_code(5);
    assert!(
        events(&lines(&run.stdout), "reconnect").is_empty(),
        "{}",
        run.stdout
    );
}

#[test]
fn restart_bounds_need_reconnect() {
    let run = common::capable(&["watch", MANUAL, "--max-restarts", "3", "--", "true"], T);
    run.expect_code(2);
    assert!(run.stderr.contains("--reconnect"), "{}", run.stderr);
}
