//! `capable bridge --config FILE [--only a,b]`: many servers as one. Their tools,
//! resources and prompts merged under `server__name` (two servers' `echo` side by
//! side), calls routed to their server, each server's policy applied (`allowTools`,
//! `denyTools`, `timeout`, `outputBudget`, `disabled`), a tool with a schema that is no
//! schema dropped with a notice, `list_changed` forwarded, crashed servers restarted
//! (resource subscriptions among many servers: `bridge_many_subscriptions.rs`).
//! Every message the bridge writes is validated as a server message of the host's
//! version.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use std::time::{Duration, Instant};

use bridge_support::{many as bridge, many_entry as fixture, Bridge};
use capable::internal::ProtocolVersion;
use capable_test_support::assert_valid_result;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;

fn names(list: &Value, member: &str) -> Vec<String> {
    list["result"][member]
        .as_array()
        .unwrap_or_else(|| panic!("no {member}: {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn text(answer: &Value) -> String {
    answer["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {answer}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn many_servers_are_one_with_their_names_side_by_side_and_their_policies_applied() {
    let mut deny = fixture("elicit", &[]);
    deny["denyTools"] = json!(["confirm"]);
    deny["outputBudget"] = json!(10);
    let mut off = fixture("read-only", &[]);
    off["disabled"] = json!(true);
    let (mut b, _file) = bridge(
        "policies",
        json!({
            "a": fixture("no-resources", &[]),
            "b": deny,
            "docs": fixture("read-only", &[]),
            "off": off,
            "bad": fixture("bad-schema", &[]),
            "gone": {"command": "/nonexistent/server"}
        }),
        &[],
    );
    let answer = b.initialize(V, json!({}));
    assert_valid_result(V, "InitializeResult", &answer);
    assert_eq!(
        answer["result"]["capabilities"],
        json!({"tools": {"listChanged": true}, "resources": {"listChanged": true}})
    );
    let tools = b.request(1, "tools/list", json!({}));
    assert_valid_result(V, "ListToolsResult", &tools);
    assert_eq!(
        names(&tools, "tools"),
        ["a__echo", "a__confirm", "b__echo", "bad__echo"]
    );
    b.audit_count_until(2, |l| l["event"] == "notice" && l["server"] == "bad");
    let dropped: Vec<Value> = b
        .audit()
        .into_iter()
        .filter(|l| l["event"] == "notice" && l["server"] == "bad")
        .collect();
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert!(dropped
        .iter()
        .any(|l| l["notice"].as_str().unwrap().contains("\"broken\"")));

    // Colliding names, each to its own server.
    let a = b.request(
        2,
        "tools/call",
        json!({"name": "a__echo", "arguments": {"message": "to a"}}),
    );
    assert_eq!(text(&a), "to a");
    // b's budget is 10 bytes: cut, with a note.
    let cut = b.request(
        3,
        "tools/call",
        json!({"name": "b__echo", "arguments": {"message": "a long message for b"}}),
    );
    assert_valid_result(V, "CallToolResult", &cut);
    assert!(
        text(&cut).starts_with("a long mes|[capable bridge: the result was cut"),
        "{cut}"
    );
    // Denied, unknown and unnamed tools are not offered.
    for (id, name) in [(4, "b__confirm"), (5, "off__echo"), (6, "echo")] {
        let refused = b.request(id, "tools/call", json!({"name": name}));
        assert!(refused.get("error").is_some(), "{name}: {refused}");
    }
    let read = b.request(7, "resources/read", json!({"uri": "docs://manual/current"}));
    assert_valid_result(V, "ReadResourceResult", &read);
    assert!(b
        .audit()
        .iter()
        .any(|l| l["server"] == "off" && l["state"] == "disabled"));
    assert!(b
        .audit()
        .iter()
        .any(|l| l["server"] == "gone" && l["state"] == "refused"));
    assert!(!b
        .audit()
        .iter()
        .any(|l| l["server"] == "off" && l["state"] == "starting"));
    assert_eq!(b.close(), Some(0));
}

#[test]
fn a_servers_list_change_reaches_the_host_and_a_crashed_server_comes_back() {
    let (mut b, _file) = bridge(
        "changes",
        json!({
            "grow": fixture("tools-changed", &[]),
            "soon": fixture("crash-soon", &["--update-interval", "1500ms"]),
        }),
        &[],
    );
    b.initialize(V, json!({}));
    let call = b.request(1, "tools/call", json!({"name": "grow__grow"}));
    assert_eq!(text(&call), "added grown-1");
    // The host hears of it, then lists the new tool.
    let until = Instant::now() + bridge_support::ANSWER;
    loop {
        let tools = b.request(2, "tools/list", json!({}));
        if names(&tools, "tools").contains(&"grow__grown-1".to_owned()) {
            break;
        }
        assert!(Instant::now() < until, "{tools}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The notification and the fresh list are on their ways at once.
    let changed = |m: &serde_json::Value| m["method"] == "notifications/tools/list_changed";
    let heard = b.seen.iter().any(changed)
        || std::iter::from_fn(|| b.next_within(bridge_support::ANSWER)).any(|m| changed(&m));
    assert!(heard, "{:?}", b.seen);
    // soon crashes 1.5 s after each start: restarted by the host, its tools back.
    b.audit_until(|l| l["server"] == "soon" && l["state"] == "restarting");
    let back = Instant::now() + bridge_support::ANSWER;
    loop {
        let call = b.request(
            3,
            "tools/call",
            json!({"name": "soon__echo", "arguments": {"message": "back"}}),
        );
        if call.get("result").is_some() {
            assert_eq!(text(&call), "back");
            break;
        }
        assert!(Instant::now() < back, "{call}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_server_named_from_the_config_gets_its_policy_as_it_would_among_many() {
    let mut b = fixture("elicit", &[]);
    b["denyTools"] = json!(["confirm"]);
    b["outputBudget"] = json!(10);
    let mut slow = fixture("hang", &[]);
    slow["timeout"] = json!("300ms");
    let (mut one, file) = bridge(
        "one-policy",
        json!({"b": b, "slow": slow}),
        &["--server", "b"],
    );
    one.initialize(V, json!({}));
    // Its own names (one server: no `server/` prefix), less what its policy keeps back.
    let tools = one.request(1, "tools/list", json!({}));
    assert_valid_result(V, "ListToolsResult", &tools);
    assert_eq!(names(&tools, "tools"), ["echo"]);
    let refused = one.request(2, "tools/call", json!({"name": "confirm"}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let cut = one.request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "a long message for b"}}),
    );
    assert_valid_result(V, "CallToolResult", &cut);
    assert!(
        text(&cut).starts_with("a long mes|[capable bridge: the result was cut"),
        "{cut}"
    );
    // The server never saw the refused call: its next answer is to the next request
    // (a result over 10 bytes of JSON, cut too).
    let short = one.request(
        4,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"}}),
    );
    assert!(text(&short).starts_with("hi|[capable bridge"), "{short}");

    // Its own timeout, not the bridge's 60 s.
    let mut slow_one = Bridge::start(&["--config", file.path(), "--server", "slow"]);
    slow_one.initialize(V, json!({}));
    let started = Instant::now();
    let read = slow_one.request(1, "resources/read", json!({"uri": "docs://manual/current"}));
    assert_eq!(read["error"]["data"]["kind"], "timeout", "{read}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn only_the_servers_named_start_and_each_has_its_own_timeout() {
    let mut slow = fixture("hang", &[]);
    slow["timeout"] = json!("300ms");
    let (mut b, _file) = bridge(
        "only",
        json!({"slow": slow, "docs": fixture("read-only", &[]), "other": fixture("no-resources", &[])}),
        &["--only", "slow,docs"],
    );
    b.initialize(V, json!({}));
    let resources = b.request(1, "resources/list", json!({}));
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    // Both list the same URIs: the first server's, the second's dropped with a notice.
    assert_eq!(uris, ["docs://manual/current", "docs://manual/archive"]);
    assert!(
        !b.audit().iter().any(|l| l["server"] == "other"),
        "not started"
    );
    let started = Instant::now();
    let read = b.request(2, "resources/read", json!({"uri": "docs://manual/current"}));
    assert_eq!(read["error"]["data"]["kind"], "timeout", "{read}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let unknown = common::capable(
        &["bridge", "--config", _file.path(), "--only", "nope"],
        Duration::from_secs(20),
    );
    unknown.expect_code(2);
}

#[test]
fn a_2026_host_in_front_of_many_legacy_servers() {
    let servers = json!({"a": fixture("no-resources", &[]), "b": fixture("no-resources", &[])});
    let (mut b, _file) = bridge("modern", servers, &[]);
    b.version = ProtocolVersion::V2026_07_28;
    let mut meta = json!({});
    meta["_meta"] = Bridge::meta(json!({}));
    let discover = b.request(1, "server/discover", meta.clone());
    assert_valid_result(b.version, "DiscoverResult", &discover);
    let tools = b.request(2, "tools/list", meta.clone());
    assert_valid_result(b.version, "ListToolsResult", &tools);
    assert_eq!(
        names(&tools, "tools"),
        ["a__echo", "a__confirm", "b__echo", "b__confirm"]
    );
    let mut call = json!({"name": "b__echo", "arguments": {"message": "modern"}});
    call["_meta"] = Bridge::meta(json!({}));
    let answer = b.request(3, "tools/call", call);
    assert_valid_result(b.version, "CallToolResult", &answer);
    assert_eq!(text(&answer), "modern");
}
