//! `capable bridge` between the eras: a legacy host in front of a 2026-07-28 server, and
//! a 2026-07-28 host in front of a legacy one. Subscriptions become listen streams and
//! back, a server's questions become `input_required` rounds and back, log levels and
//! results are carried over; what the host sees is what the server declared, as the
//! host's version defines it. Every message the bridge writes is validated as a server
//! message of the host's version, and each answer against its result's definition.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use bridge_support::Bridge;
use capable::core::ProtocolVersion;
use capable_test_support::assert_valid_result;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
const MANUAL: &str = "docs://manual/current";

fn bridge(profile: &str) -> Bridge {
    let server = common::fixture(profile);
    let mut args = vec!["--trace", "--"];
    args.extend(server.iter().map(String::as_str));
    Bridge::start(&args)
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
fn a_legacy_servers_question_reaches_a_2026_host_as_an_input_required_round() {
    let mut b = bridge("elicit");
    b.version = MODERN;
    let caps = json!({"elicitation": {}});
    let first = modern(
        &mut b,
        1,
        "tools/call",
        json!({"name": "confirm"}),
        caps.clone(),
    );
    assert_valid_result(MODERN, "InputRequiredResult", &first);
    let question = &first["result"]["inputRequests"]["question"];
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert_eq!(question["params"]["message"], "Confirm the acceptance run?");
    let state = first["result"]["requestState"].clone();
    let retry = json!({"name": "confirm", "requestState": state,
        "inputResponses": {"question": {"action": "accept", "content": {"approve": true}}}});
    let done = modern(&mut b, 2, "tools/call", retry, caps);
    assert_valid_result(MODERN, "CallToolResult", &done);
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"confirmed: action=accept content={"approve":true}"#
    );
    // One call reached the server; the retry only carried the answer.
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
    b.until_sent_upstream("logging/setLevel");
    let set = b
        .sent_upstream()
        .into_iter()
        .find(|m| m["method"] == "logging/setLevel")
        .unwrap();
    assert_eq!(set["params"]["level"], "debug");
}
