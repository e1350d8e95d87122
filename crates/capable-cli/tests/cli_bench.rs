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
