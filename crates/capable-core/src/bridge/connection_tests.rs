//! The relay driven as the shell drives it, on a made-up clock and with no I/O: host
//! messages in, the server's answers, progress and questions in, and what comes out —
//! the host's bytes and the commands the shell runs — checked for whose they are.

use serde_json::json;

use super::*;
use crate::model::ProgressParams;
use crate::server::{ServerConfig, ServerMethod};

const TIMEOUT: Duration = Duration::from_secs(10);
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// Handles name their exchange, waiters their question, answers are strings.
type Test = Connection<String, &'static str, &'static str>;
type Out = Command<String, &'static str, &'static str>;

fn relay() -> Test {
    let mut config = ServerConfig::new(
        crate::model::Implementation::new("bridge", "1.0"),
        json!({"tools": {}, "prompts": {}}),
    );
    config.request_timeout = TIMEOUT;
    Connection::new(ServerConnection::new(config), TIMEOUT, [7; 32])
}

fn secs(t0: Instant, s: u64) -> Instant {
    t0 + Duration::from_secs(s)
}

fn send(r: &mut Test, message: Value, now: Instant) {
    let line = message.to_string().into_bytes();
    let incoming = Incoming::parse(line).expect("a JSON-RPC message");
    r.handle_host(incoming, now);
}

/// Every message written for the host since the last call.
fn written(r: &mut Test) -> Vec<Value> {
    let out = r.poll_host();
    let bytes = out.bytes();
    let lines = bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    lines
        .map(|l| serde_json::from_slice(l).expect("JSON"))
        .collect()
}

fn commands(r: &mut Test) -> Vec<Out> {
    std::iter::from_fn(|| r.poll_upstream()).collect()
}

/// A 2026-07-28 host's envelope: its capabilities, and a progress token when `token`.
fn envelope(capabilities: Value, token: Option<&str>) -> Value {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1"}});
    if let Some(token) = token {
        meta["progressToken"] = json!(token);
    }
    meta
}

fn call_params(tool: &str, capabilities: Value, token: Option<&str>) -> Value {
    json!({"name": tool, "arguments": {"n": 1}, "_meta": envelope(capabilities, token)})
}

/// A 2026-07-28 host's `tools/call` `id` of `tool`, sent on as the shell sends it
/// (params kept for a round's retry, handle `abort-<id>`): the exchange's token.
fn modern_call(r: &mut Test, id: RequestId, tool: &str, caps: Value, token: Option<&str>) -> u64 {
    let params = call_params(tool, caps, token);
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    send(r, message, Instant::now());
    forward(r)
}

/// The one command out must be a host request to send on: opened as an exchange.
fn forward(r: &mut Test) -> u64 {
    let mut out = commands(r);
    assert_eq!(out.len(), 1, "{out:?}");
    let Command::Request(request) = out.remove(0) else {
        panic!("a request to send on: {out:?}");
    };
    let token = r.reserve();
    let handle = format!("abort-{}", request.id);
    let mut exchange = Exchange::new(request.id.clone(), request.method, handle);
    exchange.params = Some(request.params.clone());
    r.open(token, exchange);
    token
}

/// The shell's part of an answer routed to its host request: written as it came.
fn finish(r: &mut Test, command: Out) -> RequestId {
    let Command::Answer {
        id,
        exchange,
        answer,
    } = command
    else {
        panic!("an answer: {command:?}");
    };
    let raw = RawValue::from_string(format!("{{\"content\":[],\"said\":\"{answer}\"}}"));
    let raw = raw.expect("raw JSON");
    r.respond_answer(&id, exchange.method, &raw, false);
    id
}

fn legacy_host(capabilities: Value) -> Test {
    let mut r = relay();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": capabilities,
        "clientInfo": {"name": "host", "version": "1"}}});
    send(&mut r, init, Instant::now());
    assert_eq!(written(&mut r)[0]["result"]["protocolVersion"], LEGACY);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    send(&mut r, initialized, Instant::now());
    let out = commands(&mut r);
    assert!(matches!(out[..], [Command::Follow(_)]), "{out:?}");
    r
}

fn legacy_call(r: &mut Test, id: i64, now: Instant) -> u64 {
    let params =
        json!({"name": "x", "arguments": {}, "_meta": {"progressToken": format!("p{id}")}});
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    send(r, message, now);
    forward(r)
}

fn question(method: ServerMethod, waiter: &'static str) -> Upstream<&'static str, &'static str> {
    let params =
        json!({"message": waiter, "requestedSchema": {"type": "object", "properties": {}}});
    Upstream::Asked(Question::new(None, method, params, waiter))
}

#[test]
fn a_host_request_is_sent_on_and_answered_under_the_hosts_id() {
    let t0 = Instant::now();
    let mut r = relay();
    let token = modern_call(&mut r, RequestId::Number(7), "x", json!({}), None);
    assert!(
        written(&mut r).is_empty(),
        "nothing for the host before the answer"
    );
    r.handle_upstream(token, Upstream::Answer("done"), secs(t0, 1));
    let mut out = commands(&mut r);
    assert_eq!(out.len(), 1, "{out:?}");
    let Command::Answer { exchange, .. } = &out[0] else {
        panic!("{out:?}");
    };
    assert_eq!(exchange.handle, "abort-7");
    let id = finish(&mut r, out.remove(0));
    assert_eq!(id, RequestId::Number(7));
    let host = written(&mut r);
    assert_eq!(host.len(), 1, "{host:?}");
    assert_eq!(host[0]["id"], 7);
    assert_eq!(host[0]["result"]["said"], "done");
}

#[test]
fn progress_reaches_its_request_until_the_answer_then_is_dropped() {
    let t0 = Instant::now();
    let mut r = legacy_host(json!({}));
    let token = legacy_call(&mut r, 3, t0);
    let progress = |n: f64| -> ProgressParams {
        serde_json::from_value(json!({"progressToken": 99, "progress": n})).expect("progress")
    };
    r.handle_upstream(token, Upstream::Progress(progress(1.0)), t0);
    let host = written(&mut r);
    assert_eq!(host.len(), 1, "{host:?}");
    assert_eq!(host[0]["method"], "notifications/progress");
    assert_eq!(
        host[0]["params"]["progressToken"], "p3",
        "the host's own token"
    );
    r.handle_upstream(token, Upstream::Answer("done"), secs(t0, 1));
    let answer = commands(&mut r).remove(0);
    finish(&mut r, answer);
    assert_eq!(written(&mut r)[0]["id"], 3);
    r.handle_upstream(token, Upstream::Progress(progress(2.0)), secs(t0, 2));
    assert!(
        written(&mut r).is_empty(),
        "progress after the answer is dropped"
    );
    assert!(commands(&mut r).is_empty());
}

#[test]
fn a_hosts_cancel_cancels_only_its_own_exchange() {
    let t0 = Instant::now();
    let mut r = legacy_host(json!({}));
    let one = legacy_call(&mut r, 1, t0);
    let two = legacy_call(&mut r, 2, t0);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "no longer"}});
    send(&mut r, cancel, secs(t0, 1));
    let out = commands(&mut r);
    assert!(
        matches!(&out[..], [Command::Cancel(h)] if h == "abort-2"),
        "{out:?}"
    );
    // A cancel of a request no exchange answers touches nothing.
    let unknown = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9}});
    send(&mut r, unknown, secs(t0, 1));
    assert!(!commands(&mut r)
        .iter()
        .any(|c| matches!(c, Command::Cancel(_))));
    // The cancelled exchange's late answer is dropped; the other's is its request's.
    r.handle_upstream(two, Upstream::Answer("late"), secs(t0, 2));
    assert!(commands(&mut r).is_empty());
    r.handle_upstream(one, Upstream::Answer("one"), secs(t0, 2));
    let answer = commands(&mut r).remove(0);
    assert_eq!(finish(&mut r, answer), RequestId::Number(1));
}

#[test]
fn a_legacy_hosts_answers_reach_their_own_questions_waiters() {
    let t0 = Instant::now();
    let mut r = legacy_host(json!({"elicitation": {}}));
    let _call = legacy_call(&mut r, 5, t0);
    r.handle_upstream(50, question(ServerMethod::Elicit, "w50"), t0);
    r.handle_upstream(51, question(ServerMethod::Elicit, "w51"), t0);
    let host = written(&mut r);
    assert_eq!(host.len(), 2, "{host:?}");
    assert!(host.iter().all(|m| m["method"] == "elicitation/create"));
    let ids = [host[0]["id"].clone(), host[1]["id"].clone()];
    assert_eq!(host[0]["params"]["message"], "w50");
    // Answered in the other order: each answer goes to its own question's waiter.
    for (n, id) in ids.iter().enumerate().rev() {
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "n": n}});
        send(&mut r, answer, secs(t0, 1));
    }
    let out = commands(&mut r);
    let replies: Vec<_> = out
        .iter()
        .map(|c| match c {
            Command::Reply { waiter, answer } => (*waiter, answer.as_ref().map(|a| a["n"].clone())),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(replies, [("w51", Ok(json!(1))), ("w50", Ok(json!(0)))]);
    // The server withdraws a question the host has: it is cancelled at the host.
    r.handle_upstream(52, question(ServerMethod::Elicit, "w52"), secs(t0, 2));
    let asked = written(&mut r);
    r.handle_upstream(52, Upstream::Withdrawn, secs(t0, 3));
    let host = written(&mut r);
    assert_eq!(host[0]["method"], "notifications/cancelled");
    assert_eq!(host[0]["params"]["requestId"], asked[0]["id"]);
}

#[test]
fn a_question_nobody_answers_fails_at_its_deadline() {
    let t0 = Instant::now();
    let mut r = legacy_host(json!({"elicitation": {}}));
    let _call = legacy_call(&mut r, 5, t0);
    r.handle_upstream(60, question(ServerMethod::Elicit, "w60"), t0);
    assert_eq!(written(&mut r).len(), 1);
    assert_eq!(r.poll_timeout(), Some(t0 + TIMEOUT));
    r.handle_timeout(t0 + TIMEOUT - Duration::from_millis(1));
    assert!(commands(&mut r).is_empty(), "not before its deadline");
    r.handle_timeout(t0 + TIMEOUT);
    let out = commands(&mut r);
    assert!(
        matches!(&out[..], [Command::Reply { waiter: "w60", answer: Err(e) }]
            if e.message.contains("did not answer")),
        "{out:?}"
    );
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn a_round_for_a_2026_host_and_its_retry_answer_the_question_and_carry_the_call_on() {
    let t0 = Instant::now();
    let mut r = relay();
    let caps = json!({"elicitation": {}});
    let token = modern_call(&mut r, RequestId::Number(1), "x", caps.clone(), None);
    r.handle_upstream(70, question(ServerMethod::Elicit, "w70"), t0);
    r.handle_upstream(71, question(ServerMethod::Elicit, "w71"), t0);
    // Questions asked together go in one round, as the output is taken.
    let host = written(&mut r);
    assert_eq!(host.len(), 1, "{host:?}");
    let round = &host[0]["result"];
    assert_eq!(host[0]["id"], 1);
    assert_eq!(round["resultType"], "input_required");
    let keys: Vec<String> = round["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{round}");
    // The server answers while the host holds the round: kept for its retry.
    r.handle_upstream(token, Upstream::Answer("done"), secs(t0, 1));
    let out = commands(&mut r);
    assert!(
        matches!(&out[..], [Command::RoundNotice { level: "info", .. }]),
        "{out:?}"
    );
    let mut retry = call_params("x", caps, None);
    retry["requestState"] = round["requestState"].clone();
    let answers: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| (k.clone(), json!({"action": "accept", "key": k})))
        .collect();
    retry["inputResponses"] = Value::Object(answers);
    let message = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry});
    send(&mut r, message, secs(t0, 2));
    let Some(Command::Request(request)) = r.poll_upstream() else {
        panic!("the retry comes to the shell first");
    };
    assert!(
        r.retry(request, Some(Era::Legacy), secs(t0, 2)).is_none(),
        "taken"
    );
    let out = commands(&mut r);
    let waiters: Vec<_> = out
        .iter()
        .filter_map(|c| match c {
            Command::Reply { waiter, answer } => Some((*waiter, answer.is_ok())),
            _ => None,
        })
        .collect();
    assert_eq!(waiters, [("w70", true), ("w71", true)]);
    // The answer kept goes to the retry, under its id.
    let answer = out
        .into_iter()
        .find(|c| matches!(c, Command::Answer { .. }));
    assert_eq!(
        finish(&mut r, answer.expect("the kept answer")),
        RequestId::Number(2)
    );
    assert_eq!(written(&mut r)[0]["id"], 2);
}

#[test]
fn a_round_the_host_never_comes_back_to_is_cancelled_at_the_server() {
    let t0 = Instant::now();
    let mut r = relay();
    let _ = modern_call(
        &mut r,
        RequestId::Number(1),
        "x",
        json!({"elicitation": {}}),
        None,
    );
    r.handle_upstream(80, question(ServerMethod::Elicit, "w80"), t0);
    assert_eq!(written(&mut r)[0]["result"]["resultType"], "input_required");
    let deadline = r.poll_timeout().expect("the round's deadline");
    r.handle_timeout(deadline);
    let out = commands(&mut r);
    assert!(
        out.iter()
            .any(|c| matches!(c, Command::Cancel(h) if h == "abort-1")),
        "{out:?}"
    );
    assert!(
        out.iter().any(|c| matches!(
            c,
            Command::Reply {
                waiter: "w80",
                answer: Err(_)
            }
        )),
        "{out:?}"
    );
}

/// The point: one relay shared by 2026-07-28 hosts that declared the same, whose
/// ids the listener made unique. Nothing of one request ever reaches the other.
#[test]
fn two_hosts_through_one_shared_relay_get_only_what_is_theirs() {
    let t0 = Instant::now();
    let mut r = relay();
    r.engine_mut().set_shared(true);
    let caps = json!({"elicitation": {}});
    let a = RequestId::String("a-1".into());
    let b = RequestId::String("b-1".into());
    let at_a = modern_call(&mut r, a.clone(), "x", caps.clone(), Some("pa"));
    let at_b = modern_call(&mut r, b.clone(), "x", caps, Some("pb"));
    // A question the server did not say the request of: either host's could have
    // asked it; it is put to none of them, and the server is told why.
    r.handle_upstream(90, question(ServerMethod::Elicit, "w90"), t0);
    let out = commands(&mut r);
    assert!(
        matches!(
            &out[..],
            [
                Command::RoundNotice {
                    level: "warning",
                    ..
                },
                Command::Reply {
                    waiter: "w90",
                    answer: Err(_)
                }
            ]
        ),
        "{out:?}"
    );
    assert!(
        written(&mut r).is_empty(),
        "no host is asked another's question"
    );
    // Progress of B's exchange reaches B's token alone.
    let progress: ProgressParams =
        serde_json::from_value(json!({"progressToken": 1, "progress": 0.5})).expect("progress");
    r.handle_upstream(at_b, Upstream::Progress(progress), t0);
    let host = written(&mut r);
    assert_eq!(host.len(), 1, "{host:?}");
    assert_eq!(host[0]["params"]["progressToken"], "pb");
    // B cancels: only B's exchange is cancelled.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "b-1", "_meta": envelope(json!({}), None)}});
    send(&mut r, cancel, secs(t0, 1));
    let out = commands(&mut r);
    assert!(
        matches!(&out[..], [Command::Cancel(h)] if h == "abort-\"b-1\""),
        "{out:?}"
    );
    // A's answer is A's.
    r.handle_upstream(at_a, Upstream::Answer("for a"), secs(t0, 2));
    let answer = commands(&mut r).remove(0);
    assert_eq!(finish(&mut r, answer), a);
    let host = written(&mut r);
    assert_eq!((host.len(), &host[0]["id"]), (1, &json!("a-1")));
    assert_eq!(host[0]["result"]["said"], "for a");
}

/// A question the server says the request of (it came on that request's stream) goes
/// to that request exactly, even in a relay shared by 2026-07-28 hosts it cannot tell
/// apart: each host is asked its own, answers it, and gets its own answer.
#[test]
fn in_a_shared_relay_each_question_that_names_its_request_is_put_to_that_host_alone() {
    let t0 = Instant::now();
    let mut r = relay();
    r.engine_mut().set_shared(true);
    let caps = json!({"elicitation": {}});
    let a = RequestId::String("a-1".into());
    let b = RequestId::String("b-1".into());
    let at_a = modern_call(&mut r, a.clone(), "x", caps.clone(), None);
    let at_b = modern_call(&mut r, b.clone(), "x", caps.clone(), None);
    // Each question names its request by the token the shell's client kept with it.
    let about = |waiter: &'static str, token: u64| {
        let params =
            json!({"message": waiter, "requestedSchema": {"type": "object", "properties": {}}});
        let q = Question::new(None, ServerMethod::Elicit, params, waiter);
        Upstream::Asked(q.about(Some(Related::Exchange(token))))
    };
    // B's question first, then A's: each is put to its own request.
    r.handle_upstream(91, about("for b", at_b), t0);
    r.handle_upstream(90, about("for a", at_a), t0);
    assert!(commands(&mut r).is_empty(), "nobody is refused");
    let mut rounds = written(&mut r);
    rounds.sort_by_key(|m| m["id"].to_string());
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    for (round, (id, message)) in rounds.iter().zip([(&a, "for a"), (&b, "for b")]) {
        assert_eq!(&round["id"], &json!(id));
        let asked: Vec<&Value> = round["result"]["inputRequests"]
            .as_object()
            .expect("inputRequests")
            .values()
            .collect();
        assert_eq!(asked.len(), 1, "{round}");
        assert_eq!(asked[0]["params"]["message"], message, "{round}");
    }
    // Each host retries with its answer: its own question's waiter gets it.
    for (n, round) in rounds.iter().enumerate() {
        let result = &round["result"];
        let key = result["inputRequests"]
            .as_object()
            .expect("keys")
            .keys()
            .next();
        let mut retry = call_params("x", caps.clone(), None);
        retry["requestState"] = result["requestState"].clone();
        retry["inputResponses"] = json!({ key.expect("a key"): {"action": "accept", "n": n} });
        let id = format!("{}-2", ["a", "b"][n]);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": retry});
        send(&mut r, message, secs(t0, 1));
        let Some(Command::Request(request)) = r.poll_upstream() else {
            panic!("the retry comes to the shell first");
        };
        assert!(r.retry(request, Some(Era::Legacy), secs(t0, 1)).is_none());
        let out = commands(&mut r);
        let waiter = ["for a", "for b"][n];
        assert!(
            matches!(&out[..], [Command::Reply { waiter: w, answer: Ok(v) }] if *w == waiter && v["n"] == n),
            "{out:?}"
        );
    }
    // And each exchange's answer goes to its own host's retry.
    r.handle_upstream(at_b, Upstream::Answer("for b"), secs(t0, 2));
    let answer = commands(&mut r).remove(0);
    assert_eq!(finish(&mut r, answer), RequestId::String("b-2".into()));
    r.handle_upstream(at_a, Upstream::Answer("for a"), secs(t0, 2));
    let answer = commands(&mut r).remove(0);
    assert_eq!(finish(&mut r, answer), RequestId::String("a-2".into()));
}
