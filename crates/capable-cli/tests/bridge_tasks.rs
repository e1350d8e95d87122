//! `capable bridge`, tasks across eras: a 2025-11-25 host's tasks carried out at a
//! 2026-07-28 server with the tasks extension and the other way round (started,
//! polled, fetched, listed, cancelled, a task's question put to the host — as a
//! request to a 2025-11-25 host, in `tasks/get` to a 2026-07-28 one); and the
//! cases past the usual path: a 2025-11-25 host's task call that the 2026-07-28 server ran at once (a task of the bridge's), a
//! task that fails, a `tasks/result` that outlives the bridge's bound, a task that
//! expired before `tasks/list`, and a 2026-07-28 host without the tasks extension
//! calling a tool that requires a task at a 2025-11-25 server. Against the fixture's
//! `tasks` and `modern-tasks` profiles (server-everything's tasks: `bridge_task_peers.rs`); every message the bridge writes is validated as a
//! server message of the host's version.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use bridge_support::Bridge;
use capable::internal::ProtocolVersion;
use capable_test_support::assert_valid_result;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
const TASKS: &str = "io.modelcontextprotocol/tasks";
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A bridge with `flags` in front of the fixture's `profile`.
fn bridge(flags: &[&str], profile: &str) -> Bridge {
    Bridge::before_fixture(flags, profile)
}

/// A request of a 2026-07-28 host with `meta` as its `_meta`.
fn modern(b: &mut Bridge, id: i64, method: &str, mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    b.request(id, method, params)
}

/// The task ids and statuses of a legacy `tasks/list`.
fn listed(list: &Value) -> Vec<(Value, Value)> {
    list["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["taskId"].clone(), t["status"].clone()))
        .collect()
}

#[test]
fn a_2025_11_25_hosts_tasks_are_carried_out_at_a_2026_server() {
    let mut b = bridge(&[], "modern-tasks");
    let init = b.initialize(V, json!({}));
    assert_valid_result(V, "InitializeResult", &init);
    // What the bridge can carry out, in 2025-11-25 terms.
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    let tools = b.request(1, "tools/list", json!({}));
    assert_valid_result(V, "ListToolsResult", &tools);
    for tool in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["execution"]["taskSupport"], "optional", "{tool}");
    }

    // A task, asked for: the host gets it, polls it, and fetches its result.
    let call = b.request(
        2,
        "tools/call",
        json!({"name": "report", "task": {"ttl": 60000}}),
    );
    assert_valid_result(V, "CreateTaskResult", &call);
    let task = &call["result"]["task"];
    assert_eq!(
        (&task["status"], &task["pollInterval"]),
        (&json!("working"), &json!(100.0))
    );
    let id = task["taskId"].as_str().unwrap().to_owned();
    let get = b.request(3, "tasks/get", json!({"taskId": id}));
    assert_valid_result(V, "GetTaskResult", &get);
    assert_eq!(get["result"]["status"], "working");
    assert!(
        get["result"].get("result").is_none(),
        "the outcome is tasks/result's"
    );
    // `tasks/result` waits: the bridge polls the server's tasks/get to the end.
    let result = b.request(4, "tasks/result", json!({"taskId": id}));
    assert_valid_result(V, "GetTaskPayloadResult", &result);
    assert_valid_result(V, "CallToolResult", &result);
    assert_eq!(result["result"]["content"][0]["text"], "report ready");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    assert_eq!(
        b.sent_upstream_count_until("tasks/get", 2),
        2,
        "one look, then the poll that saw it end"
    );
    // What the bridge saw while it waited, the host heard.
    let heard = b
        .seen
        .iter()
        .find(|m| m["method"] == "notifications/tasks/status")
        .expect("a status while tasks/result waited");
    assert_eq!(
        (&heard["params"]["taskId"], &heard["params"]["status"]),
        (&json!(id), &json!("completed"))
    );
    let call_sent = b.first_sent_upstream("tools/call");
    assert!(
        call_sent["params"].get("task").is_none(),
        "no 2025-11-25 member upstream"
    );
    assert_eq!(
        call_sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"],
        json!({TASKS: {}}),
        "the bridge declares the extension for a 2025-11-25 host"
    );

    // Cancelled: the task as it is after.
    let stall = b.request(5, "tools/call", json!({"name": "stall", "task": {}}));
    let stall_id = stall["result"]["task"]["taskId"].clone();
    let cancel = b.request(6, "tasks/cancel", json!({"taskId": stall_id}));
    assert_valid_result(V, "CancelTaskResult", &cancel);
    assert_eq!(cancel["result"]["status"], "cancelled");
    assert_eq!(b.sent_upstream_count_until("tasks/cancel", 1), 1);

    // A call that asked for no task gets the tool's result, whatever the server made.
    let plain = b.request(7, "tools/call", json!({"name": "report"}));
    assert_valid_result(V, "CallToolResult", &plain);
    assert_eq!(plain["result"]["content"][0]["text"], "report ready");

    // The tasks the host started, as the server has them now (2026-07-28 lists none:
    // the bridge keeps them); the one the bridge waited for is not the host's.
    let list = b.request(8, "tasks/list", json!({}));
    assert_valid_result(V, "ListTasksResult", &list);
    let listed: Vec<(Value, Value)> = list["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["taskId"].clone(), t["status"].clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (json!(id), json!("completed")),
            (stall_id, json!("cancelled"))
        ]
    );
    assert_eq!(b.sent_upstream_count("tasks/list"), 0);
}

#[test]
fn a_2026_tasks_question_reaches_a_2025_11_25_host_while_its_result_waits() {
    let mut b = bridge(&[], "modern-tasks");
    b.initialize(V, json!({"elicitation": {}}));
    let call = b.request(1, "tools/call", json!({"name": "approve", "task": {}}));
    let id = call["result"]["task"]["taskId"].clone();
    b.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": id}}));
    // The task's inputRequests come to the host as the request its era has…
    let ask = loop {
        let m = b.next();
        if m["method"] == "elicitation/create" {
            break m;
        }
        b.seen.push(m);
    };
    assert_eq!(ask["params"]["message"], "Approve the report?");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id,
        "the question says whose it is"
    );
    let waiting = b
        .seen
        .iter()
        .find(|m| m["method"] == "notifications/tasks/status");
    assert_eq!(
        waiting.expect("the host heard the task waits")["params"]["status"],
        "input_required"
    );
    b.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"approve": true}}}));
    // …its answer goes back with tasks/update, and the result comes once the task ends.
    let result = b.answer(2);
    assert_valid_result(V, "CallToolResult", &result);
    assert_eq!(
        result["result"]["content"][0]["text"],
        r#"approved: {"action":"accept","content":{"approve":true}}"#
    );
    let update = b.first_sent_upstream("tasks/update");
    assert_eq!(update["params"]["taskId"], id);
    assert_eq!(
        update["params"]["inputResponses"]["approve"]["content"],
        json!({"approve": true})
    );
}

#[test]
fn a_2026_hosts_tasks_are_carried_out_at_a_2025_11_25_server() {
    let mut b = bridge(&[], "tasks");
    b.version = MODERN;
    let with_tasks = Bridge::meta(json!({"extensions": {TASKS: {}}}));
    let discover = modern(&mut b, 1, "server/discover", json!({}), with_tasks.clone());
    assert_valid_result(MODERN, "DiscoverResult", &discover);
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(capabilities["extensions"], json!({TASKS: {}}));
    assert!(
        capabilities.get("tasks").is_none(),
        "2026-07-28 has no tasks capability"
    );

    // The server runs the call as a task: the host gets it in its era's form.
    let call = modern(
        &mut b,
        2,
        "tools/call",
        json!({"name": "report"}),
        with_tasks.clone(),
    );
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    assert_eq!(call["result"]["pollIntervalMs"], 100.0);
    assert_eq!(call["result"]["ttlMs"], 60000);
    let id = call["result"]["taskId"].clone();
    let asked = b.first_sent_upstream("tools/call");
    assert_eq!(
        asked["params"]["task"],
        json!({}),
        "the tool allows a task: asked for"
    );

    let get = |b: &mut Bridge, n: i64| {
        modern(
            b,
            n,
            "tasks/get",
            json!({"taskId": id}),
            Bridge::meta(json!({"extensions": {TASKS: {}}})),
        )
    };
    let first = get(&mut b, 3);
    assert_eq!(
        (&first["result"]["resultType"], &first["result"]["status"]),
        (&json!("complete"), &json!("working"))
    );
    let done = get(&mut b, 4);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"],
        "report ready"
    );
    assert_eq!(
        b.sent_upstream_count_until("tasks/result", 1),
        1,
        "fetched once it ended"
    );

    let stall = modern(
        &mut b,
        5,
        "tools/call",
        json!({"name": "stall"}),
        with_tasks.clone(),
    );
    let stall_id = stall["result"]["taskId"].clone();
    let cancel = modern(
        &mut b,
        6,
        "tasks/cancel",
        json!({"taskId": stall_id}),
        with_tasks.clone(),
    );
    assert_eq!(cancel["result"]["resultType"], "complete", "{cancel}");
    let after = modern(
        &mut b,
        7,
        "tasks/get",
        json!({"taskId": stall_id}),
        with_tasks.clone(),
    );
    assert_eq!(after["result"]["status"], "cancelled");

    // tasks/update of a task that asks nothing: refused with why, nothing sent.
    let update = json!({"taskId": stall_id, "inputResponses": {"q1": {}}});
    let refused = modern(&mut b, 8, "tasks/update", update, with_tasks);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("asks nothing"), "{message}");

    // A host that did not declare the extension gets no task.
    let plain = modern(
        &mut b,
        9,
        "tools/call",
        json!({"name": "report"}),
        Bridge::meta(json!({})),
    );
    assert_valid_result(MODERN, "CallToolResult", &plain);
    assert_eq!(plain["result"]["content"][0]["text"], "report ready");
    assert_eq!(b.sent_upstream_count("tasks/update"), 0);
}

/// A 2025-11-25 task that needs input asks on `tasks/result`, which a 2026-07-28 host
/// never calls: the bridge calls it, the host reads the question in `tasks/get` and
/// answers with `tasks/update`, and the task completes with the answer.
#[test]
fn a_2025_11_25_tasks_question_reaches_a_2026_host_in_tasks_get_and_its_update_answers_it() {
    let mut b = bridge(&[], "tasks");
    b.version = MODERN;
    let meta = || Bridge::meta(json!({"elicitation": {}, "extensions": {TASKS: {}}}));
    let call = modern(&mut b, 1, "tools/call", json!({"name": "approve"}), meta());
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    let id = call["result"]["taskId"].clone();
    let get = |b: &mut Bridge, n: i64| modern(b, n, "tasks/get", json!({"taskId": id}), meta());

    // The server says input_required: the bridge opens tasks/result, and until the
    // question is here the host is told the task works on.
    let first = get(&mut b, 2);
    assert_eq!(first["result"]["status"], "working", "{first}");
    assert!(first["result"].get("inputRequests").is_none());
    b.until_sent_upstream("tasks/result");
    let mut asking = Value::Null;
    for n in 3..200 {
        let got = get(&mut b, n);
        if got["result"]["status"] == "input_required" {
            asking = got;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let question = &asking["result"]["inputRequests"]["q1"];
    assert_eq!(question["method"], "elicitation/create", "{asking}");
    assert_eq!(question["params"]["message"], "Approve the report?");
    assert_eq!(question["params"]["_meta"][RELATED_TASK]["taskId"], id);

    // An answer to a key it does not ask is ignored; the one it asks is the server's.
    let answer = json!({"action": "accept", "content": {"approve": true}});
    let update = json!({"taskId": id, "inputResponses": {"q1": answer, "q7": {}}});
    let updated = modern(&mut b, 300, "tasks/update", update, meta());
    assert_eq!(
        updated["result"],
        json!({"resultType": "complete"}),
        "{updated}"
    );
    b.audit_until(|e| e["notice"].as_str().is_some_and(|n| n.contains("q7")));
    let mut done = Value::Null;
    for n in 301..500 {
        let got = get(&mut b, n);
        if got["result"]["status"] != "input_required" && got["result"]["status"] != "working" {
            done = got;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"],
        r#"approved: {"action":"accept","content":{"approve":true}}"#
    );
    assert_eq!(
        b.sent_upstream_count("tasks/update"),
        0,
        "no such method there"
    );

    // Nothing more to answer.
    let again = json!({"taskId": id, "inputResponses": {"q1": {}}});
    let refused = modern(&mut b, 600, "tasks/update", again, meta());
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[test]
fn a_2025_11_25_hosts_task_call_the_2026_server_ran_at_once_is_a_task_of_the_bridges() {
    let mut b = bridge(&[], "modern-tasks");
    b.initialize(V, json!({}));
    // The host asked for a task; the server answered at once: a task, already over.
    let call = b.request(
        1,
        "tools/call",
        json!({"name": "check", "arguments": {"ok": true}, "task": {"ttl": 30000}}),
    );
    assert_valid_result(V, "CreateTaskResult", &call);
    let task = call["result"]["task"].clone();
    assert_eq!(
        (&task["status"], &task["ttl"]),
        (&json!("completed"), &json!(30000)),
        "{call}"
    );
    let id = task["taskId"].as_str().unwrap().to_owned();
    let get = b.request(2, "tasks/get", json!({"taskId": id}));
    assert_valid_result(V, "GetTaskResult", &get);
    assert_eq!(get["result"], task);
    // Its result is the server's, naming the task.
    let result = b.request(3, "tasks/result", json!({"taskId": id}));
    assert_valid_result(V, "CallToolResult", &result);
    assert_eq!(
        result["result"]["content"],
        json!([{"type": "text", "text": "checked"}])
    );
    assert_eq!(result["result"]["isError"], false);
    assert_eq!(
        result["result"]["_meta"][RELATED_TASK]["taskId"],
        id.as_str()
    );
    // Over: it cannot be cancelled.
    let cancel = b.request(4, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancel["error"]["code"], -32602, "{cancel}");

    // A tool error is a failed task; its result is the tool's, as it was.
    let refused = b.request(
        5,
        "tools/call",
        json!({"name": "check", "arguments": {"ok": false}, "task": {}}),
    );
    assert_valid_result(V, "CreateTaskResult", &refused);
    assert_eq!(refused["result"]["task"]["status"], "failed");
    let refused_id = refused["result"]["task"]["taskId"].clone();
    let error = b.request(6, "tasks/result", json!({"taskId": refused_id}));
    assert_valid_result(V, "CallToolResult", &error);
    assert_eq!(
        (
            &error["result"]["isError"],
            &error["result"]["content"][0]["text"]
        ),
        (&json!(true), &json!("the check found a problem"))
    );

    // Listed with the tasks the server made, in the order the host started them.
    let made = b.request(7, "tools/call", json!({"name": "report", "task": {}}));
    let made_id = made["result"]["task"]["taskId"].clone();
    let list = b.request(8, "tasks/list", json!({}));
    assert_valid_result(V, "ListTasksResult", &list);
    assert_eq!(
        listed(&list),
        [
            (json!(id), json!("completed")),
            (refused_id, json!("failed")),
            (made_id, json!("working"))
        ]
    );
    // The bridge answered for its tasks: nothing of theirs reached the server (the
    // trace is in order: the list's one look at the server's task comes after).
    assert_eq!(b.sent_upstream_count_until("tasks/get", 1), 1);
    for method in ["tasks/result", "tasks/cancel"] {
        assert_eq!(b.sent_upstream_count(method), 0, "{method}");
    }
}

#[test]
fn a_2026_task_that_fails_reaches_a_2025_11_25_host_as_its_error() {
    let mut b = bridge(&[], "modern-tasks");
    b.initialize(V, json!({}));
    let call = b.request(1, "tools/call", json!({"name": "fail", "task": {}}));
    let id = call["result"]["task"]["taskId"].clone();
    let result = b.request(2, "tasks/result", json!({"taskId": id}));
    assert_eq!(
        (&result["error"]["code"], &result["error"]["message"]),
        (&json!(-32603), &json!("the report could not be built")),
        "{result}"
    );
    let get = b.request(3, "tasks/get", json!({"taskId": id}));
    assert_valid_result(V, "GetTaskResult", &get);
    assert_eq!(get["result"]["status"], "failed");
    assert!(get["result"].get("error").is_none(), "no 2026-07-28 member");
}

#[test]
fn a_2025_11_25_task_that_fails_reaches_a_2026_host_with_its_error_inline() {
    let mut b = bridge(&[], "tasks");
    b.version = MODERN;
    let meta = Bridge::meta(json!({"extensions": {TASKS: {}}}));
    let call = modern(
        &mut b,
        1,
        "tools/call",
        json!({"name": "fail"}),
        meta.clone(),
    );
    assert_eq!(call["result"]["resultType"], "task", "{call}");
    let id = call["result"]["taskId"].clone();
    let get = json!({"taskId": id});
    let first = modern(&mut b, 2, "tasks/get", get.clone(), meta.clone());
    assert_eq!(first["result"]["status"], "working");
    let failed = modern(&mut b, 3, "tasks/get", get, meta);
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert_eq!(
        failed["result"]["error"],
        json!({"code": -32603, "message": "the report could not be built"})
    );
    assert!(failed["result"].get("result").is_none());
}

#[test]
fn a_tasks_result_past_the_bridges_bound_says_to_ask_again_and_the_task_goes_on() {
    // The bridge's bound on a wait (its --progress-cap) is short: the stalled task
    // outlives it.
    let mut b = bridge(&["--progress-cap", "1s"], "modern-tasks");
    b.initialize(V, json!({}));
    let call = b.request(1, "tools/call", json!({"name": "stall", "task": {}}));
    let id = call["result"]["task"]["taskId"].clone();
    let result = b.request(2, "tasks/result", json!({"taskId": id}));
    let message = result["error"]["message"].as_str().expect("an error");
    assert!(
        message.contains("ask tasks/result again"),
        "the host is told what to do: {message}"
    );
    let get = b.request(3, "tasks/get", json!({"taskId": id}));
    assert_eq!(get["result"]["status"], "working", "not cancelled: {get}");
    // Asking again waits again, at the same task.
    let again = b.request(4, "tasks/result", json!({"taskId": id}));
    assert!(again.get("error").is_some(), "{again}");
    let cancel = b.request(5, "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancel["result"]["status"], "cancelled");
    assert_eq!(
        b.sent_upstream_count_until("tasks/cancel", 1),
        1,
        "only the host's"
    );
}

#[test]
fn a_task_that_expired_is_not_in_the_hosts_tasks_list() {
    let mut b = bridge(&[], "modern-tasks");
    b.initialize(V, json!({}));
    let gone = b.request(1, "tools/call", json!({"name": "fleeting", "task": {}}));
    assert_eq!(gone["result"]["task"]["ttl"], 0, "{gone}");
    let gone_id = gone["result"]["task"]["taskId"].clone();
    let kept = b.request(2, "tools/call", json!({"name": "report", "task": {}}));
    let kept_id = kept["result"]["task"]["taskId"].clone();
    let list = b.request(3, "tasks/list", json!({}));
    assert_valid_result(V, "ListTasksResult", &list);
    assert_eq!(listed(&list), [(kept_id, json!("working"))]);
    // The server was asked (2026-07-28 has no tasks/list): it knows the one no more.
    assert_eq!(b.sent_upstream_count_until("tasks/get", 2), 2);
    let get = b.request(4, "tasks/get", json!({"taskId": gone_id}));
    assert_eq!(get["error"]["code"], -32602, "{get}");
}

#[test]
fn a_2026_host_without_tasks_gets_the_result_of_a_tool_that_requires_one() {
    let mut b = bridge(&[], "tasks");
    b.version = MODERN;
    let mut meta = Bridge::meta(json!({}));
    meta["progressToken"] = json!("p");
    let call = modern(
        &mut b,
        1,
        "tools/call",
        json!({"name": "batch"}),
        meta.clone(),
    );
    assert_valid_result(MODERN, "CallToolResult", &call);
    assert_eq!(call["result"]["content"][0]["text"], "report ready");
    let asked = b.first_sent_upstream("tools/call");
    assert_eq!(
        asked["params"]["task"],
        json!({}),
        "run as the tool requires"
    );
    assert!(b.sent_upstream_count_until("tasks/get", 1) >= 1);
    // The host asked for progress: the task's statuses are it.
    let progress: Vec<&Value> = b
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(
        progress.iter().all(|p| p["params"]["progressToken"] == "p") && !progress.is_empty(),
        "{:?}",
        b.seen
    );

    // A task that fails: the host gets the server's error.
    let denied = modern(
        &mut b,
        3,
        "tools/call",
        json!({"name": "deny"}),
        meta.clone(),
    );
    assert_eq!(
        (&denied["error"]["code"], &denied["error"]["message"]),
        (&json!(-32603), &json!("the report could not be built")),
        "{denied}"
    );

    // The host gives up its call: the task is cancelled at the server.
    let mut params = json!({"name": "hold"});
    params["_meta"] = Bridge::meta(json!({}));
    b.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}));
    b.until_sent_upstream("tasks/get");
    let gets = b.sent_upstream_count("tasks/get");
    assert!(b.sent_upstream_count_until("tasks/get", gets + 1) > gets);
    b.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "no longer needed",
            "_meta": Bridge::meta(json!({}))}}),
    );
    let cancel = b.first_sent_upstream("tasks/cancel");
    assert_eq!(cancel["params"]["taskId"], "task-3");
}

#[test]
fn a_2025_11_25_host_that_cancels_a_call_the_server_made_a_task_of_cancels_the_task() {
    let mut b = bridge(&[], "modern-tasks");
    b.initialize(V, json!({}));
    // No task asked for: the server makes one anyway, and the bridge waits for it.
    b.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stall"}}));
    b.until_sent_upstream("tasks/get");
    b.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "no longer needed"}}),
    );
    let cancel = b.first_sent_upstream("tasks/cancel");
    assert_eq!(cancel["params"]["taskId"], "task-1");
}
