//! Rounds that move between replicas, scripted on a made-up clock: two relays (two
//! replicas' relays of one caller) sharing a key, a round given by one and its retry
//! sent to the other — carried on there, its question answered from the retry — and
//! every `requestState` that must be refused, refused with nothing sent on.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::connection::{Command, Connection, Question, Related, Upstream};
use super::{Exchange, Sealing};
use crate::jsonrpc::{Incoming, RequestId};
use crate::seal::{Caller, KeyRing, SealKey, Text};
use crate::server::{ServerConfig, ServerConnection, ServerMethod};
use crate::Era;

const TIMEOUT: Duration = Duration::from_secs(10);
/// The Unix time the relays' clock starts at.
const UNIX: u64 = 1_700_000_000;

type Test = Connection<String, &'static str, &'static str>;
type Out = Command<String, &'static str, &'static str>;

fn caller(sub: &str) -> Caller<'static> {
    Caller {
        iss: Some("https://login.example.com".into()),
        sub: Some(Text::from(sub.to_owned())),
        client_id: None,
    }
}

fn ring(byte: u8) -> KeyRing {
    KeyRing::new(SealKey::from_bytes(&[byte; 32]), vec![])
}

/// A replica's relay: its own secret (`secret`), rounds sealed with key `key` for `who`.
fn replica(secret: u8, key: u8, who: &str, t0: Instant) -> Test {
    let mut config = ServerConfig::new(
        crate::model::Implementation::new("bridge", "1.0"),
        json!({"tools": {}, "prompts": {}}),
    );
    config.request_timeout = TIMEOUT;
    let mut r = Connection::new(ServerConnection::new(config), TIMEOUT, [secret; 32]);
    r.seal_rounds(Sealing::new(ring(key), caller(who), t0, UNIX));
    r
}

fn commands(r: &mut Test) -> Vec<Out> {
    std::iter::from_fn(|| r.poll_upstream()).collect()
}

fn written(r: &mut Test) -> Vec<Value> {
    let out = r.poll_host();
    let bytes = out.bytes();
    let lines = bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    lines.map(|l| serde_json::from_slice(l).unwrap()).collect()
}

fn params(arguments: Value) -> Value {
    json!({"name": "deploy", "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1"}}})
}

/// Host request `id` (`tools/call` with `params`) at `now`, as the shell takes it: a
/// retry given to the core first; what passes is sent on (an exchange opened, its
/// token returned); `None` when the core took or refused it.
fn request(r: &mut Test, id: i64, params: Value, now: Instant) -> Option<u64> {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    r.handle_host(
        Incoming::parse(message.to_string().into_bytes()).unwrap(),
        now,
    );
    let Some(Command::Request(request)) = r.poll_upstream() else {
        panic!("a request for the shell");
    };
    let request = r.retry(request, Some(Era::Legacy), now)?;
    let token = r.reserve();
    let mut exchange = Exchange::new(request.id.clone(), request.method, format!("abort-{id}"));
    exchange.params = Some(request.params.clone());
    r.open(token, exchange);
    Some(token)
}

fn confirm(message: &str) -> Value {
    json!({"message": message, "requestedSchema": {"type": "object",
        "properties": {"approve": {"type": "boolean"}}}})
}

fn ask(
    r: &mut Test,
    exchange: u64,
    question: u64,
    message: &str,
    waiter: &'static str,
    now: Instant,
) {
    let asked = Question::new(None, ServerMethod::Elicit, confirm(message), waiter);
    // The exchange's token names the question's request for the shell; the question
    // has a token of its own.
    let _ = exchange;
    r.handle_upstream(question, Upstream::Asked(asked), now);
}

/// A round given at `a` for call 1: its key and its `requestState`.
fn round_at(a: &mut Test, t0: Instant) -> (u64, String, String) {
    let token = request(a, 1, params(json!({"env": "prod"})), t0).expect("sent on");
    ask(a, token, 70, "Deploy?", "w70", t0);
    let host = written(a);
    let round = &host[0]["result"];
    assert_eq!(round["resultType"], "input_required", "{host:?}");
    let key = round["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = round["requestState"].as_str().unwrap().to_owned();
    (token, key, state)
}

fn retry_params(key: &str, state: &str, arguments: Value) -> Value {
    let mut p = params(arguments);
    p["requestState"] = json!(state);
    p["inputResponses"] = json!({key: {"action": "accept", "content": {"approve": true}}});
    p
}

fn replies(out: &[Out]) -> Vec<(&'static str, Result<Value, String>)> {
    out.iter()
        .filter_map(|c| match c {
            Command::Reply { waiter, answer } => {
                Some((*waiter, answer.clone().map_err(|e| e.message)))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_round_retried_at_another_replica_is_carried_on_its_question_answered_from_the_retry() {
    let t0 = Instant::now();
    let mut a = replica(1, 9, "alice", t0);
    let mut b = replica(2, 9, "alice", t0);
    let (token_a, key, state) = round_at(&mut a, t0);
    // Sealed: nothing of the round, the tool or the relay is readable.
    assert!(
        !state.starts_with("capable-relay") && !state.contains("deploy"),
        "{state}"
    );
    commands(&mut a);

    // The retry reaches B, which holds no exchange: the request is sent again, as the
    // host first sent it (no inputResponses, no requestState).
    let at = t0 + Duration::from_secs(2);
    let token_b = request(
        &mut b,
        2,
        retry_params(&key, &state, json!({"env": "prod"})),
        at,
    )
    .expect("carried on: sent to the server again");
    let sent = b.state().exchange(token_b).unwrap().params.clone().unwrap();
    let sent: Value = sent.decode().unwrap();
    assert_eq!(sent["arguments"], json!({"env": "prod"}));
    assert!(sent.get("inputResponses").is_none() && sent.get("requestState").is_none());
    let notices = commands(&mut b);
    assert!(
        matches!(&notices[..], [Command::RoundNotice { level: "info", notice }] if notice.contains("another replica")),
        "{notices:?}"
    );
    // The server asks the same question again: answered from the retry, not put to
    // the host.
    ask(&mut b, token_b, 80, "Deploy?", "w80", at);
    let out = commands(&mut b);
    let answer = json!({"action": "accept", "content": {"approve": true}});
    assert_eq!(replies(&out), [("w80", Ok(answer))]);
    assert!(written(&mut b).is_empty(), "no new round");
    // The server's answer goes to the retry, under its id.
    b.handle_upstream(token_b, Upstream::Answer("deployed"), at);
    let out = commands(&mut b);
    assert!(
        matches!(
            &out[..],
            [Command::Answer {
                id: RequestId::Number(2),
                ..
            }]
        ),
        "{out:?}"
    );

    // Carried on once: the same state again at B is refused, nothing sent on.
    let again = retry_params(&key, &state, json!({"env": "prod"}));
    assert_eq!(request(&mut b, 3, again, at), None);
    let host = written(&mut b);
    let refused = host.iter().find(|m| m["id"] == 3).expect("answered");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(commands(&mut b).is_empty());

    // The round's exchange at A meets its deadline there: cancelled at the server.
    a.handle_timeout(t0 + TIMEOUT);
    let out = commands(&mut a);
    assert!(
        out.iter()
            .any(|c| matches!(c, Command::Cancel(h) if h == "abort-1")),
        "{out:?}"
    );
    assert!(a.state().exchange(token_a).is_none());
}

#[test]
fn a_question_the_round_did_not_ask_is_a_new_round_and_an_answer_is_given_once() {
    let t0 = Instant::now();
    let mut a = replica(1, 9, "alice", t0);
    let mut b = replica(2, 9, "alice", t0);
    let (_, key, state) = round_at(&mut a, t0);
    let token_b = request(
        &mut b,
        2,
        retry_params(&key, &state, json!({"env": "prod"})),
        t0,
    )
    .expect("carried on");
    commands(&mut b);
    // Asked again (answered from the retry), then once more: the retry's answer is
    // spent, so the second is put to the host, as is a question never asked before.
    ask(&mut b, token_b, 80, "Deploy?", "w80", t0);
    assert_eq!(replies(&commands(&mut b)).len(), 1);
    ask(&mut b, token_b, 81, "Deploy?", "w81", t0);
    ask(&mut b, token_b, 82, "Really deploy to prod?", "w82", t0);
    assert!(replies(&commands(&mut b)).is_empty());
    let host = written(&mut b);
    assert_eq!(host[0]["id"], 2, "{host:?}");
    let round = &host[0]["result"];
    assert_eq!(
        round["inputRequests"].as_object().unwrap().len(),
        2,
        "{round}"
    );
    // B's round is sealed too, and goes on at A as well.
    let again = round["requestState"].as_str().unwrap();
    assert!(!again.starts_with("capable-relay"));
    let keys: Vec<String> = round["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut p = params(json!({"env": "prod"}));
    p["requestState"] = json!(again);
    p["inputResponses"] = keys
        .iter()
        .map(|k| (k.clone(), json!({"action": "decline"})))
        .collect();
    let token_a = request(&mut a, 3, p, t0).expect("carried on at A");
    commands(&mut a);
    ask(&mut a, token_a, 90, "Really deploy to prod?", "w90", t0);
    assert_eq!(
        replies(&commands(&mut a)),
        [("w90", Ok(json!({"action": "decline"})))]
    );
}

#[test]
fn a_sealed_round_goes_on_at_its_own_replica_once() {
    let t0 = Instant::now();
    let mut a = replica(1, 9, "alice", t0);
    let (_, key, state) = round_at(&mut a, t0);
    commands(&mut a);
    let retry = retry_params(&key, &state, json!({"env": "prod"}));
    assert_eq!(request(&mut a, 2, retry.clone(), t0), None, "taken here");
    let out = commands(&mut a);
    assert_eq!(replies(&out).len(), 1, "the question answered: {out:?}");
    assert!(matches!(replies(&out)[0], ("w70", Ok(_))));
    // Spent: a second retry of the same round is refused, never sent on.
    assert_eq!(request(&mut a, 3, retry, t0), None);
    let host = written(&mut a);
    let refused = host.iter().find(|m| m["id"] == 3).unwrap();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[test]
fn a_changed_foreign_expired_other_callers_or_other_requests_state_is_refused_nothing_sent() {
    let t0 = Instant::now();
    let mut a = replica(1, 9, "alice", t0);
    let (_, key, state) = round_at(&mut a, t0);
    let mut tampered = state.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let prod = json!({"env": "prod"});
    let late = t0 + TIMEOUT + Duration::from_secs(2);
    let cases = [
        (
            "changed",
            replica(2, 9, "alice", t0),
            tampered.as_str(),
            prod.clone(),
            t0,
            "tampered",
        ),
        (
            "another key",
            replica(2, 8, "alice", t0),
            &state,
            prod.clone(),
            t0,
            "unknown or retired key",
        ),
        (
            "expired",
            replica(2, 9, "alice", t0),
            &state,
            prod.clone(),
            late,
            "expired",
        ),
        (
            "another caller",
            replica(2, 9, "bob", t0),
            &state,
            prod.clone(),
            t0,
            "another caller",
        ),
        (
            "another request",
            replica(2, 9, "alice", t0),
            &state,
            json!({"env": "dev"}),
            t0,
            "another request",
        ),
    ];
    for (what, mut b, state, arguments, now, says) in cases {
        let retry = retry_params(&key, state, arguments);
        let spendable = b
            .state()
            .spendable_round(crate::Method::CallTool, &retry, now);
        assert_eq!(spendable, None, "{what}: not spent in the store");
        assert_eq!(
            request(&mut b, 2, retry, now),
            None,
            "{what}: nothing sent on"
        );
        assert!(commands(&mut b).is_empty(), "{what}");
        let host = written(&mut b);
        assert_eq!(host[0]["error"]["code"], -32602, "{what}: {host:?}");
        let message = host[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{what}: {message}");
    }
    // Behind a 2026-07-28 server (another gateway behind this one, sealing under its
    // own key or this one), every state is that server's: passed on as it is.
    for key_byte in [8, 9] {
        let mut b = replica(2, key_byte, "alice", t0);
        let retry = retry_params(&key, &state, prod.clone());
        let message = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": retry});
        b.handle_host(
            Incoming::parse(message.to_string().into_bytes()).unwrap(),
            t0,
        );
        let Some(Command::Request(request)) = b.poll_upstream() else {
            panic!("a request for the shell");
        };
        let passed = b.retry(request, Some(Era::Modern), t0).expect("passed on");
        assert!(passed.params.mentions(&state));
    }
    // The one that fits is spendable, as the round's own state.
    let b = replica(2, 9, "alice", t0);
    let retry = retry_params(&key, &state, prod);
    let spendable = b
        .state()
        .spendable_round(crate::Method::CallTool, &retry, t0);
    assert_eq!(spendable, Some(state.as_str()));
}

#[test]
fn a_later_rounds_retry_at_another_replica_brings_the_earlier_rounds_answers_too() {
    let t0 = Instant::now();
    let mut a = replica(1, 9, "alice", t0);
    let mut b = replica(2, 9, "alice", t0);
    let prod = json!({"env": "prod"});
    let (token_a, first_key, first_state) = round_at(&mut a, t0);
    commands(&mut a);
    // The first round's retry at A: its answer goes to the server, which asks again.
    let first = retry_params(&first_key, &first_state, prod.clone());
    assert_eq!(request(&mut a, 2, first, t0), None, "taken at A");
    assert_eq!(replies(&commands(&mut a)).len(), 1);
    ask(&mut a, token_a, 71, "Really deploy to prod?", "w71", t0);
    let host = written(&mut a);
    let round = &host[0]["result"];
    assert_eq!(host[0]["id"], 2, "{host:?}");
    let key = round["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = round["requestState"].as_str().unwrap();

    // The second round's retry reaches B: the call is sent again, and both questions
    // (the first round's, asked again from the start, and the second's) are answered
    // there, never put to the host.
    let mut second = params(prod);
    second["requestState"] = json!(state);
    second["inputResponses"] = json!({key: {"action": "decline"}});
    let token_b = request(&mut b, 3, second, t0).expect("carried on");
    commands(&mut b);
    ask(&mut b, token_b, 80, "Deploy?", "w80", t0);
    ask(&mut b, token_b, 81, "Really deploy to prod?", "w81", t0);
    let accepted = json!({"action": "accept", "content": {"approve": true}});
    assert_eq!(
        replies(&commands(&mut b)),
        [
            ("w80", Ok(accepted)),
            ("w81", Ok(json!({"action": "decline"})))
        ]
    );
    assert!(written(&mut b).is_empty(), "no round");
}

#[test]
fn with_sealed_rounds_a_question_goes_to_the_one_waiting_request_whatever_rounds_are_out() {
    let t0 = Instant::now();
    // Hosts this relay cannot tell apart (2026-07-28 over HTTP), with rounds sealed and
    // without.
    let mut sealed = replica(1, 9, "alice", t0);
    let mut config = ServerConfig::new(
        crate::model::Implementation::new("bridge", "1.0"),
        json!({"tools": {}}),
    );
    config.request_timeout = TIMEOUT;
    let mut alone = Connection::new(ServerConnection::new(config), TIMEOUT, [1; 32]);
    for r in [&mut sealed, &mut alone] {
        r.engine_mut().set_shared(true);
        // A round out (its retry went to another replica, say), then the next call.
        round_at(r, t0);
        commands(r);
        request(r, 2, params(json!({"env": "dev"})), t0).expect("sent on");
        ask(r, 0, 71, "Deploy to dev?", "w71", t0);
    }
    // Sealed: the one request waiting gets it, in a round of its own.
    assert!(replies(&commands(&mut sealed)).is_empty());
    let host = written(&mut sealed);
    assert_eq!(host[0]["id"], 2, "{host:?}");
    assert_eq!(host[0]["result"]["resultType"], "input_required");
    // One replica: the round out is as likely the asker's, so nobody's.
    let out = replies(&commands(&mut alone));
    assert!(
        matches!(&out[..], [("w71", Err(why))] if why.contains("2 requests in flight")),
        "{out:?}"
    );
}

#[test]
fn a_question_that_names_its_request_is_its_unless_that_ones_round_is_out_and_another_waits() {
    let t0 = Instant::now();
    let mut r = replica(1, 9, "alice", t0);
    r.engine_mut().set_shared(true);
    let (out, _, _) = round_at(&mut r, t0);
    commands(&mut r);
    request(&mut r, 2, params(json!({"env": "dev"})), t0).expect("sent on");
    let three = request(&mut r, 3, params(json!({"env": "qa"})), t0).expect("sent on");
    let about = |token: u64, message: &str, waiter: &'static str| {
        let asked = Question::new(None, ServerMethod::Elicit, confirm(message), waiter);
        Upstream::Asked(asked.about(Some(Related::Exchange(token))))
    };
    // Two requests wait: a question on call 3's stream is call 3's, exactly.
    r.handle_upstream(80, about(three, "Deploy to qa?", "w80"), t0);
    assert!(replies(&commands(&mut r)).is_empty());
    let host = written(&mut r);
    assert_eq!((host.len(), &host[0]["id"]), (1, &json!(3)), "{host:?}");
    // Now call 2 alone waits, and call 1's round is out: a question on call 1's stream
    // (a server that could not tell) is the waiting call's, as one naming none is.
    r.handle_upstream(81, about(out, "Deploy to dev?", "w81"), t0);
    assert!(replies(&commands(&mut r)).is_empty());
    let host = written(&mut r);
    assert_eq!((host.len(), &host[0]["id"]), (1, &json!(2)), "{host:?}");
}
