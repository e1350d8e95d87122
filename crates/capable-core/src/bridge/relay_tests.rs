//! The relay's decisions, one scripted test each, on a made-up clock: exchanges opened,
//! the server's questions and answers, the host's retries, cancels and deadlines.

use serde_json::json;

use super::*;
use crate::bridge::commands::Related;
use crate::jsonrpc::Payload;

const TIMEOUT: Duration = Duration::from_secs(10);

/// Handles and replies are names, answers strings: what comes out says whose it is.
type Test = Relay<&'static str, &'static str, &'static str>;

fn relay() -> Test {
    Relay::new(TIMEOUT, [7; 32])
}

fn id(n: i64) -> RequestId {
    RequestId::Number(n)
}

fn secs(t0: Instant, s: u64) -> Instant {
    t0 + Duration::from_secs(s)
}

/// Opens host request `host`'s `method` with `params` (kept for its retry, as the shell
/// keeps them for a request that may get rounds).
fn open(r: &mut Test, host: i64, method: Method, params: &Value, handle: &'static str) -> u64 {
    let token = r.reserve();
    let mut exchange = Exchange::new(id(host), method, handle);
    exchange.params = Some(Payload::from_json(params.to_string()));
    r.open(token, exchange);
    token
}

fn call(name: &str) -> Value {
    json!({"name": name, "arguments": {"n": 1}})
}

/// The host's retry of `round`: `params` with its state and `answers`.
fn retry_of(round: &Value, params: &Value, answers: Value) -> Value {
    let mut retry = params.clone();
    retry["requestState"] = round["requestState"].clone();
    retry["inputResponses"] = answers;
    retry
}

/// A call whose exchange has one elicitation of the server's in the round the host
/// holds: the relay, the exchange's token, the round.
fn call_in_a_round(t0: Instant) -> (Test, u64, Value) {
    let mut r = relay();
    let token = open(&mut r, 1, Method::CallTool, &call("x"), "abort-1");
    let whose = r.whose_question(None, false, None);
    assert_eq!(whose, Whose::Exchange(token));
    r.keep_question(
        token,
        11,
        ServerMethod::Elicit,
        json!({"message": "ok?"}),
        "q11",
        t0,
    );
    let mut put = r.put_rounds(t0);
    assert_eq!(put.len(), 1, "{put:?}");
    let (to, round) = put.remove(0);
    assert_eq!(to, id(1), "the round answers the request that waits");
    assert_eq!(round["resultType"], "input_required");
    (r, token, round)
}

#[test]
fn a_retry_carries_its_answer_to_the_question_and_the_exchange_on_under_its_id() {
    let t0 = Instant::now();
    let (mut r, token, round) = call_in_a_round(t0);
    assert_eq!(
        r.progress_to(token),
        None,
        "no host request open during a round"
    );
    let retry = retry_of(
        &round,
        &call("x"),
        json!({"elicitation-1": {"action": "accept"}}),
    );
    let Retried::Taken(taken) = r.retry(
        &id(2),
        Method::CallTool,
        &retry,
        Some(Era::Legacy),
        secs(t0, 1),
    ) else {
        panic!("the retry is taken");
    };
    assert_eq!(taken.answers, [("q11", json!({"action": "accept"}))]);
    assert!(matches!(taken.then, Then::Wait), "{:?}", taken.then);
    assert!(taken.over.is_empty() && taken.notices.is_empty());
    assert_eq!(r.progress_to(token), Some(&id(2)));
    match r.answered(token, "result") {
        Answered::To { id: to, answer, .. } => assert_eq!((to, answer), (id(2), "result")),
        other => panic!("{other:?}"),
    }
    // The same state again: its round was answered.
    let again = r.retry(
        &id(3),
        Method::CallTool,
        &retry,
        Some(Era::Legacy),
        secs(t0, 2),
    );
    assert!(matches!(again, Retried::Refused(e) if e.code == codes::INVALID_PARAMS));
}

#[test]
fn a_retry_of_another_request_is_refused_and_the_round_stays_open() {
    let t0 = Instant::now();
    let (mut r, token, round) = call_in_a_round(t0);
    let answers = json!({"elicitation-1": {"action": "accept"}});
    for (method, params) in [
        (Method::GetPrompt, call("x")),
        (Method::CallTool, call("y")),
        (
            Method::CallTool,
            json!({"name": "x", "arguments": {"n": 2}}),
        ),
    ] {
        let other = retry_of(&round, &params, answers.clone());
        match r.retry(&id(2), method, &other, Some(Era::Legacy), t0) {
            Retried::Refused(e) => {
                assert_eq!(e.code, codes::INVALID_PARAMS);
                assert!(e.message.contains("another request"), "{}", e.message);
            }
            other => panic!("{method:?} {params}: {other:?}"),
        }
    }
    // The real retry still answers the question.
    let retry = retry_of(&round, &call("x"), answers);
    let taken = r.retry(&id(3), Method::CallTool, &retry, Some(Era::Legacy), t0);
    assert!(matches!(taken, Retried::Taken(t) if t.answers.len() == 1));
    assert_eq!(r.progress_to(token), Some(&id(3)));
}

#[test]
fn input_responses_without_a_round_are_refused_only_before_a_legacy_server() {
    let t0 = Instant::now();
    let mut r = relay();
    let stray = json!({"name": "x", "inputResponses": {"elicitation-1": {}}});
    match r.retry(&id(1), Method::CallTool, &stray, Some(Era::Legacy), t0) {
        Retried::Refused(e) => assert!(e.message.contains("no round"), "{}", e.message),
        other => panic!("{other:?}"),
    }
    // A 2026-07-28 server's own rounds pass; so does a request that takes no round,
    // and one without answers.
    let passes = [
        (Method::CallTool, stray.clone(), false),
        (Method::ListTools, stray, true),
        (Method::CallTool, call("x"), true),
    ];
    for (method, params, legacy) in passes {
        let retried = r.retry(&id(1), method, &params, legacy.then_some(Era::Legacy), t0);
        assert!(matches!(retried, Retried::Pass), "{method:?} {params}");
    }
    // Another relay's state (a bridge behind this one) is the server's.
    let foreign = json!({"name": "x", "requestState": "someone-else's", "inputResponses": {}});
    let retried = r.retry(&id(1), Method::CallTool, &foreign, Some(Era::Modern), t0);
    assert!(matches!(retried, Retried::Pass));
}

#[test]
fn the_servers_answer_while_the_host_holds_a_round_is_kept_for_the_retry() {
    let t0 = Instant::now();
    let (mut r, token, round) = call_in_a_round(t0);
    match r.answered(token, "result") {
        Answered::Kept { over, notice } => {
            assert!(over.is_empty(), "the one question was put to the host");
            assert!(notice.contains("tools/call"), "{notice}");
        }
        other => panic!("{other:?}"),
    }
    let retry = retry_of(
        &round,
        &call("x"),
        json!({"elicitation-1": {"action": "decline"}}),
    );
    let Retried::Taken(taken) = r.retry(&id(2), Method::CallTool, &retry, Some(Era::Legacy), t0)
    else {
        panic!("taken");
    };
    assert_eq!(taken.answers, [("q11", json!({"action": "decline"}))]);
    let Then::Answer(answered, answer) = taken.then else {
        panic!("{:?}", taken.then);
    };
    assert_eq!((answered, answer), (token, "result"));
    // The shell answers it as any answer: to the retry.
    match r.answered(token, answer) {
        Answered::To { id: to, .. } => assert_eq!(to, id(2)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(r.answered(token, "late"), Answered::Dropped));
}

#[test]
fn a_cancel_ends_only_the_cancellers_request_and_fails_its_kept_questions() {
    let t0 = Instant::now();
    let mut r = relay();
    let a = open(&mut r, 1, Method::CallTool, &call("a"), "abort-a");
    let b = open(&mut r, 2, Method::CallTool, &call("b"), "abort-b");
    r.keep_question(b, 21, ServerMethod::Elicit, json!({}), "q21", t0);
    assert!(r.cancelled(&id(3)).is_none(), "no request of that id");
    let cancelled = r.cancelled(&id(2)).expect("request 2's exchange");
    assert_eq!(cancelled.handle, "abort-b");
    assert_eq!(cancelled.questions, ["q21"]);
    assert!(r.exchange(a).is_some() && r.exchange(b).is_none());
    assert!(
        r.put_rounds(t0).is_empty(),
        "no round for a cancelled request"
    );
}

#[test]
fn a_round_the_host_never_comes_back_to_ends_its_exchange_at_its_deadline() {
    let t0 = Instant::now();
    let (mut r, token, _round) = call_in_a_round(t0);
    assert_eq!(r.poll_timeout(), Some(secs(t0, 10)));
    assert!(r.handle_timeout(secs(t0, 9)).is_empty(), "not yet");
    let lapses = r.handle_timeout(secs(t0, 10));
    let mut questions = Vec::new();
    let mut rounds = Vec::new();
    for lapse in lapses {
        match lapse {
            Lapse::Question(q) => questions.push(q),
            Lapse::Round { handle, notice } => rounds.push((handle, notice)),
        }
    }
    assert_eq!(questions, ["q11"]);
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0].0, "abort-1");
    assert!(
        rounds[0].1.contains("cancelled at the server"),
        "{}",
        rounds[0].1
    );
    assert!(r.exchange(token).is_none());
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn a_withdrawn_question_is_cancelled_at_a_legacy_host_or_dropped_from_its_round() {
    let t0 = Instant::now();
    let (mut r, _token, _round) = call_in_a_round(t0);
    r.asked_host(5, 42);
    assert_eq!(r.withdrawn(5), Withdrawn::AtHost(42));
    assert_eq!(r.withdrawn(5), Withdrawn::Unknown, "once");
    match r.withdrawn(11) {
        Withdrawn::FromRound(notice) => assert!(notice.contains("elicitation"), "{notice}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.withdrawn(11), Withdrawn::Unknown);
}

#[test]
fn in_a_shared_session_a_question_is_never_guessed_nor_roots_asked() {
    let mut r = relay();
    let one = open(&mut r, 1, Method::CallTool, &call("a"), "a");
    let roots = r.never_asked(ServerMethod::ListRoots, true);
    assert!(
        matches!(roots, Some(Whose::PutToNone { level: "info", .. })),
        "{roots:?}"
    );
    assert_eq!(r.never_asked(ServerMethod::ListRoots, false), None);
    assert_eq!(r.never_asked(ServerMethod::Elicit, true), None);
    assert_eq!(r.whose_question(None, true, None), Whose::Exchange(one));
    open(&mut r, 2, Method::GetPrompt, &json!({"name": "p"}), "b");
    match r.whose_question(None, true, None) {
        Whose::PutToNone { level, why } => {
            assert_eq!(level, "warning");
            assert!(why.starts_with("2 requests"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    // Unshared, the oldest.
    assert_eq!(r.whose_question(None, false, None), Whose::Exchange(one));
    let (handles, questions) = r.close();
    assert_eq!((handles.len(), questions.len()), (2, 0));
    assert_eq!(r.whose_question(None, false, None), Whose::Nobody);
}

#[test]
fn a_question_that_names_its_request_goes_to_that_exchange_even_in_a_shared_session() {
    let mut r = relay();
    let one = open(&mut r, 1, Method::CallTool, &call("a"), "a");
    let two = open(&mut r, 2, Method::CallTool, &call("b"), "b");
    let named = |token| Some(Related::Exchange(token));
    // Two hosts the relay cannot tell apart, both waiting: by relation, each its own.
    assert_eq!(
        r.whose_question(None, true, named(two)),
        Whose::Exchange(two)
    );
    assert_eq!(
        r.whose_question(None, true, named(one)),
        Whose::Exchange(one)
    );
    // A request that is no exchange of the host's (the bridge's own): nobody's here.
    let other = Some(Related::Other);
    assert_eq!(r.whose_question(None, true, other), Whose::Nobody);
    // An exchange that is over: nobody's either.
    assert_eq!(r.whose_question(None, true, named(99)), Whose::Nobody);
    // Without a relation, still never a guess.
    assert!(matches!(
        r.whose_question(None, true, None),
        Whose::PutToNone { .. }
    ));
    // A legacy host's question is about the request named, not the oldest.
    assert_eq!(r.about(None, named(two)), Some(id(2)));
    assert_eq!(
        r.about(None, other),
        Some(id(1)),
        "not the host's: the oldest"
    );
}

#[test]
fn a_legacy_server_hears_of_the_log_level_when_it_changes_and_after_a_restart() {
    let mut r = relay();
    assert!(r.log_level(LogLevel::Info));
    assert!(!r.log_level(LogLevel::Info), "the same level again");
    assert!(r.log_level(LogLevel::Debug));
    r.forget_log_level();
    assert!(
        r.log_level(LogLevel::Debug),
        "a restarted server knows no level"
    );
}

#[test]
fn a_legacy_hosts_question_is_about_the_oldest_request_that_may_be_asked() {
    let mut r = relay();
    assert_eq!(r.about(None, None), None);
    open(&mut r, 1, Method::ListTools, &json!({}), "list");
    assert_eq!(r.about(None, None), None, "a list is asked nothing");
    let read = json!({"uri": "file:///a"});
    open(&mut r, 2, Method::ReadResource, &read, "read");
    open(&mut r, 3, Method::CallTool, &call("x"), "call");
    assert_eq!(r.about(None, None), Some(id(2)));
}
