//! `capable bridge --listen` in front of a legacy Streamable HTTP server
//! (server-everything, the reference TypeScript server), two 2026-07-28 hosts that
//! declared the same (so the bridge cannot tell them apart: they share one session at
//! the server) each calling a tool that asks an `elicitation/create` mid-call. The
//! server sends each question on its call's own POST stream, so the bridge knows whose
//! each is: each host gets its own question in a round, answers it, and gets its own
//! result — where, without knowing, a question while two calls are in flight would be
//! put to none of them.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::Bridge;
use common::peers_wanted;
use common::servers::{self, EVERYTHING_JS};
use listen_support::{listening_env, modern_post, Http};
use serde_json::{json, Value};

const TOOL: &str = "trigger-elicitation-request";

/// The JSON-RPC answer of an HTTP exchange (JSON, or the last event of a stream).
#[track_caller]
fn answer(http: &Http) -> Value {
    match http.header("content-type") {
        Some(t) if t.starts_with("text/event-stream") => http.events().pop().expect("an event"),
        _ => http.json(),
    }
}

/// A 2026-07-28 host's call of the asking tool (`id`) at `port`, with `extra` params
/// (a retry's `requestState` and `inputResponses`): its answer.
fn call(port: u16, id: &str, extra: Value) -> Value {
    let mut params = json!({"name": TOOL, "arguments": {},
        "_meta": Bridge::meta(json!({"elicitation": {}}))});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    answer(&modern_post(port, call))
}

/// The one question of a round, its key and the round's `requestState`.
#[track_caller]
fn asked(round: &Value) -> (String, String) {
    let result = &round["result"];
    assert_eq!(result["resultType"], "input_required", "{round}");
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "one question, the host's own: {round}");
    let (key, question) = requests.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{round}");
    let state = result["requestState"].as_str().expect("a requestState");
    (key.clone(), state.to_owned())
}

/// The text of a call's result, all of its parts.
#[track_caller]
fn said(done: &Value) -> String {
    let content = done["result"]["content"].as_array();
    let content = content.unwrap_or_else(|| panic!("a result: {done}"));
    let texts = content.iter().filter_map(|c| c["text"].as_str());
    texts.collect::<Vec<_>>().join("\n")
}

#[test]
fn two_hosts_in_flight_at_once_each_get_their_own_question_and_their_own_result() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let everything = servers::everything("streamableHttp");
    let url = everything.url("/mcp");
    let (bridge, port) = listening_env(&["--protocol", "legacy", "--url", &url], &[]);
    // Ada's call: the server asks, and Ada holds a round while her call waits there.
    let ada = call(port, "ada-1", json!({}));
    let (ada_key, ada_state) = asked(&ada);
    // Bob's call while Ada's is in flight at the same server session: his question
    // comes on his call's stream, and is his.
    let bob = call(port, "bob-1", json!({}));
    let (bob_key, bob_state) = asked(&bob);
    assert_ne!(ada_state, bob_state, "two rounds");
    // Each answers, Bob first: each call's result says that host's own answer.
    let answer = |key: &str, state: &str, name: &str| {
        json!({"requestState": state, "inputResponses": {
            key: {"action": "accept", "content": {"name": name}}}})
    };
    let bob_done = call(port, "bob-2", answer(&bob_key, &bob_state, "Bob"));
    let ada_done = call(port, "ada-2", answer(&ada_key, &ada_state, "Ada"));
    let (bob_said, ada_said) = (said(&bob_done), said(&ada_done));
    assert!(bob_said.contains("Name: Bob"), "{bob_done}");
    assert!(!bob_said.contains("Ada"), "{bob_done}");
    assert!(ada_said.contains("Name: Ada"), "{ada_done}");
    assert!(!ada_said.contains("Bob"), "{ada_done}");
    assert_eq!(
        (&bob_done["id"], &ada_done["id"]),
        (&json!("bob-2"), &json!("ada-2"))
    );
    // Nothing was put to none.
    let refused = bridge
        .audit()
        .into_iter()
        .find(|l| l.to_string().contains("put to none"));
    assert_eq!(refused, None);
}
