//! End-to-end tests of protocol negotiation by the real `capable` binary against the
//! fixture server: an unsupported version is refused and nothing more is sent,
//! `--protocol legacy` skips the probe, and auto probes first. What was sent is read
//! from `--trace`.

mod common;

use std::time::Duration;

use common::{capable_with, fixture};

const MANUAL: &str = "docs://manual/current";
const T: Duration = Duration::from_secs(20);

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
