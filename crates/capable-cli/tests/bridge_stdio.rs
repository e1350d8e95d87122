//! `capable bridge -- CMD` in front of the fixture's profiles, spoken to as a host
//! would: what the host is offered is exactly what the server declared; what the
//! server did not declare never reaches it; progress, cancellation and questions go
//! both ways under each side's own ids; violations and crashes are told (to the host as
//! JSON-RPC errors, on stderr as audit lines); a host that leaves ends everything.
//! Every message the bridge writes is validated as a server message of the host's
//! version.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use std::time::Duration;

use bridge_support::{wait_gone, Bridge};
use capable::internal::ProtocolVersion;
use capable_test_support::assert_valid_result;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// `capable bridge [FLAGS] -- capable fixture --profile P`.
fn bridge(flags: &[&str], profile: &str) -> Bridge {
    let server = common::fixture(profile);
    let mut args: Vec<&str> = flags.to_vec();
    args.push("--");
    args.extend(server.iter().map(String::as_str));
    Bridge::start(&args)
}

#[test]
fn the_host_is_offered_exactly_what_the_server_declared_and_nothing_else_reaches_it() {
    let mut b = bridge(&["--trace"], "read-only");
    let answer = b.initialize(ProtocolVersion::V2025_06_18, json!({}));
    assert_valid_result(b.version, "InitializeResult", &answer);
    let result = &answer["result"];
    assert_eq!(
        result["protocolVersion"], "2025-06-18",
        "the host's version"
    );
    assert_eq!(result["capabilities"], json!({"resources": {}}));
    assert_eq!(result["serverInfo"]["name"], "capable-fixture/read-only");
    let read = b.request(1, "resources/read", json!({"uri": "docs://manual/current"}));
    assert_valid_result(b.version, "ReadResourceResult", &read);
    assert!(read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Acceptance instructions"));
    // Not declared: refused by the bridge, never sent on.
    for (id, method) in [
        (2, "resources/subscribe"),
        (3, "tools/list"),
        (4, "prompts/list"),
    ] {
        let refused = b.request(id, method, json!({"uri": "docs://manual/current"}));
        assert_eq!(refused["error"]["code"], -32601, "{refused}");
    }
    let upstream: Vec<String> = b
        .sent_upstream()
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        upstream,
        ["initialize", "notifications/initialized", "resources/read"],
        "the server behind proposed the host's version first and got nothing undeclared"
    );
    assert_eq!(
        b.sent_upstream()[0]["params"]["protocolVersion"],
        "2025-06-18"
    );
    let refusals = b.audit_count_until(3, |l| l["side"] == "host");
    assert_eq!(refusals, 3, "{}", b.stderr_text());
    assert_eq!(b.close(), Some(0));
}

#[test]
fn a_burst_of_requests_in_one_write_is_answered_each_once() {
    // The bridge takes in every line a read brought before it writes: none may be
    // left behind, answered twice, or sent on twice.
    let mut b = bridge(&["--trace"], "read-only");
    b.initialize(V, json!({}));
    const BURST: i64 = 64;
    let burst: Vec<String> = (1..=BURST)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                "params": {"uri": "docs://manual/current"}})
            .to_string()
        })
        .collect();
    b.send_line(&burst.join("\n"));
    let mut answered: Vec<i64> = (1..=BURST)
        .map(|_| {
            let answer = b.next();
            assert_valid_result(b.version, "ReadResourceResult", &answer);
            answer["id"].as_i64().expect("an answer to a request")
        })
        .collect();
    answered.sort_unstable();
    assert_eq!(answered, (1..=BURST).collect::<Vec<_>>());
    assert_eq!(b.sent_upstream_count("resources/read"), BURST as usize);
    assert_eq!(b.close(), Some(0));
}

#[test]
fn unreadable_lines_are_answered_as_json_rpc_says_and_batches_taken_only_in_2025_03_26() {
    let mut b = bridge(&[], "read-only");
    b.initialize(V, json!({}));
    b.send_line("{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth");
    let not_json = b.next();
    assert_eq!(not_json["error"]["code"], -32700, "{not_json}");
    assert!(not_json.get("id").is_none(), "{not_json}");
    b.send_line(r#"{"jsonrpc": "2.0", "id": 2, "method": 7}"#);
    assert_eq!(b.answer(2)["error"]["code"], -32600);
    // Batches went with 2025-03-26.
    b.send_line(r#"[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]"#);
    assert_eq!(b.next()["error"]["code"], -32600);
    let read = b.request(4, "resources/read", json!({"uri": "docs://manual/current"}));
    assert!(read["result"]["contents"].is_array(), "{read}");
    assert_eq!(b.close(), Some(0));

    // A 2025-03-26 host may batch: each message is answered.
    let mut b = bridge(&[], "read-only");
    b.initialize(ProtocolVersion::V2025_03_26, json!({}));
    b.send(json!([
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "docs://manual/current"}},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    ]));
    let mut answers = [b.next(), b.next()];
    answers.sort_by_key(|a| a["id"].as_i64());
    assert!(answers[0]["result"]["contents"].is_array(), "{answers:?}");
    assert_eq!(answers[1]["result"], json!({}));
    assert_eq!(b.close(), Some(0));
}

#[test]
fn a_server_that_breaks_its_declaration_is_a_violation_once_then_refused_locally() {
    let mut b = bridge(&["--trace"], "lying-subscribe");
    b.initialize(V, json!({}));
    let first = b.request(
        1,
        "resources/subscribe",
        json!({"uri": "docs://manual/current"}),
    );
    assert_eq!(first["error"]["code"], -32601, "{first}");
    assert_eq!(first["error"]["data"]["kind"], "contract_violation");
    // The message names the violation: the declaration and the method it broke.
    let message = first["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("contract violation") && message.contains("resources/subscribe"),
        "{first}"
    );
    let violation = b.audit_until(|l| l["event"] == "violation");
    assert_eq!(violation["method"], "resources/subscribe", "{violation}");
    let second = b.request(
        2,
        "resources/subscribe",
        json!({"uri": "docs://manual/current"}),
    );
    assert_eq!(second["error"]["code"], -32601, "{second}");
    assert_eq!(second["error"]["data"]["kind"], "capability_not_offered");
    assert_eq!(
        b.sent_upstream_count("resources/subscribe"),
        1,
        "the second was refused by the bridge"
    );
}

#[test]
fn progress_reaches_the_host_under_its_token_and_a_cancel_reaches_the_server() {
    let mut b = bridge(&["--trace"], "slow-progress");
    b.initialize(V, json!({}));
    let call = b.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"}, "_meta": {"progressToken": "host-7"}}),
    );
    assert_valid_result(b.version, "CallToolResult", &call);
    let progress: Vec<&Value> = b
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 7, "{:?}", b.seen);
    assert!(progress
        .iter()
        .all(|p| p["params"]["progressToken"] == "host-7"));
    assert_eq!(progress[6]["params"]["progress"], 7);

    // A call the host gives up: cancelled at the server, never answered.
    b.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "slow"}}}));
    std::thread::sleep(Duration::from_millis(200));
    b.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user gave up"}}),
    );
    assert_eq!(
        b.next_within(Duration::from_millis(2500)),
        None,
        "never answered"
    );
    let cancelled = b
        .sent_upstream()
        .into_iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no cancellation upstream\n{}", b.stderr_text()));
    let call_id = b
        .sent_upstream()
        .into_iter()
        .rfind(|m| m["method"] == "tools/call")
        .unwrap()["id"]
        .clone();
    assert_eq!(
        cancelled["params"]["requestId"], call_id,
        "under the bridge's own id"
    );
}

#[test]
fn the_servers_question_is_put_to_a_host_that_declared_it_and_its_answer_goes_back() {
    let mut b = bridge(&[], "elicit");
    b.initialize(V, json!({"elicitation": {}}));
    b.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "confirm"}}),
    );
    let ask = b.next();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Confirm the acceptance run?");
    b.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"approve": true}}}));
    let call = b.answer(1);
    let text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(text, r#"confirmed: action=accept content={"approve":true}"#);

    // A question the server withdraws is withdrawn from the host too.
    b.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "confirm", "arguments": {"giveUpAfterMs": 100}}}));
    let ask = b.next();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(b.answer(2)["result"]["isError"], true);
    // The call's answer and the cancellation are on their ways at once.
    let withdrawn = match b.seen.pop() {
        Some(seen) => seen,
        None => b.next(),
    };
    assert_eq!(
        withdrawn["method"], "notifications/cancelled",
        "{withdrawn}"
    );
    assert_eq!(withdrawn["params"]["requestId"], ask["id"]);

    // A host that did not declare elicitation is never asked.
    let mut b = bridge(&[], "elicit");
    b.initialize(V, json!({}));
    let call = b.request(1, "tools/call", json!({"name": "confirm"}));
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert!(b.seen.is_empty(), "{:?}", b.seen);
}

#[test]
fn a_modern_host_lists_and_listens_at_a_modern_server() {
    let mut b = bridge(&[], "modern");
    b.version = MODERN;
    let meta = Bridge::meta(json!({}));
    let discover = b.request(1, "server/discover", json!({"_meta": meta}));
    assert_valid_result(MODERN, "DiscoverResult", &discover);
    assert_eq!(
        discover["result"]["capabilities"],
        json!({"resources": {"subscribe": true, "listChanged": true}, "tools": {}})
    );
    let list = b.request(2, "resources/list", json!({"_meta": meta}));
    assert_valid_result(MODERN, "ListResourcesResult", &list);
    b.send(json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": {"_meta": meta,
        "notifications": {"resourceSubscriptions": ["docs://manual/current"], "toolsListChanged": true}}}));
    let ack = b.next();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // tools.listChanged was not declared: not honoured.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["docs://manual/current"]})
    );
    bridge_support::assert_listened_update(&b.next(), 3);
    // A request without the envelope is refused by the bridge.
    let bare = b.request(4, "resources/list", json!({}));
    assert_eq!(bare["error"]["code"], -32602);
}

#[test]
fn a_malformed_answer_of_the_server_is_an_error_for_the_host_and_a_line_of_the_audit() {
    let mut server = vec!["--".to_owned()];
    server.extend(common::fixture("read-only"));
    server.extend(["--fault".to_owned(), "truncated-answer".to_owned()]);
    let mut b = Bridge::start(&server.iter().map(String::as_str).collect::<Vec<_>>());
    b.initialize(V, json!({}));
    let failed = b.request(1, "resources/read", json!({"uri": "docs://manual/current"}));
    assert_eq!(
        failed["error"]["data"]["kind"], "contract_violation",
        "{failed}"
    );
    let line = b.audit_until(|l| l["event"] == "malformed");
    assert_eq!(line["method"], "resources/read", "{line}");
    assert!(
        line["what"].as_str().unwrap().contains("malformed"),
        "{line}"
    );
    assert!(line["server"].as_str().is_some(), "{line}");
}

#[test]
fn a_server_that_crashes_mid_call_fails_that_call_and_the_host_is_told_why() {
    let mut b = bridge(&[], "crash");
    b.initialize(V, json!({}));
    let pid = b.server_pid();
    let failed = b.request(1, "resources/read", json!({"uri": "docs://manual/current"}));
    assert_eq!(failed["error"]["code"], -32001, "{failed}");
    assert_eq!(failed["error"]["data"]["kind"], "server_exited");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exit code 3"),
        "{failed}"
    );
    b.audit_until(|l| l["state"] == "closed");
    wait_gone(pid);
}

#[test]
fn a_server_that_hangs_times_out_for_the_host_and_hears_the_cancellation() {
    let mut b = bridge(&["--trace", "--timeout", "300ms"], "hang");
    b.initialize(V, json!({}));
    let failed = b.request(1, "resources/read", json!({"uri": "docs://manual/current"}));
    assert_eq!(failed["error"]["data"]["kind"], "timeout", "{failed}");
    b.until_sent_upstream("notifications/cancelled");
    // The bridge goes on.
    assert_eq!(b.request(2, "ping", json!({}))["result"], json!({}));
    assert_eq!(b.close(), Some(0));
}

#[test]
fn a_host_that_leaves_ends_the_bridge_and_its_server() {
    let log = common::TempFile::new("bridge-audit.jsonl", "");
    let mut b = bridge(&["--audit-log", log.path()], "hang");
    b.initialize(V, json!({}));
    let pid = b.server_pid();
    // A read the server never answers is in flight when the host leaves.
    b.send(json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "docs://manual/current"}}));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(b.close(), Some(0));
    wait_gone(pid);
    let kept = std::fs::read_to_string(&log.0).unwrap();
    let states: Vec<String> = kept
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["state"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(states, ["starting", "ready", "stopped"], "{kept}");
}

#[test]
fn a_server_that_cannot_start_is_an_error_for_the_host_and_the_next_request_tries_again() {
    let mut b = Bridge::start(&["--", "/nonexistent/server"]);
    let failed = b.request(
        0,
        "initialize",
        json!({"protocolVersion": V.as_str(), "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}),
    );
    assert_eq!(failed["error"]["code"], -32001, "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/server"),
        "{failed}"
    );
    // Before a hello, a ping is answered and anything else refused.
    assert_eq!(b.request(1, "ping", json!({}))["result"], json!({}));
    assert_eq!(
        b.request(2, "tools/list", json!({}))["error"]["code"],
        -32602
    );
    let again = b.request(3, "initialize", json!({"protocolVersion": V.as_str(), "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}));
    assert_eq!(again["error"]["code"], -32001);
    let starts = b.audit_count_until(2, |l| l["state"] == "starting");
    assert_eq!(starts, 2, "{}", b.stderr_text());
}

#[test]
fn a_server_that_crashes_is_started_again_and_the_host_goes_on() {
    let server = [
        "--".to_owned(),
        common::bin().to_owned(),
        "fixture".into(),
        "--profile".into(),
        "crash-soon".into(),
        "--update-interval".into(),
        "2s".into(),
    ];
    let mut b = Bridge::start(&server.iter().map(String::as_str).collect::<Vec<_>>());
    b.initialize(V, json!({}));
    let first = b.server_pid();
    assert_eq!(
        b.request(1, "tools/list", json!({}))["result"]["tools"][0]["name"],
        "echo"
    );
    let restarting = b.audit_until(|l| l["state"] == "restarting");
    assert_eq!(restarting["attempt"], 1, "{restarting}");
    wait_gone(first);
    let again = b.audit_until(|l| l["state"] == "ready" && l["pid"] != first);
    // The host's session with the bridge went on: the same host, a new server.
    let call = b.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "again"}}),
    );
    assert_eq!(
        call["result"]["content"][0]["text"], "again",
        "{call}\n{again}"
    );
    assert_eq!(b.close(), Some(0));
    wait_gone(again["pid"].as_u64().unwrap() as u32);
}

#[test]
fn a_server_of_a_config_is_bridged_by_its_name() {
    let config = json!({"mcpServers": {"docs": {"command": common::bin(),
        "args": ["fixture", "--profile", "read-only"]}}});
    let file = common::TempFile::new("bridge-config.json", &config.to_string());
    let mut b = Bridge::start(&["--config", file.path(), "--server", "docs"]);
    let answer = b.initialize(V, json!({}));
    assert_eq!(
        answer["result"]["serverInfo"]["name"],
        "capable-fixture/read-only"
    );
    let ready = b.audit_until(|l| l["state"] == "ready");
    assert_eq!(ready["server"], "docs");
    assert_eq!(b.close(), Some(0));
}

/// A server that floods its host with notifications it never declared: the audit
/// writes the first of them and then one `suppressed` line that counts the rest, not
/// 5,000 lines; the host sees none of them, and is served on.
#[test]
fn a_flood_of_withheld_notifications_is_summarised_in_the_audit() {
    let mut server = vec!["--".to_owned()];
    server.extend(common::fixture("read-only"));
    server.extend(["--fault".to_owned(), "flood-undeclared".to_owned()]);
    let mut b = Bridge::start(&server.iter().map(String::as_str).collect::<Vec<_>>());
    b.initialize(V, json!({}));
    // The flood came before this answer, in the server's order.
    let read = b.request(2, "resources/read", json!({"uri": "docs://manual/current"}));
    assert!(read["result"]["contents"].is_array(), "{read}");
    assert!(
        b.seen
            .iter()
            .all(|m| m["method"] != "notifications/tools/list_changed"),
        "an undeclared notification reached the host"
    );
    // The audit's lines of the flood: each undeclared notification is a notice of the
    // server's (or a withheld line).
    let withheld = |text: &str| {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["event"] == "withheld" || l["event"] == "notice")
            .filter(|l| l.to_string().contains("tools/list_changed"))
            .count()
    };
    let written = withheld(&b.stderr_text());
    assert!((1..=20).contains(&written), "{}", b.stderr_text());
    let (code, stderr) = b.close_with_stderr();
    assert_eq!(code, Some(0));
    let suppressed: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["event"] == "suppressed")
        .collect();
    let held: u64 = suppressed.iter().filter_map(|l| l["count"].as_u64()).sum();
    assert_eq!(held + withheld(&stderr) as u64, 5_000, "{suppressed:?}");
    assert!(suppressed[0]["first"].is_string() && suppressed[0]["last"].is_string());
}

/// A notification the protocol does not define (a server's own `x/custom`) reaches the
/// host only when `--pass-notification` names it: by default it is withheld, and the
/// audit says so.
#[test]
fn a_servers_own_notifications_reach_the_host_only_when_passed() {
    let start = |flags: &[&str]| {
        let mut args: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        args.push("--".into());
        args.extend(common::fixture("read-only"));
        args.extend(["--fault".to_owned(), "custom-notification".to_owned()]);
        let mut b = Bridge::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
        // The server sends its own after `initialized`.
        b.initialize(V, json!({}));
        b
    };
    let b = start(&[]);
    let withheld = b.audit_until(|l| l["event"] == "withheld" && l["method"] == "x/custom");
    let why = withheld["why"].as_str().unwrap();
    assert!(
        why.contains("no notification of the protocol"),
        "{withheld}"
    );
    assert!(b.seen.iter().all(|m| m["method"] != "x/custom"));
    // Passed: the host gets it as the server sent it.
    let mut b = start(&["--pass-notification", "x/*"]);
    let passed = b
        .next_unchecked_within(bridge_support::ANSWER)
        .expect("the server's own notification");
    assert_eq!(passed["method"], "x/custom", "{passed}");
    assert_eq!(passed["params"], json!({"n": 1}));
}
