//! `capable bridge` between the eras: a legacy host in front of a 2026-07-28 server, and
//! a 2026-07-28 host in front of a legacy one. Subscriptions become listen streams and
//! back, a server's questions become `input_required` rounds and back, log levels and
//! results are carried over (tasks: `bridge_tasks.rs`); what the host sees is what the
//! server declared, as the host's version defines it. Every message the bridge writes
//! is validated as a server message of the host's version, and each answer against its
//! result's definition.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use bridge_support::Bridge;
use capable::internal::ProtocolVersion;
use capable_test_support::assert_valid_result;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
const MANUAL: &str = "docs://manual/current";

fn bridge(profile: &str) -> Bridge {
    Bridge::before_fixture(&[], profile)
}

/// A 2026-07-28 host that declares elicitation calls `confirm` with `arguments`: the
/// round it gets.
fn confirm_round(b: &mut Bridge, arguments: Value) -> Value {
    b.version = MODERN;
    let call = json!({"name": "confirm", "arguments": arguments});
    let first = modern(b, 1, "tools/call", call, json!({"elicitation": {}}));
    assert_valid_result(MODERN, "InputRequiredResult", &first);
    first
}

/// A request of a 2026-07-28 host declaring `capabilities`, with its envelope.
fn modern(b: &mut Bridge, id: i64, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = Bridge::meta(capabilities);
    b.request(id, method, params)
}

#[test]
fn a_legacy_host_subscribes_and_is_asked_at_a_2026_server() {
    let mut b = bridge("modern");
    let answer = b.initialize(V, json!({"elicitation": {}}));
    assert_eq!(answer["result"]["protocolVersion"], V.as_str());
    assert_eq!(
        answer["result"]["capabilities"],
        json!({"resources": {"subscribe": true, "listChanged": true}, "tools": {}})
    );
    assert_eq!(b.request(1, "ping", json!({}))["result"], json!({}));
    let read = b.request(2, "resources/read", json!({"uri": MANUAL}));
    assert_valid_result(V, "ReadResourceResult", &read);

    // A subscription, kept open at the server as a listen stream.
    let sub = b.request(3, "resources/subscribe", json!({"uri": MANUAL}));
    assert_valid_result(V, "EmptyResult", &sub);
    let update = b.next();
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(update["params"]["uri"], MANUAL);
    assert!(
        update["params"].get("_meta").is_none(),
        "no stream id for a legacy host"
    );
    // The first stream, opened at the handshake, asked for list changes; the one that
    // replaced it asks for the URI too.
    let listens: Vec<Value> = b
        .sent_upstream()
        .into_iter()
        .filter(|m| m["method"] == "subscriptions/listen")
        .map(|m| m["params"]["notifications"].clone())
        .collect();
    assert_eq!(
        listens,
        [
            json!({"resourcesListChanged": true}),
            json!({"resourcesListChanged": true, "resourceSubscriptions": [MANUAL]})
        ]
    );
    assert_eq!(b.sent_upstream_count("resources/subscribe"), 0);

    // The server's input_required round: a request to the host, then the retry.
    b.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "confirm"}}),
    );
    let ask = loop {
        let m = b.next();
        if m["method"] == "elicitation/create" {
            break m;
        }
    };
    b.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"approve": true}}}));
    let call = b.answer(4);
    assert_valid_result(V, "CallToolResult", &call);
    assert_eq!(
        call["result"]["content"][0]["text"],
        r#"confirmed: action=accept content={"approve":true}"#
    );
    assert_eq!(
        b.sent_upstream_count("tools/call"),
        2,
        "the call and its retry"
    );
}

#[test]
fn a_2026_host_listens_and_reads_at_a_legacy_server() {
    let mut b = bridge("subscribe");
    b.version = MODERN;
    let discover = modern(&mut b, 1, "server/discover", json!({}), json!({}));
    assert_valid_result(MODERN, "DiscoverResult", &discover);
    assert_eq!(
        discover["result"]["capabilities"],
        json!({"resources": {"subscribe": true}})
    );
    // A legacy answer, as a 2026-07-28 result: resultType and caching hints added.
    let read = modern(
        &mut b,
        2,
        "resources/read",
        json!({"uri": MANUAL}),
        json!({}),
    );
    assert_valid_result(MODERN, "ReadResourceResult", &read);
    assert_eq!(read["result"]["resultType"], "complete");
    assert_eq!(read["result"]["ttlMs"], 0);
    let list = modern(&mut b, 3, "resources/list", json!({}), json!({}));
    assert_valid_result(MODERN, "ListResourcesResult", &list);

    // A listen stream, kept open at the server as subscriptions.
    let mut listen = json!({"notifications": {"resourceSubscriptions": [MANUAL]}});
    listen["_meta"] = Bridge::meta(json!({}));
    b.send(json!({"jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen", "params": listen}));
    let ack = b.next();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    bridge_support::assert_listened_update(&b.next(), 4);
    assert_eq!(b.sent_upstream_count("resources/subscribe"), 1);
    // The host ends its stream: the server's subscription ends too.
    b.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}),
    );
    b.until_sent_upstream("resources/unsubscribe");
}

#[test]
fn answers_to_no_round_are_refused_not_passed_to_a_legacy_server() {
    let mut b = bridge("elicit");
    let caps = json!({"elicitation": {}});
    for answers in [json!(7), json!(null), json!({"q": {"action": "accept"}})] {
        let params = json!({"name": "confirm", "inputResponses": answers});
        let refused = modern(&mut b, 3, "tools/call", params, caps.clone());
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }
    assert_eq!(b.sent_upstream_count("tools/call"), 0);
}

#[test]
fn a_legacy_servers_question_reaches_a_2026_host_as_an_input_required_round() {
    let mut b = bridge("elicit");
    let caps = json!({"elicitation": {}});
    let first = confirm_round(&mut b, json!({}));
    let question = &first["result"]["inputRequests"]["elicitation-1"];
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert_eq!(question["params"]["message"], "Confirm the acceptance run?");
    let state = first["result"]["requestState"].clone();
    let answers = json!({"elicitation-1": {"action": "accept", "content": {"approve": true}}});
    // A retry is the same call: other arguments are another request's, refused, and
    // the round stays open for the real retry.
    let other = json!({"name": "confirm", "arguments": {"giveUpAfterMs": 1},
        "requestState": state, "inputResponses": answers});
    let refused = modern(&mut b, 5, "tools/call", other, caps.clone());
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("another request"), "{message}");
    let retry = json!({"name": "confirm", "requestState": state, "inputResponses": answers});
    let done = modern(&mut b, 2, "tools/call", retry.clone(), caps.clone());
    assert_valid_result(MODERN, "CallToolResult", &done);
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"confirmed: action=accept content={"approve":true}"#
    );
    // One call reached the server; the retry only carried the answer.
    assert_eq!(b.sent_upstream_count("tools/call"), 1);
    // The same retry again: its round is spent; refused, never passed to the server.
    let again = modern(&mut b, 4, "tools/call", retry, caps);
    assert_eq!(again["error"]["code"], -32602, "{again}");
    assert_eq!(b.sent_upstream_count("tools/call"), 1);

    // A host that did not declare elicitation is not asked: the server hears so.
    let plain = modern(
        &mut b,
        3,
        "tools/call",
        json!({"name": "confirm"}),
        json!({}),
    );
    assert_eq!(plain["result"]["isError"], true, "{plain}");
}

#[test]
fn a_2026_hosts_log_level_reaches_a_legacy_server_as_set_level() {
    if !common::peers_wanted(&[common::servers::EVERYTHING_JS]) {
        return;
    }
    let server = common::servers::everything_stdio();
    let mut args = vec!["--trace", "--"];
    args.extend(server.iter().map(String::as_str));
    let mut b = Bridge::start(&args);
    b.version = MODERN;
    let discover = modern(&mut b, 1, "server/discover", json!({}), json!({}));
    let caps = &discover["result"]["capabilities"];
    assert!(
        caps.get("logging").is_some() && caps.get("tasks").is_none(),
        "{caps}"
    );
    let mut params = json!({"name": "echo", "arguments": {"message": "logged"}});
    params["_meta"] = Bridge::meta(json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let call = b.request(2, "tools/call", params);
    assert_valid_result(MODERN, "CallToolResult", &call);
    let set = b.first_sent_upstream("logging/setLevel");
    assert_eq!(set["params"]["level"], "debug");
}

/// Waits until the bridge sent the server behind a message that is `what` (`want`).
#[track_caller]
fn until_sent(b: &Bridge, what: &str, want: impl Fn(&Value) -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !b.sent_upstream().iter().any(&want) {
        assert!(
            std::time::Instant::now() < until,
            "{what} never reached the server"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Asserts the server behind heard that the (one) `tools/call` sent to it is cancelled.
#[track_caller]
fn assert_call_cancelled(b: &Bridge) {
    b.until_sent_upstream("notifications/cancelled");
    let sent = b.sent_upstream();
    let call = sent.iter().find(|m| m["method"] == "tools/call").unwrap();
    let cancelled = sent
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(cancelled["params"]["requestId"], call["id"], "{cancelled}");
}

/// Calls `survey` (with `arguments`) as a 2026-07-28 host and answers every round: each
/// question "Question n of m?" with `yes-n`. The final result, and the keys of each round.
fn survey(b: &mut Bridge, arguments: Value) -> (Value, Vec<Vec<String>>) {
    let caps = json!({"elicitation": {}});
    let call = json!({"name": "survey", "arguments": arguments});
    let mut answer = modern(b, 1, "tools/call", call.clone(), caps.clone());
    let mut rounds = Vec::new();
    for id in 2..10 {
        if answer["result"]["resultType"] != "input_required" {
            break;
        }
        assert_valid_result(MODERN, "InputRequiredResult", &answer);
        let asked = answer["result"]["inputRequests"].as_object().unwrap();
        let mut keys: Vec<String> = asked.keys().cloned().collect();
        keys.sort();
        let responses: serde_json::Map<String, Value> = asked
            .iter()
            .map(|(key, q)| {
                let message = q["params"]["message"].as_str().unwrap();
                let n = message.split(' ').nth(1).unwrap();
                (
                    key.clone(),
                    json!({"action": "accept", "content": {"answer": format!("yes-{n}")}}),
                )
            })
            .collect();
        rounds.push(keys);
        let mut retry = call.clone();
        retry["requestState"] = answer["result"]["requestState"].clone();
        retry["inputResponses"] = Value::Object(responses);
        answer = modern(b, id, "tools/call", retry, caps.clone());
    }
    (answer, rounds)
}

#[test]
fn a_legacy_servers_questions_asked_at_once_are_all_answered_by_a_2026_host() {
    let mut b = bridge("survey");
    b.version = MODERN;
    let (done, rounds) = survey(&mut b, json!({"questions": 3}));
    assert_valid_result(MODERN, "CallToolResult", &done);
    // Every answer reached the server, each to its own question.
    assert_eq!(
        done["result"]["content"][0]["text"], "survey answered: 1=yes-1, 2=yes-2, 3=yes-3",
        "{done}"
    );
    // Each question was put to the host once, in as many rounds as they arrived in.
    let asked: usize = rounds.iter().map(Vec::len).sum();
    assert_eq!(asked, 3, "{rounds:?}");
    assert!(rounds.len() <= 3 && !rounds.is_empty());
    assert_eq!(b.sent_upstream_count("tools/call"), 1);
}

#[test]
fn a_legacy_servers_questions_one_after_another_are_rounds_of_one_call() {
    let mut b = bridge("survey");
    b.version = MODERN;
    let (done, rounds) = survey(&mut b, json!({"questions": 3, "oneByOne": true}));
    assert_valid_result(MODERN, "CallToolResult", &done);
    assert_eq!(
        done["result"]["content"][0]["text"], "survey answered: 1=yes-1, 2=yes-2, 3=yes-3",
        "{done}"
    );
    // A question follows the last answer: one round each.
    assert_eq!(rounds.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 1]);
    assert_eq!(b.sent_upstream_count("tools/call"), 1);
}

#[test]
fn a_withdrawn_question_does_not_block_and_the_servers_answer_waits_for_the_retry() {
    let mut b = bridge("elicit");
    let caps = json!({"elicitation": {}});
    // The server withdraws its question after 200 ms and answers the call itself.
    let call = json!({"name": "confirm", "arguments": {"giveUpAfterMs": 200}});
    let first = confirm_round(&mut b, call["arguments"].clone());
    let key = first["result"]["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap();
    // Both happen while the host holds the round: the question is dropped, the answer kept.
    b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("withdrew its question"))
    });
    b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("kept for the host's retry"))
    });
    let mut retry = call;
    retry["requestState"] = first["result"]["requestState"].clone();
    retry["inputResponses"] =
        json!({key.clone(): {"action": "accept", "content": {"approve": true}}});
    let done = modern(&mut b, 2, "tools/call", retry, caps);
    // The retry gets the server's answer: nothing is lost.
    assert_valid_result(MODERN, "CallToolResult", &done);
    assert_eq!(
        done["result"]["content"][0]["text"], "no answer in time: the question was withdrawn",
        "{done}"
    );
    // The answer to the withdrawn question went nowhere, and the audit says so.
    b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains(&key) && n.contains("ignored"))
    });
    assert_eq!(b.sent_upstream_count("tools/call"), 1);
}

#[test]
fn a_round_the_host_never_comes_back_to_ends_its_request_at_the_server() {
    let mut b = Bridge::before_fixture(&["--progress-cap", "1s"], "elicit");
    let first = confirm_round(&mut b, json!({}));
    let l = b.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("did not come back"))
    });
    assert!(
        l["notice"]
            .as_str()
            .unwrap()
            .contains("cancelled at the server"),
        "{l}"
    );
    // The server hears the request is over, and its question got an error.
    assert_call_cancelled(&b);
    until_sent(&b, "the question's error", |m| m.get("error").is_some());
    // The round is spent: a late retry is refused, never passed to the server.
    let retry = json!({"name": "confirm", "requestState": first["result"]["requestState"],
        "inputResponses": {"elicitation-1": {"action": "accept", "content": {}}}});
    let late = modern(&mut b, 2, "tools/call", retry, json!({"elicitation": {}}));
    assert_eq!(late["error"]["code"], -32602, "{late}");
    assert_eq!(b.sent_upstream_count("tools/call"), 1);
}

#[test]
fn a_host_that_cancels_its_retry_ends_the_request_at_the_server() {
    let mut b = bridge("survey");
    b.version = MODERN;
    let caps = json!({"elicitation": {}});
    // The server answers 300 ms after the last answer: the retry waits for it.
    let call = json!({"name": "survey", "arguments": {"questions": 1, "answerAfterMs": 300}});
    let first = modern(&mut b, 1, "tools/call", call.clone(), caps.clone());
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let mut retry = call;
    retry["requestState"] = first["result"]["requestState"].clone();
    retry["_meta"] = Bridge::meta(caps);
    retry["inputResponses"] =
        json!({"elicitation-1": {"action": "accept", "content": {"answer": "yes"}}});
    b.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry}));
    // The answer reached the server; then the host gives up on its retry.
    until_sent(&b, "the answer", |m| {
        m["result"]["content"]["answer"] == "yes"
    });
    b.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
    );
    assert_call_cancelled(&b);
    // Nothing answers the cancelled retry: the host's next message is its ping's answer.
    b.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": Bridge::meta(json!({}))}}));
    let next = b.next();
    assert_eq!(next["id"], 3, "{next}");
}

/// Many servers as one, a 2026-07-28 host: a server's question goes in a round of a
/// request waiting on that server, never of an older one waiting on another.
#[test]
fn a_question_of_one_of_many_servers_goes_to_a_request_waiting_on_it() {
    let fixture = |profile: &str| json!({"command": common::bin(), "args": ["fixture", "--profile", profile]});
    let config =
        json!({"mcpServers": {"slow": fixture("slow-progress"), "ask": fixture("elicit")}});
    let file = common::TempFile::new("bridge-eras-many-ask.json", &config.to_string());
    let mut b = Bridge::start(&["--config", file.path()]);
    b.version = MODERN;
    let caps = json!({"elicitation": {}});
    // Waits on `slow` for a second and a half, asked first.
    let slow = json!({"name": "slow__echo", "arguments": {"message": "late"},
        "_meta": Bridge::meta(caps.clone())});
    b.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": slow}));
    let call = json!({"name": "ask__confirm", "arguments": {}});
    let first = modern(&mut b, 2, "tools/call", call, caps.clone());
    assert_valid_result(MODERN, "InputRequiredResult", &first);
    let mut retry = json!({"name": "ask__confirm", "arguments": {},
        "inputResponses": {"elicitation-1": {"action": "accept", "content": {"approve": true}}}});
    retry["requestState"] = first["result"]["requestState"].clone();
    let done = modern(&mut b, 3, "tools/call", retry, caps);
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"confirmed: action=accept content={"approve":true}"#,
        "{done}"
    );
    let late = b.answer(1);
    assert_eq!(late["result"]["resultType"], "complete", "{late}");
    assert_eq!(late["result"]["content"][0]["text"], "late");
}
