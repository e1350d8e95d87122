//! The task carry, one scripted test per kind of request, on a made-up clock: the
//! commands it asks the shell to run, in order, what it makes of their outcomes, and
//! what the host gets.

use serde_json::json;

use super::*;

const BOUND: Duration = Duration::from_secs(30);

/// The shell's errors are names: what comes out says which it was.
type Test = TaskCarry<&'static str>;

fn params(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn carry(carry: Carry, method: Method, p: Value, known: Known) -> Test {
    TaskCarry::new(carry, method, params(p), known)
}

/// A carry of `how` for host request `method` (`p`), nothing known.
fn plain(how: Carry, method: Method, p: Value) -> Test {
    carry(how, method, p, Known::new(BOUND))
}

/// `tasks/get` of `id`, as the carry's `token`th command.
fn get(token: u64, id: &str) -> Command {
    Command::GetTask {
        token,
        task_id: id.into(),
    }
}

/// The answer `value`, as a command's outcome.
fn answer(value: Value) -> Upstream<&'static str> {
    Upstream::Answer(payload(value))
}

fn task(id: &str, status: &str) -> Task {
    serde_json::from_value(json!({"taskId": id, "status": status, "pollInterval": 100}))
        .expect("a task")
}

/// `tasks/get`'s outcome: task `id` is `status`.
fn described(id: &str, status: &str) -> Upstream<&'static str> {
    Upstream::Task(Box::new(task(id, status)))
}

fn payload(value: Value) -> Payload {
    Payload::from_json(value.to_string().into_bytes())
}

/// The next command, which must be there.
fn next(c: &mut Test) -> Command {
    assert!(c.poll_done().is_none(), "not over yet");
    c.poll_upstream().expect("a command")
}

/// The host's answer, which must be there and a success.
fn answered(c: &mut Test) -> Value {
    assert_eq!(c.poll_upstream(), None, "nothing more is sent");
    match c.poll_done() {
        Some(Ok(answer)) => answer.decode().expect("JSON"),
        other => panic!("expected an answer, got {other:?}"),
    }
}

/// The host's error, which must be a refusal.
fn refused(c: &mut Test) -> RpcError {
    assert_eq!(c.poll_upstream(), None, "nothing more is sent");
    match c.poll_done() {
        Some(Err(Failure::Refused(error))) => error,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn rpc_failure(message: &str) -> Upstream<&'static str> {
    let rpc = RpcError {
        code: codes::INVALID_PARAMS,
        message: message.to_owned(),
        data: None,
    };
    Upstream::Failed {
        rpc: Some(rpc),
        error: "rpc",
    }
}

#[test]
fn a_task_request_without_a_task_id_is_refused_before_anything_is_sent() {
    for (how, method) in [
        (Carry::GetForLegacy, Method::GetTask),
        (Carry::ResultForLegacy, Method::TaskResult),
        (Carry::CancelForLegacy, Method::CancelTask),
        (Carry::GetForModern, Method::GetTask),
        (Carry::CancelForModern, Method::CancelTask),
    ] {
        let mut c = plain(how, method, json!({}));
        let error = refused(&mut c);
        assert_eq!(error.code, codes::INVALID_PARAMS, "{how:?}");
        assert!(error.message.contains("needs params.taskId"), "{error:?}");
    }
}

#[test]
fn a_legacy_tasks_result_waits_for_the_end_within_its_bound_and_names_its_task() {
    let t0 = Instant::now();
    let mut c = plain(
        Carry::ResultForLegacy,
        Method::TaskResult,
        json!({"taskId": "t1"}),
    );
    assert_eq!(next(&mut c), get(1, "t1"));
    assert_eq!(c.poll_timeout(), None, "no wait under way yet");
    c.handle_upstream(1, described("t1", "working"), t0);
    let awaited = Command::AwaitResult {
        token: 2,
        task: task("t1", "working"),
    };
    assert_eq!(next(&mut c), awaited);
    assert_eq!(
        c.poll_timeout(),
        Some(t0 + BOUND),
        "bounded from when it starts"
    );
    c.handle_timeout(t0 + BOUND - Duration::from_millis(1));
    assert!(c.poll_done().is_none(), "not before its bound");
    let result = json!({"content": [{"type": "text", "text": "done"}]});
    c.handle_upstream(2, answer(result), t0 + Duration::from_secs(2));
    let answer = answered(&mut c);
    assert_eq!(answer["content"][0]["text"], "done");
    assert_eq!(
        answer["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], "t1",
        "the result names the task it is of"
    );
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn a_legacy_tasks_result_past_its_bound_says_the_task_goes_on_and_drops_a_late_answer() {
    let t0 = Instant::now();
    let mut c = plain(
        Carry::ResultForLegacy,
        Method::TaskResult,
        json!({"taskId": "t1"}),
    );
    next(&mut c);
    c.handle_upstream(1, described("t1", "working"), t0);
    assert!(matches!(
        next(&mut c),
        Command::AwaitResult { token: 2, .. }
    ));
    c.handle_timeout(t0 + BOUND);
    let error = refused(&mut c);
    assert_eq!(error.code, codes::INTERNAL_ERROR);
    let goes_on = "task t1 did not end within 30s; it goes on at the server";
    assert!(error.message.contains(goes_on), "{error:?}");
    // The wait's answer after the end changes nothing.
    c.handle_upstream(2, answer(json!({"content": []})), t0 + BOUND * 2);
    assert!(c.poll_done().is_none() && c.poll_upstream().is_none());
}

#[test]
fn a_legacy_tasks_list_asks_about_each_task_at_the_server_in_order_and_leaves_out_refused_ones() {
    let mut known = Known::new(BOUND);
    known.started = vec![
        Listed::AtServer("a".into()),
        Listed::Settled(json!({"taskId": "bridge-1", "status": "completed"})),
        Listed::AtServer("gone".into()),
        Listed::AtServer("b".into()),
    ];
    let t0 = Instant::now();
    let mut c = carry(Carry::ListForLegacy, Method::ListTasks, json!({}), known);
    // One at a time, oldest first.
    assert_eq!(next(&mut c), get(1, "a"));
    c.handle_upstream(1, described("a", "working"), t0);
    assert_eq!(next(&mut c), get(2, "gone"));
    c.handle_upstream(2, rpc_failure("unknown task"), t0);
    assert_eq!(next(&mut c), get(3, "b"));
    c.handle_upstream(3, described("b", "completed"), t0);
    let answer = answered(&mut c);
    let ids: Vec<_> = answer["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["taskId"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(ids, ["a", "bridge-1", "b"]);
    assert_eq!(
        answer["tasks"][0]["pollInterval"], 100.0,
        "in the legacy form"
    );
}

#[test]
fn a_legacy_tasks_list_is_one_page_and_a_cursor_it_never_gave_is_invalid() {
    let mut known = Known::new(BOUND);
    known.started = vec![Listed::Settled(json!({"taskId": "bridge-1"}))];
    let mut c = carry(
        Carry::ListForLegacy,
        Method::ListTasks,
        json!({}),
        known.clone(),
    );
    let answer = answered(&mut c);
    assert!(answer.get("nextCursor").is_none(), "{answer}");
    let paged = json!({"cursor": "p2"});
    let mut c = carry(Carry::ListForLegacy, Method::ListTasks, paged, known);
    assert_eq!(c.poll_upstream(), None, "nothing is asked");
    match c.poll_done() {
        Some(Err(Failure::Refused(e))) => assert_eq!(e.code, codes::INVALID_PARAMS, "{e:?}"),
        other => panic!("an invalid cursor: {other:?}"),
    }
}

#[test]
fn a_legacy_tasks_list_ends_with_a_failure_that_is_not_the_servers_refusal() {
    let mut known = Known::new(BOUND);
    known.started = vec![Listed::AtServer("a".into()), Listed::AtServer("b".into())];
    let mut c = carry(Carry::ListForLegacy, Method::ListTasks, json!({}), known);
    assert_eq!(next(&mut c), get(1, "a"));
    let closed = Upstream::Failed {
        rpc: None,
        error: "closed",
    };
    c.handle_upstream(1, closed, Instant::now());
    assert_eq!(c.poll_upstream(), None, "b is not asked about");
    assert!(matches!(
        c.poll_done(),
        Some(Err(Failure::Upstream("closed")))
    ));
}

#[test]
fn a_legacy_task_call_goes_without_task_and_the_host_gets_the_task_it_asked_for() {
    let call = json!({"name": "slow", "arguments": {}, "task": {"ttl": 1000}});
    let mut c = plain(Carry::CallForLegacy { asked: true }, Method::CallTool, call);
    let sent = Command::Request {
        token: 1,
        method: Method::CallTool,
        params: params(json!({"name": "slow", "arguments": {}})),
        // The host's own request, with its options.
        host_options: true,
    };
    assert_eq!(next(&mut c), sent);
    let made = json!({"resultType": "task", "taskId": "t9", "status": "working", "ttlMs": 1000});
    c.handle_upstream(1, answer(made), Instant::now());
    let answer = answered(&mut c);
    assert_eq!(answer["task"]["taskId"], "t9");
    assert_eq!(answer["task"]["ttl"], 1000, "in the legacy form");
    assert!(answer.get("resultType").is_none());
}

#[test]
fn a_task_the_legacy_host_did_not_ask_for_is_waited_for_and_a_malformed_one_is_said() {
    let call = json!({"name": "slow", "arguments": {}});
    let how = Carry::CallForLegacy { asked: false };
    let mut c = plain(how, Method::CallTool, call.clone());
    assert!(matches!(next(&mut c), Command::Request { token: 1, .. }));
    let made = json!({"resultType": "task", "taskId": "t9", "status": "working"});
    c.handle_upstream(1, answer(made), Instant::now());
    let Command::WaitForHost { token: 2, task } = next(&mut c) else {
        panic!("the wait");
    };
    assert_eq!(task.task_id, "t9");
    let result = json!({"content": [], "isError": false});
    c.handle_upstream(2, answer(result.clone()), Instant::now());
    assert_eq!(answered(&mut c), result, "what the call would have given");

    let mut c = plain(how, Method::CallTool, call);
    next(&mut c);
    let claims = json!({"resultType": "task", "status": 3});
    c.handle_upstream(1, answer(claims), Instant::now());
    assert!(matches!(c.poll_done(), Some(Err(Failure::Malformed(_)))));
}

#[test]
fn a_modern_call_learns_an_unknown_tools_support_and_asks_for_a_task_only_where_taken() {
    for (task_calls, asks) in [(true, true), (false, false)] {
        let mut known = Known::new(BOUND);
        known.task_calls = task_calls;
        let how = Carry::CallForModern { declared: true };
        let call = json!({"name": "slow", "arguments": {}});
        let mut c = carry(how, Method::CallTool, call, known);
        let learn = Command::LearnSupport {
            token: 1,
            name: "slow".into(),
        };
        assert_eq!(next(&mut c), learn, "the tools listed first");
        let optional = Upstream::Support(Some(TaskSupport::Optional));
        c.handle_upstream(1, optional, Instant::now());
        let Command::Request {
            token: 2, params, ..
        } = next(&mut c)
        else {
            panic!("the call");
        };
        let asked = params.contains_key("task");
        assert_eq!(asked, asks, "task calls taken: {task_calls}");
        let made = json!({"task": {"taskId": "t2", "status": "working", "ttl": null}});
        c.handle_upstream(2, answer(made), Instant::now());
        let answer = answered(&mut c);
        assert_eq!(
            (&answer["resultType"], &answer["taskId"]),
            (&json!("task"), &json!("t2"))
        );
    }
}

#[test]
fn a_modern_call_without_the_extension_is_a_call_without_tasks_and_known_support_is_not_relisted() {
    let mut known = Known::new(BOUND);
    known.support = Some(TaskSupport::Required);
    let how = Carry::CallForModern { declared: false };
    let call = json!({"name": "slow", "arguments": {"n": 1}});
    let mut c = carry(how, Method::CallTool, call.clone(), known);
    let without = Command::CallWithoutTasks {
        token: 1,
        params: params(call),
    };
    assert_eq!(next(&mut c), without, "no listing first");
    let result = json!({"content": []});
    c.handle_upstream(1, answer(result.clone()), Instant::now());
    assert_eq!(answered(&mut c), result);
}

#[test]
fn a_modern_tasks_get_brings_the_outcome_of_a_finished_task_inline() {
    // Completed: its result; failed at the server: its error; working: nothing fetched.
    for (status, fetched) in [
        ("completed", Some(answer(json!({"content": []})))),
        ("failed", Some(rpc_failure("it broke"))),
        ("working", None),
    ] {
        let mut c = plain(
            Carry::GetForModern,
            Method::GetTask,
            json!({"taskId": "t3"}),
        );
        assert_eq!(next(&mut c), get(1, "t3"));
        c.handle_upstream(1, described("t3", status), Instant::now());
        if let Some(fetched) = fetched {
            let result = Command::Request {
                token: 2,
                method: Method::TaskResult,
                params: params(json!({"taskId": "t3"})),
                // The bridge's own request.
                host_options: false,
            };
            assert_eq!(next(&mut c), result, "tasks/result of a finished task");
            c.handle_upstream(2, fetched, Instant::now());
        }
        let answer = answered(&mut c);
        assert_eq!(answer["resultType"], "complete");
        assert_eq!(answer["pollIntervalMs"], 100.0, "in the 2026-07-28 form");
        match status {
            "completed" => assert_eq!(answer["result"], json!({"content": []})),
            "failed" => assert_eq!(answer["error"]["message"], "it broke"),
            _ => assert!(answer.get("result").is_none() && answer.get("error").is_none()),
        }
    }
}

#[test]
fn a_legacy_cancel_is_followed_by_the_task_as_it_is_and_a_stray_token_changes_nothing() {
    let cancel = Command::CancelTask {
        token: 1,
        task_id: "t4".into(),
    };
    let asked = json!({"taskId": "t4"});
    let mut c = plain(Carry::CancelForLegacy, Method::CancelTask, asked.clone());
    assert_eq!(next(&mut c), cancel);
    c.handle_upstream(8, Upstream::Cancelled, Instant::now());
    assert!(c.poll_done().is_none(), "not this command's outcome");
    c.handle_upstream(1, Upstream::Cancelled, Instant::now());
    assert_eq!(next(&mut c), get(2, "t4"), "then tasks/get");
    c.handle_upstream(2, described("t4", "cancelled"), Instant::now());
    let answer = answered(&mut c);
    assert_eq!(answer["status"], "cancelled");
    assert!(answer.get("resultType").is_none(), "in the legacy form");

    let mut c = plain(Carry::CancelForModern, Method::CancelTask, asked);
    assert_eq!(next(&mut c), cancel);
    c.handle_upstream(1, Upstream::Cancelled, Instant::now());
    assert_eq!(answered(&mut c), json!({}));
}

#[test]
fn a_legacy_tools_list_marks_tools_that_say_nothing_of_tasks_optional() {
    let mut c = plain(Carry::ListToolsForLegacy, Method::ListTools, json!({}));
    let Command::Request {
        token: 1, method, ..
    } = next(&mut c)
    else {
        panic!("tools/list");
    };
    assert_eq!(method, Method::ListTools);
    let list = json!({"tools": [{"name": "a", "inputSchema": {}},
        {"name": "b", "inputSchema": {}, "execution": {"taskSupport": "forbidden"}}]});
    c.handle_upstream(1, answer(list), Instant::now());
    let answer = answered(&mut c);
    assert_eq!(answer["tools"][0]["execution"]["taskSupport"], "optional");
    assert_eq!(answer["tools"][1]["execution"]["taskSupport"], "forbidden");
}

#[test]
fn an_outcome_the_command_does_not_have_ends_the_carry_with_an_error() {
    let mut c = plain(
        Carry::GetForLegacy,
        Method::GetTask,
        json!({"taskId": "t5"}),
    );
    assert_eq!(next(&mut c), get(1, "t5"));
    c.handle_upstream(1, Upstream::Cancelled, Instant::now());
    assert_eq!(refused(&mut c).code, codes::INTERNAL_ERROR);
}
