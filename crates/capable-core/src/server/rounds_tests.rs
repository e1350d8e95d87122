//! The rules of [`Rounds`], one test each, on a made-up clock.

use super::*;

const TIMEOUT: Duration = Duration::from_secs(10);

fn rounds() -> Rounds<&'static str, &'static str> {
    Rounds::new(TIMEOUT, [7; 32])
}

fn secs(t0: Instant, s: u64) -> Instant {
    t0 + Duration::from_secs(s)
}

/// The keys of a round's `inputRequests`, in order.
fn keys(round: &Value) -> Vec<String> {
    let mut keys: Vec<String> = round["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

fn state(round: &Value) -> String {
    round["requestState"].as_str().unwrap().to_owned()
}

/// The client's retry of `round`, answering `answers` (key, answer).
fn retry_of(round: &Value, answers: &[(&str, Value)]) -> Value {
    let responses: Map<String, Value> = answers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    json!({"name": "x", "requestState": round["requestState"], "inputResponses": responses})
}

#[test]
fn a_question_without_params_is_asked_without_them_never_with_null() {
    let t0 = Instant::now();
    let mut r = rounds();
    r.ask(7, 1, ServerMethod::ListRoots, Value::Null, "reply", t0);
    let round = r.round(7, t0).expect("a round");
    let asked = &round["inputRequests"]["roots-1"];
    assert_eq!(asked, &json!({"method": "roots/list"}), "{round}");
}

#[test]
fn a_question_goes_out_as_input_required_and_comes_back_on_the_retry() {
    let t0 = Instant::now();
    let mut r = rounds();
    let form = json!({"message": "ok?", "requestedSchema": {"type": "object"}});
    r.ask(7, 1, ServerMethod::Elicit, form.clone(), "reply", t0);
    assert!(!r.holds(7), "kept, not yet put to the client");
    let round = r.round(7, t0).expect("a round");
    assert_eq!(round["resultType"], "input_required");
    assert_eq!(keys(&round), ["elicitation-1"]);
    let asked = &round["inputRequests"]["elicitation-1"];
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"], form);
    assert!(r.holds(7) && !r.holds(8));
    assert!(r.round(7, t0).is_none(), "one round out at a time");
    let s = state(&round);
    assert_eq!(r.ours(&json!({"requestState": s})), Some(&*s));
    assert_eq!(r.ours(&json!({"requestState": "server's"})), None);
    assert_eq!(r.exchange(&s), Some(7));

    let retry = retry_of(&round, &[("elicitation-1", json!({"action": "accept"}))]);
    let taken = r.retry(&s, &retry, t0).unwrap();
    assert_eq!(taken.exchange, 7);
    assert_eq!(taken.answers, [("reply", json!({"action": "accept"}))]);
    assert!(taken.notices.is_empty() && taken.over.is_empty());
    assert!(matches!(taken.next, Next::Wait));
    assert!(!r.holds(7));
    // Spent: the same retry again is refused, never passed on.
    assert_eq!(r.exchange(&s), None);
    assert!(r.retry(&s, &retry, t0).is_err());
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn questions_asked_before_the_round_is_written_go_in_it_together() {
    let t0 = Instant::now();
    let mut r = rounds();
    r.ask(1, 1, ServerMethod::Elicit, json!({}), "form", t0);
    r.ask(1, 2, ServerMethod::CreateMessage, json!({}), "sample", t0);
    let round = r.round(1, t0).unwrap();
    assert_eq!(keys(&round), ["elicitation-1", "sampling-2"]);
    let retry = retry_of(
        &round,
        &[("sampling-2", json!("s")), ("elicitation-1", json!("e"))],
    );
    let mut taken = r.retry(&state(&round), &retry, t0).unwrap();
    taken.answers.sort_by_key(|a| a.0);
    assert_eq!(
        taken.answers,
        [("form", json!("e")), ("sample", json!("s"))]
    );
    assert!(matches!(taken.next, Next::Wait));
}

#[test]
fn a_question_asked_while_the_client_holds_a_round_answers_its_retry() {
    let t0 = Instant::now();
    let mut r = rounds();
    r.ask(1, 1, ServerMethod::Elicit, json!({}), "first", t0);
    let first = r.round(1, t0).unwrap();
    r.ask(
        1,
        2,
        ServerMethod::ListRoots,
        json!({}),
        "second",
        secs(t0, 1),
    );
    assert!(r.round(1, t0).is_none(), "kept while the client holds one");
    let retry = retry_of(&first, &[("elicitation-1", json!("yes"))]);
    let taken = r.retry(&state(&first), &retry, secs(t0, 2)).unwrap();
    assert_eq!(taken.answers, [("first", json!("yes"))]);
    let Next::Round(second) = taken.next else {
        panic!("the retry gets the next round")
    };
    assert_eq!(keys(&second), ["roots-2"]);
    assert_ne!(state(&second), state(&first));
    assert!(r.holds(1));
    let retry = retry_of(&second, &[("roots-2", json!({"roots": []}))]);
    let taken = r.retry(&state(&second), &retry, secs(t0, 3)).unwrap();
    assert_eq!(taken.answers, [("second", json!({"roots": []}))]);
    assert!(matches!(taken.next, Next::Wait));
}

#[test]
fn a_key_the_retry_leaves_out_is_asked_again_and_one_it_adds_is_ignored() {
    let t0 = Instant::now();
    let mut r = rounds();
    r.ask(1, 1, ServerMethod::Elicit, json!({"n": 1}), "a", t0);
    r.ask(1, 2, ServerMethod::Elicit, json!({"n": 2}), "b", t0);
    let round = r.round(1, t0).unwrap();
    let retry = retry_of(
        &round,
        &[("elicitation-1", json!("one")), ("made-up", json!("?"))],
    );
    let taken = r.retry(&state(&round), &retry, t0).unwrap();
    assert_eq!(taken.answers, [("a", json!("one"))]);
    assert_eq!(taken.notices.len(), 1);
    assert!(taken.notices[0].contains("made-up"), "{:?}", taken.notices);
    let Next::Round(again) = taken.next else {
        panic!("the missing answer is asked for again")
    };
    assert_eq!(keys(&again), ["elicitation-2"]);
    assert_eq!(again["inputRequests"]["elicitation-2"]["params"]["n"], 2);
    // inputResponses that is no object: an error for the retry; the round stays open.
    let bad = json!({"requestState": again["requestState"], "inputResponses": [1]});
    assert!(r.retry(&state(&again), &bad, t0).is_err());
    assert!(r.holds(1));
}

#[test]
fn a_withdrawn_question_is_dropped_and_its_answer_ignored() {
    let t0 = Instant::now();
    let mut r = rounds();
    r.ask(1, 10, ServerMethod::Elicit, json!({}), "asked", t0);
    let round = r.round(1, t0).unwrap();
    r.ask(1, 11, ServerMethod::Elicit, json!({}), "kept", t0);
    // Kept, not yet put to the client: gone at once.
    assert_eq!(
        r.withdraw(11),
        Some(("elicitation-2".into(), ServerMethod::Elicit))
    );
    // In the round the client holds: its answer will be ignored.
    assert!(r.withdraw(10).is_some());
    assert_eq!(r.withdraw(10), None, "once");
    assert_eq!(r.withdraw(99), None, "not a question of these rounds");
    assert_eq!(r.poll_timeout(), Some(secs(t0, 10)), "the round's deadline");
    let retry = retry_of(&round, &[("elicitation-1", json!("late"))]);
    let taken = r.retry(&state(&round), &retry, t0).unwrap();
    assert!(taken.answers.is_empty());
    assert!(taken.notices[0].contains("withdrew"), "{:?}", taken.notices);
    // Nothing blocks the retry: it carries the exchange on.
    assert!(matches!(taken.next, Next::Wait));
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn the_servers_answer_while_the_client_holds_a_round_is_the_retrys() {
    let t0 = Instant::now();
    let mut r = rounds();
    assert_eq!(r.keep(1, "result"), Err("result"), "no round out: not kept");
    r.ask(1, 1, ServerMethod::Elicit, json!({}), "asked", t0);
    let round = r.round(1, t0).unwrap();
    r.ask(1, 2, ServerMethod::Elicit, json!({}), "kept", t0);
    // The questions not yet put to the client are over with the exchange.
    assert_eq!(r.keep(1, "result"), Ok(vec!["kept"]));
    assert!(r.holds(1));
    let retry = retry_of(&round, &[("elicitation-1", json!("yes"))]);
    let taken = r.retry(&state(&round), &retry, t0).unwrap();
    assert_eq!(taken.answers, [("asked", json!("yes"))]);
    assert!(matches!(taken.next, Next::Answer("result")));
    assert!(!r.holds(1) && r.poll_timeout().is_none());
}

#[test]
fn a_round_nobody_comes_back_to_ends_its_exchange() {
    let t0 = Instant::now();
    let mut r = rounds();
    r.ask(1, 1, ServerMethod::ListRoots, json!({}), "one", t0);
    let round = r.round(1, t0).unwrap();
    r.ask(2, 2, ServerMethod::Elicit, json!({}), "two", secs(t0, 1));
    r.round(2, secs(t0, 1)).unwrap();
    assert_eq!(r.keep(1, "result"), Ok(vec![]));
    assert_eq!(r.poll_timeout(), Some(secs(t0, 10)));
    assert!(r.handle_timeout(secs(t0, 9)).is_empty());
    let expired = r.handle_timeout(secs(t0, 10));
    assert!(matches!(
        expired[..],
        [
            Lapsed::Question("one"),
            Lapsed::Round {
                exchange: 1,
                answer_dropped: true
            }
        ]
    ));
    assert!(!r.holds(1) && r.holds(2));
    let retry = retry_of(&round, &[("roots-1", json!({"roots": []}))]);
    assert!(r.retry(&state(&round), &retry, t0).is_err(), "spent");
    // The client cancels its request: everything of it is given up.
    assert_eq!(r.give_up(2), vec!["two"]);
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn each_question_has_its_own_deadline() {
    let t0 = Instant::now();
    let mut r = rounds();
    r.ask(1, 1, ServerMethod::Elicit, json!({}), "early", t0);
    let first = r.round(1, t0).unwrap();
    // Left unanswered, it is asked again in a round that lasts longer than it does.
    let taken = r
        .retry(&state(&first), &retry_of(&first, &[]), secs(t0, 4))
        .unwrap();
    let Next::Round(again) = taken.next else {
        panic!("asked again")
    };
    assert_eq!(r.poll_timeout(), Some(secs(t0, 10)), "the question's");
    let expired = r.handle_timeout(secs(t0, 10));
    assert!(matches!(expired[..], [Lapsed::Question("early")]));
    assert!(
        r.holds(1),
        "the round itself lasts until {:?}",
        secs(t0, 14)
    );
    let late = retry_of(&again, &[("elicitation-1", json!("late"))]);
    let taken = r.retry(&state(&again), &late, secs(t0, 11)).unwrap();
    assert!(taken.answers.is_empty());
    assert!(taken.notices[0].contains("deadline"), "{:?}", taken.notices);
    assert!(matches!(taken.next, Next::Wait));
}

#[test]
fn states_are_unguessable_and_the_relays_own() {
    let t0 = Instant::now();
    let mut a = rounds();
    let mut b: Rounds<&str, &str> = Rounds::new(TIMEOUT, [8; 32]);
    a.ask(1, 1, ServerMethod::Elicit, json!({}), "a", t0);
    b.ask(1, 1, ServerMethod::Elicit, json!({}), "b", t0);
    let (sa, sb) = (
        state(&a.round(1, t0).unwrap()),
        state(&b.round(1, t0).unwrap()),
    );
    assert_ne!(sa, sb, "another secret, another state");
    assert!(sa.len() > STATE_PREFIX.len() + 30, "{sa}");
    assert_eq!(b.exchange(&sa), None);
    // Another relay's state (a bridge behind this one) is not this relay's to take.
    assert_eq!(b.ours(&json!({"requestState": sa})), None);
    assert!(a.ours(&json!({"requestState": sa})).is_some());
}

#[test]
fn a_retry_repeats_its_request_or_is_another() {
    let call = json!({"name": "confirm", "arguments": {"n": 1}, "_meta": {"a": 1}});
    let retry = json!({"name": "confirm", "arguments": {"n": 1}, "requestState": "s",
        "inputResponses": {"q": {}}, "_meta": {"b": 2}});
    assert!(same_request(&call, &retry));
    assert!(same_request(
        &json!({"name": "t"}),
        &json!({"name": "t", "arguments": {}})
    ));
    assert!(!same_request(
        &call,
        &json!({"name": "confirm", "arguments": {"n": 2}})
    ));
    assert!(!same_request(
        &call,
        &json!({"name": "other", "arguments": {"n": 1}})
    ));
    assert!(same_request(
        &json!({"uri": "a://1"}),
        &json!({"uri": "a://1", "requestState": "s"})
    ));
    assert!(!same_request(
        &json!({"uri": "a://1"}),
        &json!({"uri": "a://2"})
    ));
}
