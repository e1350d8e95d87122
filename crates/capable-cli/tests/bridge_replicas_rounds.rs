//! A 2026-07-28 host's input rounds through `capable bridge --listen` replicas sharing a
//! seal key, as a load balancer without affinity spreads them: the round's
//! `requestState` is sealed, and its retry reaching another replica is carried on
//! there — the call sent to the server again, the server's question (asked again)
//! answered with the host's answer, never a second round. The server behind is a
//! legacy HTTP one (the fixture's `elicit` profile behind a listener of its own, whose
//! `--trace` says what reaches the fixture), its `confirm` tool asking an
//! `elicitation/create` mid-call; the host is raw HTTP. A tampered or another
//! deployment's `requestState` is `-32602`, with nothing sent to the server; and with
//! the replicas' store (Debian's `redis-server`, started by the test) a state spent at
//! one replica is refused at the other.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::Bridge;
use capable_test_support::RedisServer;
use common::TempFile;
use listen_support::{listening, listening_env, modern_post, post, Http};
use serde_json::{json, Value};

/// A key file of 32 bytes of `byte`, as hex.
fn key_file(name: &str, byte: u8) -> TempFile {
    TempFile::new(
        &format!("replicas-rounds-{name}.key"),
        &format!("{byte:02x}").repeat(32),
    )
}

/// The legacy HTTP server behind: the fixture's `elicit` profile behind a listener,
/// which traces what it sends the fixture; and its URL.
fn server_behind() -> (Bridge, String) {
    server_of("elicit")
}

/// The same, of the fixture's `profile`.
fn server_of(profile: &str) -> (Bridge, String) {
    let (upstream, port) = listening(&["--trace"], profile);
    (upstream, format!("http://127.0.0.1:{port}/mcp"))
}

/// A replica: `capable bridge --listen 127.0.0.1:0 --seal-key-file KEY --protocol legacy
/// --url URL` (the listener behind speaks both eras: the replica speaks the legacy one
/// to it, so that the server's questions come mid-call).
fn replica(key: &TempFile, url: &str) -> (Bridge, u16) {
    let flags = [
        "--seal-key-file",
        key.path(),
        "--protocol",
        "legacy",
        "--url",
        url,
    ];
    listening_env(&flags, &[])
}

/// The JSON-RPC answer of an HTTP exchange (JSON, or the last event of a stream).
#[track_caller]
fn answer(http: &Http) -> Value {
    match http.header("content-type") {
        Some(t) if t.starts_with("text/event-stream") => http.events().pop().expect("an event"),
        _ => http.json(),
    }
}

/// A 2026-07-28 host's `tools/call confirm` (`id`) at `port`, with `extra` params (a
/// retry's `requestState` and `inputResponses`): its answer.
fn confirm(port: u16, id: u64, extra: Value) -> Value {
    call(port, id, "confirm", json!({}), extra)
}

/// A 2026-07-28 host's `tools/call` of `tool` with `arguments` (`id`) at `port`, with
/// `extra` params: its answer.
fn call(port: u16, id: u64, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": arguments,
        "_meta": Bridge::meta(json!({"elicitation": {}}))});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    answer(&modern_post(port, call))
}

/// The same call of a verified caller (`token`), sent to `port` as a proxy in front of
/// the replicas sends it (`Host`: the public URL's authority).
fn confirm_as(port: u16, public: &str, token: &str, id: u64, extra: Value) -> Value {
    let mut params = json!({"name": "confirm", "arguments": {},
        "_meta": Bridge::meta(json!({"elicitation": {}}))});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Host", public),
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "confirm"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    answer(&post(port, &headers, call))
}

/// A round's retry params: its state, and the host's answer to each question asked.
fn retry(round: &Value, state: &str) -> Value {
    let asked = round["result"]["inputRequests"]
        .as_object()
        .expect("a round");
    let answers: serde_json::Map<String, Value> = asked
        .keys()
        .map(|k| {
            let answer =
                json!({"action": "accept", "content": {"approve": true, "note": "from the host"}});
            (k.clone(), answer)
        })
        .collect();
    json!({"requestState": state, "inputResponses": answers})
}

/// A round asked of the host: its `requestState`.
#[track_caller]
fn state_of(round: &Value) -> String {
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    round["result"]["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned()
}

/// The text of a call's result.
#[track_caller]
fn said(done: &Value) -> String {
    let text = done["result"]["content"][0]["text"].as_str();
    text.unwrap_or_else(|| panic!("a result: {done}"))
        .to_owned()
}

/// How many `tools/call`s reached the fixture, once there are at least `n`.
fn calls_behind(upstream: &Bridge, n: usize) -> usize {
    upstream.sent_upstream_count_until("tools/call", n)
}

#[test]
fn a_rounds_retry_at_another_replica_is_carried_on_and_at_its_own_goes_on_there() {
    let (upstream, url) = server_behind();
    let key = key_file("carried", 0x31);
    let (_a_bridge, a) = replica(&key, &url);
    let (b_bridge, b) = replica(&key, &url);

    // A round from A, retried at A: its exchange goes on there (no second call).
    let round = confirm(a, 1, json!({}));
    let state = state_of(&round);
    assert!(!state.starts_with("capable-relay"), "sealed: {state}");
    assert!(!state.contains("confirm"), "{state}");
    eprintln!(
        "a sealed requestState of one question: {} characters",
        state.len()
    );
    assert!(state.len() < 400, "{} characters", state.len());
    assert_eq!(calls_behind(&upstream, 1), 1);
    let done = confirm(a, 2, retry(&round, &state));
    assert!(said(&done).contains("from the host"), "{done}");
    let calls = upstream.sent_upstream_count("tools/call");
    assert_eq!(calls, 1, "the call went on, not sent again");
    // Spent there: a second retry of it at A is refused.
    let again = confirm(a, 3, retry(&round, &state));
    assert_eq!(again["error"]["code"], -32602, "{again}");

    // The round from A; its retry sent to B, which never saw it.
    let round = confirm(a, 4, json!({}));
    let state = state_of(&round);
    assert_eq!(calls_behind(&upstream, 2), 2);
    let done = confirm(b, 5, retry(&round, &state));
    // The server got the host's answer: the call completes with it.
    let text = said(&done);
    assert!(text.starts_with("confirmed: action=accept"), "{text}");
    assert!(text.contains("from the host"), "{text}");
    assert_eq!(done["result"]["isError"], Value::Null, "{done}");
    // B sent the call again (a second one behind), and answered its question itself.
    assert_eq!(calls_behind(&upstream, 3), 3);
    let carried = b_bridge.audit_until(|l| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("answered with the host's answer"))
    });
    assert!(!carried.to_string().contains(&state), "{carried}");
    // The round's exchange left at A does not stand in the way of the host's next call
    // there: its question is that call's round.
    let next = confirm(a, 6, json!({}));
    state_of(&next);
}

#[test]
fn a_changed_or_another_deployments_request_state_is_refused_and_nothing_reaches_the_server() {
    let (upstream, url) = server_behind();
    let key = key_file("refused", 0x32);
    let other = key_file("other", 0x33);
    let (_a_bridge, a) = replica(&key, &url);
    let (_b_bridge, b) = replica(&key, &url);
    let (_c_bridge, c) = replica(&other, &url);

    let round = confirm(a, 1, json!({}));
    let state = state_of(&round);
    assert_eq!(calls_behind(&upstream, 1), 1);
    let mut tampered = state.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for (port, presented, says) in [
        (b, tampered.as_str(), "tampered"),
        (c, state.as_str(), "unknown or retired key"),
        (a, tampered.as_str(), "tampered"),
    ] {
        let refused = confirm(port, 2, retry(&round, presented));
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
        assert!(!message.contains(presented), "not repeated: {message}");
    }
    // Another request's params with the round's state: refused too.
    let mut other_call = retry(&round, &state);
    other_call["arguments"] = json!({"giveUpAfterMs": 1});
    let refused = confirm(b, 3, other_call);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // Nothing of them reached the server: the one call of the round, still.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        calls_behind(&upstream, 1),
        1,
        "{:?}",
        upstream.sent_upstream()
    );
}

/// A replica with the store: `--config` of one server `docs` at `url`, picked with
/// `--server docs`, its `gateway.store` the test's Redis.
fn stored_replica(file: &TempFile, key: &TempFile) -> (Bridge, u16) {
    let args = ["--config", file.path(), "--server", "docs"];
    let mut all = args.to_vec();
    all.extend(["--seal-key-file", key.path(), "--protocol", "legacy"]);
    listening_env(&all, &[])
}

#[test]
fn a_request_state_spent_at_one_replica_is_refused_at_the_other_with_the_store() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let (upstream, url) = server_behind();
    let text = json!({"gateway": {"store": {"redis": redis.url()}},
        "mcpServers": {"docs": {"url": url}}});
    let file = TempFile::new("replicas-rounds-store.json", &text.to_string());
    let key = key_file("store", 0x34);
    let (_a_bridge, a) = stored_replica(&file, &key);
    let (_b_bridge, b) = stored_replica(&file, &key);

    // Spent at A (the round's own replica), refused at B.
    let round = confirm(a, 1, json!({}));
    let state = state_of(&round);
    assert!(said(&confirm(a, 2, retry(&round, &state))).contains("from the host"));
    let refused = confirm(b, 3, retry(&round, &state));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("spent already"));
    assert_eq!(calls_behind(&upstream, 1), 1, "B sent nothing");

    // Spent at B (carried on there), refused at A, which still holds the round.
    let round = confirm(a, 4, json!({}));
    let state = state_of(&round);
    let done = confirm(b, 5, retry(&round, &state));
    assert!(said(&done).contains("from the host"), "{done}");
    assert_eq!(calls_behind(&upstream, 3), 3);
    let refused = confirm(a, 6, retry(&round, &state));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("spent already"));
}

#[test]
fn a_request_state_is_refused_to_another_caller_at_any_replica() {
    if !identity_support::wanted() {
        return;
    }
    let (upstream, url) = server_behind();
    let key = key_file("callers", 0x35);
    let behind = [
        "--seal-key-file",
        key.path(),
        "--protocol",
        "legacy",
        "--url",
        &url,
    ];
    // Replica A with the identity provider; B beside it, for the same public URL.
    let a = identity_support::gateway_to(&behind);
    let b_port = capable_test_support::free_port();
    let b_listen = format!("127.0.0.1:{b_port}");
    let mut flags = vec!["--listen", &b_listen, "--auth-issuer", &a.issuer];
    flags.extend(["--public-url", &a.url, "--auth-scope", "mcp:tools"]);
    flags.extend(&behind);
    let b = Bridge::start(&flags);
    b.audit_until(|l| l["event"] == "listening");
    let public = a.url.trim_start_matches("http://").trim_end_matches("/mcp");
    let (alice, bob) = (a.token("alice-app"), a.token("bob-app"));

    let round = confirm_as(a.port, public, &alice, 1, json!({}));
    let state = state_of(&round);
    eprintln!("with a verified caller: {} characters", state.len());
    assert!(state.len() < 600, "{} characters", state.len());
    assert_eq!(calls_behind(&upstream, 1), 1);
    // Bob with Alice's round, at either replica: refused, nothing sent.
    for port in [b_port, a.port] {
        let stolen = confirm_as(port, public, &bob, 2, retry(&round, &state));
        assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
        let message = stolen["error"]["message"].as_str().unwrap();
        assert!(message.contains("another caller"), "{message}");
    }
    // Alice's retry, at B: carried on there.
    let done = confirm_as(b_port, public, &alice, 3, retry(&round, &state));
    assert!(said(&done).contains("from the host"), "{done}");
    assert_eq!(calls_behind(&upstream, 2), 2, "Alice's call alone, again");
    let said = b.stderr_text();
    assert!(!said.contains(&alice) && !said.contains(&bob));
}

#[test]
fn a_second_rounds_retry_at_another_replica_has_both_questions_answered_there() {
    let (upstream, url) = server_of("survey");
    let key = key_file("survey", 0x36);
    let (_a_bridge, a) = replica(&key, &url);
    let (b_bridge, b) = replica(&key, &url);
    // `survey` asks its second question once its first is answered.
    let survey = json!({"oneByOne": true});
    let first = call(a, 1, "survey", survey.clone(), json!({}));
    let state = state_of(&first);
    let second = call(a, 2, "survey", survey.clone(), retry(&first, &state));
    let state = state_of(&second);
    // The second round's retry reaches B: the call starts again there; the first
    // question is answered from the seal, the second from the retry.
    let asked = second["result"]["inputRequests"].as_object().unwrap();
    let answers: serde_json::Map<String, Value> = asked
        .keys()
        .map(|k| (k.clone(), json!({"action": "decline"})))
        .collect();
    let extra = json!({"requestState": state, "inputResponses": answers});
    let done = call(b, 3, "survey", survey, extra);
    assert_eq!(
        said(&done),
        "survey answered: 1=accept, 2=decline",
        "{done}"
    );
    assert_eq!(calls_behind(&upstream, 2), 2);
    let answered = |l: &Value| {
        l["notice"]
            .as_str()
            .is_some_and(|n| n.contains("answered with the host's answer"))
    };
    assert_eq!(b_bridge.audit_count_until(2, answered), 2);
}
