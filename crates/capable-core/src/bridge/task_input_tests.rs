//! A legacy task's questions for a 2026-07-28 host, scripted on a made-up clock: the
//! fetches the machine asks the shell for and their bounds, the questions it keeps, and
//! what the host's `tasks/get` and `tasks/update` get.

use serde_json::json;

use super::*;
use crate::task_bridge::RELATED_TASK;

const BOUND: Duration = Duration::from_secs(30);

/// Waiters are names: what comes out says whose it is.
type Test = TaskInput<&'static str>;

fn payload(value: Value) -> Payload {
    Payload::from_json(value.to_string().into_bytes())
}

/// The host's look at task `id`, the server saying `status`: what the host sees.
fn look(m: &mut Test, id: &str, status: &str, now: Instant) -> Value {
    let task = json!({"resultType": "complete", "taskId": id, "status": status});
    m.handle_task(payload(task), now).decode().expect("JSON")
}

/// A question of the server's (`token`, answered at `waiter`), naming task `task`.
fn question(token: u64, task: Option<&str>, waiter: &'static str) -> Question<&'static str> {
    let mut params = json!({"message": format!("question {token}")});
    if let Some(task) = task {
        params["_meta"] = json!({RELATED_TASK: {"taskId": task}});
    }
    Question {
        token,
        method: ServerMethod::Elicit,
        params,
        waiter,
    }
}

/// The host's `tasks/update` of task `id` with `responses`.
fn update(m: &mut Test, id: &str, responses: Value) -> Result<Value, RpcError> {
    m.handle_update(&payload(json!({"taskId": id, "inputResponses": responses})))
}

/// Everything the machine asks for now: commands, then outcomes (failures by message).
fn drained(m: &mut Test) -> (Vec<Command>, Vec<String>) {
    let commands = std::iter::from_fn(|| m.poll_upstream()).collect();
    let outcomes = std::iter::from_fn(|| m.poll_outcome())
        .map(|o| match o {
            Outcome::Answer { waiter, answer } => format!("{waiter} <- {answer}"),
            Outcome::Fail { waiter, error } => format!("{waiter} failed: {}", error.message),
            Outcome::Notice(notice) => format!("notice: {notice}"),
        })
        .collect();
    (commands, outcomes)
}

fn fetch(token: u64, task_id: &str) -> Command {
    Command::Fetch {
        token,
        task_id: task_id.into(),
    }
}

#[test]
fn a_task_that_needs_input_is_fetched_once_and_its_questions_are_answered_by_the_update() {
    let (mut m, t0) = (Test::new(BOUND), Instant::now());
    let seen = look(&mut m, "t1", "input_required", t0);
    assert_eq!(seen["status"], "working", "until the questions come");
    assert_eq!(drained(&mut m).0, [fetch(1, "t1")]);
    look(&mut m, "t1", "input_required", t0);
    assert_eq!(drained(&mut m), (vec![], vec![]), "fetched once");

    m.handle_question(question(7, Some("t1"), "a"), false)
        .unwrap();
    // Naming no task, while a request of the host's could take it: not the task's.
    let plain = m
        .handle_question(question(8, None, "b"), false)
        .unwrap_err();
    m.handle_question(plain, true).unwrap();
    let seen = look(&mut m, "t1", "working", t0);
    assert_eq!(seen["status"], "input_required");
    assert_eq!(
        seen["inputRequests"]["q1"]["params"]["message"],
        "question 7"
    );
    assert_eq!(seen["inputRequests"]["q2"]["method"], "elicitation/create");

    let answer = update(&mut m, "t1", json!({"q1": {"action": "accept"}, "q9": {}}));
    assert_eq!(answer.unwrap(), json!({"resultType": "complete"}));
    let (commands, outcomes) = drained(&mut m);
    assert!(commands.is_empty());
    assert_eq!(outcomes[0], r#"a <- {"action":"accept"}"#);
    assert!(
        outcomes[1].contains("answered q9, which it does not ask"),
        "{outcomes:?}"
    );
    let seen = look(&mut m, "t1", "input_required", t0);
    assert_eq!(
        seen["inputRequests"].as_object().unwrap().len(),
        1,
        "q2 open"
    );

    // The server withdraws q2: the host is asked nothing, and waits.
    assert!(m.handle_withdrawn(8) && !m.handle_withdrawn(8));
    assert!(drained(&mut m).1[0].contains("withdrew a question"));
    assert_eq!(
        look(&mut m, "t1", "input_required", t0)["status"],
        "working"
    );
}

#[test]
fn a_fetch_that_ends_fails_what_is_open_and_the_next_input_required_fetches_again() {
    let (mut m, t0) = (Test::new(BOUND), Instant::now());
    look(&mut m, "t1", "input_required", t0);
    look(&mut m, "t2", "input_required", t0);
    assert_eq!(drained(&mut m).0, [fetch(1, "t1"), fetch(2, "t2")]);
    m.handle_question(question(7, Some("t1"), "a"), false)
        .unwrap();
    // Two tasks fetched: a question naming none is neither's.
    assert!(m.handle_question(question(8, None, "b"), true).is_err());

    m.handle_upstream(1, t0);
    let (_, outcomes) = drained(&mut m);
    assert_eq!(
        outcomes,
        ["a failed: the task's tasks/result ended before the host answered"]
    );
    m.handle_upstream(1, t0);
    assert_eq!(drained(&mut m), (vec![], vec![]), "told once");
    look(&mut m, "t1", "input_required", t0);
    assert_eq!(drained(&mut m).0, [fetch(3, "t1")]);
    // An ended task is shown as the server says, and fetches nothing.
    let seen = look(&mut m, "t2", "completed", t0);
    assert_eq!(
        (seen["status"].as_str(), drained(&mut m).0),
        (Some("completed"), vec![])
    );
}

#[test]
fn a_fetch_past_its_bound_is_abandoned_and_its_questions_fail() {
    let (mut m, t0) = (Test::new(BOUND), Instant::now());
    assert_eq!(m.poll_timeout(), None);
    look(&mut m, "t1", "input_required", t0);
    look(&mut m, "t2", "input_required", t0 + Duration::from_secs(5));
    drained(&mut m);
    m.handle_question(question(7, Some("t1"), "a"), false)
        .unwrap();
    assert_eq!(m.poll_timeout(), Some(t0 + BOUND));

    m.handle_timeout(t0 + BOUND - Duration::from_millis(1));
    assert_eq!(drained(&mut m), (vec![], vec![]), "not yet");
    m.handle_timeout(t0 + BOUND);
    let (commands, outcomes) = drained(&mut m);
    assert_eq!(commands, [Command::Abandon { token: 1 }]);
    assert_eq!(
        outcomes,
        ["a failed: the host did not answer the task's questions in time"]
    );
    assert_eq!(
        m.poll_timeout(),
        Some(t0 + Duration::from_secs(5) + BOUND),
        "t2's"
    );
    // Its end, told late by the shell, is nothing more.
    m.handle_upstream(1, t0 + BOUND);
    assert_eq!(drained(&mut m), (vec![], vec![]));
}

#[test]
fn an_update_without_its_fields_or_of_a_task_that_asks_nothing_is_refused() {
    let (mut m, t0) = (Test::new(BOUND), Instant::now());
    let refused = m
        .handle_update(&payload(json!({"taskId": "t1"})))
        .unwrap_err();
    assert_eq!(refused.code, codes::INVALID_PARAMS);
    assert!(
        refused.message.contains("inputResponses"),
        "{}",
        refused.message
    );
    look(&mut m, "t1", "input_required", t0);
    let refused = update(&mut m, "t1", json!({"q1": {}})).unwrap_err();
    assert_eq!(refused.code, codes::INVALID_PARAMS);
    assert!(
        refused.message.contains("t1 asks nothing now"),
        "{}",
        refused.message
    );
    // A question of a task nobody fetches is given back, as it came.
    let back = m.handle_question(question(9, Some("t9"), "z"), true);
    assert_eq!(back, Err(question(9, Some("t9"), "z")));
    // Closing gives every waiter still open.
    m.handle_question(question(7, Some("t1"), "a"), false)
        .unwrap();
    assert_eq!(m.close(), ["a"]);
    assert_eq!(m.poll_timeout(), None);
}
