//! `capable bridge --config FILE [--only a,b]`: many servers as one. Their tools,
//! resources and prompts merged under `server__name` (two servers' `echo` side by
//! side), calls routed to their server, each server's policy applied (`allowTools`,
//! `denyTools`, `timeout`, `outputBudget`, `disabled`), a tool with a schema that is no
//! schema dropped with a notice, `list_changed` forwarded, crashed servers restarted,
//! resource subscriptions carried to the server that owns each URI (in its era, again
//! after it restarts; refused with why where its server did not declare them; a legacy
//! host's answered as that server answered them).
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

/// Waits for `notifications/resources/updated` of `uri` (one already seen counts, and
/// is taken); every update on the way must be of `uri`.
#[track_caller]
fn updated(b: &mut Bridge, uri: &str) -> Value {
    let is_update = |m: &Value| m["method"] == "notifications/resources/updated";
    let of_uri = |m: &Value| m["params"]["uri"] == uri;
    if let Some(at) = b.seen.iter().position(is_update) {
        let update = b.seen.remove(at);
        assert!(of_uri(&update), "an update nobody subscribed to: {update}");
        return update;
    }
    loop {
        let message = b.next();
        if is_update(&message) {
            assert!(
                of_uri(&message),
                "an update nobody subscribed to: {message}"
            );
            return message;
        }
    }
}

/// The URI of the first resource `server` lists behind the bridge.
fn first_uri_of(b: &mut Bridge, id: i64, prefix: &str) -> String {
    let list = b.request(id, "resources/list", json!({}));
    list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .find(|u| u.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} resource: {list}"))
        .to_owned()
}

#[test]
fn a_subscription_reaches_the_server_that_owns_its_uri_and_only_its_updates_come_back() {
    let everything: Vec<String> = common::servers::everything_stdio();
    let (mut b, _file) = bridge(
        "subscribe",
        json!({
            "docs": fixture("read-only", &[]),
            "ev": {"command": everything[0], "args": everything[1..]},
        }),
        &["--trace"],
    );
    let init = b.initialize(V, json!({}));
    // One server behind takes subscriptions (server-everything): the bridge does.
    assert_eq!(
        init["result"]["capabilities"]["resources"],
        json!({"listChanged": true, "subscribe": true}),
        "{init}"
    );
    // docs did not declare resources.subscribe: refused here, with the server and why,
    // and nothing is sent to it.
    let refused = b.request(
        1,
        "resources/subscribe",
        json!({"uri": "docs://manual/current"}),
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        message.contains("\"docs\"") && message.contains("resources.subscribe"),
        "{refused}"
    );
    assert_eq!(refused["error"]["data"]["server"], "docs", "{refused}");
    b.audit_until(|l| {
        l["event"] == "notice"
            && l["server"] == "docs"
            && l["notice"]
                .as_str()
                .unwrap_or("")
                .contains("resources.subscribe")
    });
    assert_eq!(b.sent_upstream_count("resources/subscribe"), 0);
    let nowhere = b.request(2, "resources/subscribe", json!({"uri": "nowhere://x"}));
    assert_eq!(nowhere["error"]["code"], -32602, "{nowhere}");

    // A URI of ev's: subscribed there, and its updates reach the host.
    let uri = first_uri_of(&mut b, 3, "demo://");
    // Answered once ev took it (the ping sent after it is answered first).
    let [first, ok] = with_a_ping(&mut b, 4, "resources/subscribe", &uri);
    assert_eq!(first["id"], 5, "{first} {ok}");
    assert_eq!(ok["result"], json!({}), "{ok}");
    b.until_sent_upstream("resources/subscribe");
    let sent: Vec<Value> = b
        .sent_upstream()
        .into_iter()
        .filter(|m| m["method"] == "resources/subscribe")
        .collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["params"]["uri"], uri.as_str());
    // server-everything sends an update of each subscribed URI once this is on.
    let toggle = b.request(
        6,
        "tools/call",
        json!({"name": "ev/toggle-subscriber-updates", "arguments": {}}),
    );
    assert!(toggle.get("result").is_some(), "{toggle}");
    updated(&mut b, &uri);

    // Unsubscribed: undone at ev.
    let [first, off] = with_a_ping(&mut b, 7, "resources/unsubscribe", &uri);
    assert_eq!(first["id"], 8, "{first} {off}");
    assert_eq!(off["result"], json!({}), "{off}");
    b.until_sent_upstream("resources/unsubscribe");
    assert_eq!(b.close(), Some(0));
}

#[test]
fn a_server_that_crashed_is_subscribed_again_once_it_is_back() {
    // live exits in the middle of its answer to a read; the host restarts it.
    let (mut b, _file) = bridge(
        "resubscribe",
        json!({"live": fixture("subscribe", &["--update-interval", "200ms", "--fault", "exit-mid-answer"])}),
        &["--trace"],
    );
    b.initialize(V, json!({}));
    const MANUAL: &str = "docs://manual/current";
    let ok = b.request(1, "resources/subscribe", json!({"uri": MANUAL}));
    assert_eq!(ok["result"], json!({}), "{ok}");
    updated(&mut b, MANUAL);
    let crashed = b.request(2, "resources/read", json!({"uri": MANUAL}));
    assert!(crashed.get("error").is_some(), "{crashed}");
    b.audit_until(|l| l["server"] == "live" && l["state"] == "restarting");
    b.audit_count_until(2, |l| l["server"] == "live" && l["state"] == "ready");
    // Asked again by the bridge, not the host; the updates come again.
    let until = Instant::now() + bridge_support::ANSWER;
    while b.sent_upstream_count("resources/subscribe") < 2 {
        assert!(Instant::now() < until, "{}", b.stderr_text());
        std::thread::sleep(Duration::from_millis(20));
    }
    b.seen.clear();
    updated(&mut b, MANUAL);
    assert_eq!(b.sent_upstream_count("resources/subscribe"), 2);
}

#[test]
fn a_2026_host_listens_to_a_uri_at_a_legacy_and_at_a_2026_server() {
    const MANUAL: &str = "docs://manual/current";
    for profile in ["subscribe", "modern"] {
        let (mut b, _file) = bridge(
            &format!("listen-{profile}"),
            json!({"live": fixture(profile, &["--update-interval", "200ms"])}),
            &["--trace"],
        );
        b.version = ProtocolVersion::V2026_07_28;
        let mut meta = json!({});
        meta["_meta"] = Bridge::meta(json!({}));
        let discover = b.request(1, "server/discover", meta);
        assert_eq!(
            discover["result"]["capabilities"]["resources"]["subscribe"], true,
            "{discover}"
        );
        let mut listen = json!({"notifications": {"resourceSubscriptions": [MANUAL]}});
        listen["_meta"] = Bridge::meta(json!({}));
        b.send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": listen}),
        );
        let ack = b.next();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        let update = updated(&mut b, MANUAL);
        bridge_support::assert_listened_update(&update, 2);
        // Asked of the server in its era.
        let (asked, other) = match profile {
            "modern" => ("subscriptions/listen", "resources/subscribe"),
            _ => ("resources/subscribe", "subscriptions/listen"),
        };
        assert!(b
            .sent_upstream()
            .iter()
            .any(|m| m["method"] == asked && m.to_string().contains(MANUAL)));
        assert!(!b
            .sent_upstream()
            .iter()
            .any(|m| m["method"] == other && m.to_string().contains(MANUAL)));
        // The host ends its stream: the server's subscription ends too.
        b.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}));
        let ended = match profile {
            "modern" => "notifications/cancelled",
            _ => "resources/unsubscribe",
        };
        b.until_sent_upstream(ended);
    }
}

#[test]
fn a_2026_hosts_listen_is_acknowledged_without_a_uri_whose_server_takes_no_subscriptions() {
    let everything: Vec<String> = common::servers::everything_stdio();
    let (mut b, _file) = bridge(
        "listen-refused",
        json!({
            "docs": fixture("read-only", &[]),
            "ev": {"command": everything[0], "args": everything[1..]},
        }),
        &["--trace"],
    );
    b.version = ProtocolVersion::V2026_07_28;
    let mut meta = json!({});
    meta["_meta"] = Bridge::meta(json!({}));
    let list = b.request(1, "resources/list", meta);
    let demo = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .find(|u| u.starts_with("demo://"))
        .unwrap_or_else(|| panic!("no demo:// resource: {list}"))
        .to_owned();
    let docs = "docs://manual/current";
    let mut listen = json!({"notifications": {"resourceSubscriptions": [docs, demo]}});
    listen["_meta"] = Bridge::meta(json!({}));
    b.send(json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": listen}));
    // The acknowledgement honours ev's URI alone: docs did not declare
    // resources.subscribe. A notice names the URI left out; nothing is sent for it.
    let ack = b.next();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": [demo]})
    );
    b.until_sent_upstream("resources/subscribe");
    b.audit_until(|l| {
        l["event"] == "notice"
            && l["side"] == "host"
            && l["notice"].as_str().unwrap_or("").contains(docs)
    });
    let asked: Vec<Value> = b
        .sent_upstream()
        .into_iter()
        .filter(|m| m["method"] == "resources/subscribe")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["params"]["uri"], demo.as_str());
    // ev's updates reach the host's stream.
    let mut toggle = json!({"name": "ev/toggle-subscriber-updates", "arguments": {}});
    toggle["_meta"] = Bridge::meta(json!({}));
    let toggled = b.request(3, "tools/call", toggle);
    assert!(toggled.get("result").is_some(), "{toggled}");
    bridge_support::assert_listened_update(&updated(&mut b, &demo), 2);
}

/// Sends `method` of `uri` (request 1) and a ping (request 2) in one write, and returns
/// the two answers in the order they came. The bridge answers a ping itself at once: a
/// request answered after it waited for something (the server).
fn with_a_ping(b: &mut Bridge, id: i64, method: &str, uri: &str) -> [Value; 2] {
    let asked = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"uri": uri}});
    let ping = json!({"jsonrpc": "2.0", "id": id + 1, "method": "ping"});
    b.send_line(&format!("{asked}\n{ping}"));
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let message = b.next();
        match message.get("method") {
            None => answers.push(message),
            Some(_) => b.seen.push(message),
        }
    }
    [answers.remove(0), answers.remove(0)]
}

#[test]
fn a_subscription_is_answered_once_its_server_took_it() {
    const MANUAL: &str = "docs://manual/current";
    const ARCHIVE: &str = "docs://manual/archive";
    for profile in ["subscribe", "modern"] {
        let (mut b, _file) = bridge(
            &format!("answered-{profile}"),
            json!({"live": fixture(profile, &["--update-interval", "200ms"])}),
            &["--trace"],
        );
        b.initialize(V, json!({}));
        let asked = match profile {
            "modern" => "subscriptions/listen",
            _ => "resources/subscribe",
        };
        // The ping is answered first: the subscribe waits for the server (a legacy
        // server's answer, a 2026-07-28 server's acknowledgement of its listen stream).
        let [first, ok] = with_a_ping(&mut b, 1, "resources/subscribe", MANUAL);
        assert_eq!(first["id"], 2, "{first} {ok}");
        assert_eq!(ok["id"], 1);
        assert_eq!(ok["result"], json!({}), "{ok}");
        // (The bridge's own listen stream for list changes is there too.)
        let asked_for_it = |b: &Bridge| {
            b.sent_upstream()
                .iter()
                .filter(|m| m["method"] == asked && m.to_string().contains(MANUAL))
                .count()
        };
        let until = Instant::now() + bridge_support::ANSWER;
        while asked_for_it(&b) == 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(asked_for_it(&b), 1, "{profile}: {}", b.stderr_text());
        updated(&mut b, MANUAL);
        let also = b.request(3, "resources/subscribe", json!({"uri": ARCHIVE}));
        assert_eq!(also["result"], json!({}), "{also}");
        // Unsubscribed likewise: answered once the server undid it (a 2026-07-28
        // server's stream opened again with the other URI alone, and acknowledged).
        let [first, off] = with_a_ping(&mut b, 4, "resources/unsubscribe", MANUAL);
        assert_eq!(first["id"], 5, "{first} {off}");
        assert_eq!(off["result"], json!({}), "{off}");
        let undone = |m: &Value| match profile {
            "modern" => {
                let filter = &m["params"]["notifications"]["resourceSubscriptions"];
                m["method"] == asked && *filter == json!([ARCHIVE])
            }
            _ => m["method"] == "resources/unsubscribe" && m["params"]["uri"] == MANUAL,
        };
        // (`--trace` is read off stderr on a thread of its own.)
        let until = Instant::now() + bridge_support::ANSWER;
        while !b.sent_upstream().iter().any(undone) {
            assert!(Instant::now() < until, "{}", b.stderr_text());
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(b.close(), Some(0));
    }
}

#[test]
fn a_subscription_its_server_refuses_is_refused_to_the_host_with_the_violation() {
    const MANUAL: &str = "docs://manual/current";
    let (mut b, _file) = bridge(
        "refused",
        json!({"liar": fixture("lying-subscribe", &["--update-interval", "200ms"])}),
        &["--trace"],
    );
    let init = b.initialize(V, json!({}));
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        true
    );
    // liar declared resources.subscribe and answers -32601: the host gets the
    // violation as its answer, and the audit has it.
    let refused = b.request(1, "resources/subscribe", json!({"uri": MANUAL}));
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    assert_eq!(refused["error"]["data"]["kind"], "contract_violation");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("contract violation") && message.contains("resources/subscribe"),
        "{refused}"
    );
    let violation = b.audit_until(|l| l["event"] == "violation" && l["server"] == "liar");
    assert_eq!(violation["method"], "resources/subscribe", "{violation}");
    b.audit_until(|l| l["event"] == "subscribe_failed" && l["server"] == "liar");
    // The host holds no subscription: asked again, it is refused by the bridge's
    // session, which no longer asks what the server broke.
    let again = b.request(2, "resources/subscribe", json!({"uri": MANUAL}));
    assert_eq!(again["error"]["code"], -32601, "{again}");
    assert_eq!(again["error"]["data"]["kind"], "capability_not_offered");
    assert_eq!(b.close(), Some(0));
}
