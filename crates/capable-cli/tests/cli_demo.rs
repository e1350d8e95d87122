//! End-to-end tests of `capable demo`: the story of each fixture profile, for scripts
//! and for people.

mod common;

use std::time::Duration;

use common::{capable, revision};
use serde_json::Value;

const T: Duration = Duration::from_secs(20);

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
