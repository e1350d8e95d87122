//! `capable bridge --config FILE`: the merged names every host accepts — within
//! `^[a-zA-Z0-9_-]{1,64}$`, collisions resolved by each one's hash and said, the same at
//! every start, each reaching its own server under its original name. (Real SDK
//! clients listing and calling them: `bridge_clients.rs`.)

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use std::time::Duration;

use bridge_support::{many as bridge, many_entry as fixture, Bridge};
use capable::internal::ProtocolVersion;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;

fn text(answer: &Value) -> String {
    answer["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {answer}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

/// Whether `name` keeps to the function-name rule of the model providers,
/// `^[a-zA-Z0-9_-]{1,64}$`.
fn keeps_the_rule(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[test]
fn merged_names_keep_to_the_rule_the_same_each_start_and_reach_the_original() {
    let long = "s".repeat(70);
    let servers = json!({
        "a.b": fixture("no-resources", &[]),
        "a_b": fixture("no-resources", &[]),
        long.clone(): fixture("no-resources", &[]),
    });
    let listed = |b: &mut Bridge| {
        b.initialize(V, json!({}));
        b.request(1, "tools/list", json!({}))["result"]["tools"]
            .as_array()
            .unwrap()
            .clone()
    };
    let (mut b, file) = bridge("names", servers, &[]);
    let tools = listed(&mut b);
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 6, "{names:?}");
    assert!(names.iter().all(|n| keeps_the_rule(n)), "{names:?}");
    // `a.b` and `a_b` would both be `a_b__echo`: each has a hash of its own whole
    // name instead, and the bridge says so; the long server's names are cut to 64.
    assert!(!names.contains(&"a_b__echo"), "{names:?}");
    assert!(names.iter().filter(|n| n.starts_with("a_b__echo_")).count() == 2);
    assert!(
        names.iter().filter(|n| n.len() == 64).count() == 2,
        "{names:?}"
    );
    b.audit_until(|l| {
        l["event"] == "notice"
            && l["notice"]
                .as_str()
                .unwrap_or("")
                .contains("a.b/echo, a_b/echo")
    });
    // Each name reaches its own server under the name it knows.
    for (id, tool) in tools.iter().enumerate() {
        let origin = &tool["_meta"]["capable/origin"];
        if origin["name"] != "echo" {
            continue;
        }
        let server = origin["server"].as_str().unwrap();
        let call = json!({"name": tool["name"], "arguments": {"message": server}});
        let answer = b.request(10 + id as i64, "tools/call", call);
        assert_eq!(text(&answer), server, "{answer}");
    }
    // The form of earlier versions, `server/name`, still reaches its server.
    let old = json!({"name": "a.b/echo", "arguments": {"message": "old"}});
    assert_eq!(text(&b.request(99, "tools/call", old)), "old");
    assert_eq!(b.close(), Some(0));
    // Another start, the same names.
    let mut again = Bridge::start(&["--config", file.path()]);
    let names_again: Vec<Value> = listed(&mut again)
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    let names: Vec<Value> = tools.iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names_again, names);
    assert_eq!(again.close(), Some(0));
    // A separator that would break the rule is refused before anything starts.
    let refused = common::capable(
        &["bridge", "--config", file.path(), "--name-separator", "/"],
        Duration::from_secs(20),
    );
    refused.expect_code(2);
    assert!(refused.stderr.contains("separator"), "{}", refused.stderr);
}
