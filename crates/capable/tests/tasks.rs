//! Tasks, on tokio's paused clock over scripted servers: a call that becomes a task is
//! polled at the server's `pollIntervalMs` to its result; a task's questions are
//! answered with `tasks/update`; a deadline cancels it with `tasks/cancel` (never
//! `notifications/cancelled`); a client that did not declare tasks neither accepts
//! one nor may call the tasks methods; 2025-11-25 asks for a task per call and
//! fetches the outcome with `tasks/result`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::internal::model::TaskStatus;
use capable::{
    connect, ClientOptions, ElicitationPolicy, Error, InputHandlers, Method, Refusal, TaskWait,
    ToolCall,
};
use common::{Scripted, Wire};
use serde_json::{json, Value};
use tokio::time::Instant;

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn task(id: &Value, status: &str, extra: Value) -> Value {
    let mut result = json!({
        "resultType": "complete", "taskId": "t-1", "status": status,
        "createdAt": "2026-11-01T00:00:00Z", "lastUpdatedAt": "2026-11-01T00:00:00Z",
        "ttlMs": null, "pollIntervalMs": 500
    });
    if let (Some(r), Some(e)) = (result.as_object_mut(), extra.as_object()) {
        r.extend(e.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A modern server that runs `slow` as a task: `tasks/get` answers with `statuses`
/// in turn (the last one repeats), each poll's time recorded.
fn modern(statuses: Vec<(&'static str, Value)>, polls: Arc<Mutex<Vec<Instant>>>) -> Scripted {
    let mut statuses = statuses.into_iter();
    let mut last = None;
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("server/discover") => vec![capable_test_support::discover_result(
                &id,
                json!({"tools": {}, "extensions": {TASKS: {}}}),
            )],
            Some("tools/call") => {
                let mut created = task(&id, "working", json!({}));
                created["result"]["resultType"] = json!("task");
                vec![created]
            }
            Some("tasks/get") => {
                polls.lock().unwrap().push(Instant::now());
                if let Some(next) = statuses.next() {
                    last = Some(next);
                }
                let (status, extra) = last.clone().unwrap();
                vec![task(&id, status, extra)]
            }
            Some("tasks/update" | "tasks/cancel") => {
                vec![json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete"}})]
            }
            _ => vec![],
        }
    }))
}

fn done() -> (&'static str, Value) {
    let result = json!({"content": [{"type": "text", "text": "done"}]});
    ("completed", json!({"result": result}))
}

#[tokio::test(start_paused = true)]
async fn a_call_that_becomes_a_task_is_polled_at_its_interval_to_its_result() {
    let polls = Arc::new(Mutex::new(Vec::new()));
    let server = modern(
        vec![("working", json!({})), ("working", json!({})), done()],
        polls.clone(),
    );
    let wire = Wire::default();
    let session = connect(server, wire.options().with_tasks()).await.unwrap();
    let started = Instant::now();
    let result = session.call_tool("slow", None).await.unwrap();
    assert_eq!(result.content[0]["text"], "done");
    let polls = polls.lock().unwrap().clone();
    assert_eq!(polls.len(), 3);
    let mut previous = started;
    for at in polls {
        assert!(
            at - previous >= Duration::from_millis(500),
            "polled sooner than pollIntervalMs"
        );
        previous = at;
    }
    let call = &wire.sent_requests("tools/call")[0];
    let declared = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(
        declared["extensions"][TASKS],
        json!({}),
        "the client declared tasks"
    );
    for get in wire.sent_requests("tasks/get") {
        assert_eq!(get["params"]["taskId"], "t-1");
    }
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_deadline_cancels_the_task_with_tasks_cancel_never_notifications_cancelled() {
    let polls = Arc::new(Mutex::new(Vec::new()));
    let wire = Wire::default();
    let session = connect(
        modern(vec![("working", json!({}))], polls),
        wire.options().with_tasks(),
    )
    .await
    .unwrap();
    let ToolCall::Task(task) = session
        .start_tool_call("slow", None, Default::default())
        .await
        .unwrap()
    else {
        panic!("expected a task");
    };
    let wait = TaskWait {
        deadline: Some(Duration::from_secs(2)),
        ..Default::default()
    };
    let err = session.await_task(*task, wait).await.unwrap_err();
    assert!(
        matches!(err, Error::TaskTimedOut { ref task_id, .. } if task_id == "t-1"),
        "{err}"
    );
    let cancels = wire.sent_requests("tasks/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["params"]["taskId"], "t-1");
    assert!(
        wire.cancellations().is_empty(),
        "no notifications/cancelled for a task"
    );
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_tasks_questions_are_answered_once_each_with_tasks_update() {
    let question = json!({"inputRequests": {"name": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}
    }}}});
    let polls = Arc::new(Mutex::new(Vec::new()));
    let server = modern(
        vec![
            ("input_required", question.clone()),
            ("input_required", question),
            ("working", json!({})),
            done(),
        ],
        polls,
    );
    let mut options = ClientOptions::default().with_tasks();
    options.handlers = InputHandlers {
        elicitation: Some(InputHandlers::elicitation_by_policy(
            ElicitationPolicy::AcceptDefaults,
        )),
        ..Default::default()
    };
    let wire = Wire::default();
    options.tap = Some(wire.tap());
    let session = connect(server, options).await.unwrap();
    let mut seen = Vec::new();
    let ToolCall::Task(task) = session
        .start_tool_call("slow", None, Default::default())
        .await
        .unwrap()
    else {
        panic!("expected a task");
    };
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let record = statuses.clone();
    let wait = TaskWait {
        on_status: Some(Box::new(move |t| {
            record.lock().unwrap().push(t.status.clone())
        })),
        deadline: None,
    };
    session.await_task(*task, wait).await.unwrap();
    seen.extend(statuses.lock().unwrap().iter().cloned());
    let updates = wire.sent_requests("tasks/update");
    assert_eq!(
        updates.len(),
        1,
        "the same question seen twice is answered once"
    );
    assert_eq!(
        updates[0]["params"]["inputResponses"]["name"]["content"]["name"],
        "Ada"
    );
    assert_eq!(
        seen,
        [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Working,
            TaskStatus::Completed
        ],
        "each change shown once"
    );
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn without_declaring_tasks_a_task_is_refused_and_so_are_the_tasks_methods() {
    let polls = Arc::new(Mutex::new(Vec::new()));
    let wire = Wire::default();
    let session = connect(modern(vec![done()], polls), wire.options())
        .await
        .unwrap();
    let err = session.call_tool("slow", None).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::MalformedResult {
                method: Method::CallTool,
                ..
            }
        ),
        "{err}"
    );
    let err = session.get_task("t-1").await.unwrap_err();
    assert!(
        matches!(err, Error::Refused(Refusal::ExtensionNotHandled { .. })),
        "{err}"
    );
    assert!(
        wire.sent_requests("tasks/get").is_empty(),
        "nothing was sent"
    );
    session.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_task_is_an_error_with_the_servers_error() {
    let polls = Arc::new(Mutex::new(Vec::new()));
    let failed = (
        "failed",
        json!({"statusMessage": "rate limited", "error": {"code": -32603, "message": "API rate limit exceeded"}}),
    );
    let session = connect(
        modern(vec![failed], polls),
        ClientOptions::default().with_tasks(),
    )
    .await
    .unwrap();
    match session.call_tool("slow", None).await.unwrap_err() {
        Error::TaskFailed {
            task_id,
            error,
            message,
        } => {
            assert_eq!(task_id, "t-1");
            assert_eq!(error["code"], -32603);
            assert_eq!(message.as_deref(), Some("rate limited"));
        }
        other => panic!("{other}"),
    }
    session.close().await;
}

/// A 2025-11-25 server with core tasks: `slow` may run as a task, `quick` may not.
fn legacy() -> Scripted {
    Scripted::new(Box::new(move |msg: &Value| {
        let id = msg["id"].clone();
        let ok = |result: Value| vec![json!({"jsonrpc": "2.0", "id": id, "result": result})];
        match msg["method"].as_str() {
            Some("initialize") => vec![capable_test_support::initialize_result(
                &id,
                "2025-11-25",
                json!({"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}),
            )],
            Some("tools/list") => ok(json!({"tools": [
                {"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
                {"name": "quick", "inputSchema": {"type": "object"}}
            ]})),
            Some("tools/call") if msg["params"].get("task").is_some() => ok(json!({
                "task": {"taskId": "l-1", "status": "working", "pollInterval": 200, "ttl": 60000,
                    "createdAt": "2025-12-01T00:00:00Z", "lastUpdatedAt": "2025-12-01T00:00:00Z"}
            })),
            Some("tools/call") => ok(json!({"content": [{"type": "text", "text": "at once"}]})),
            Some("tasks/get") => ok(json!({"taskId": "l-1", "status": "completed",
                "createdAt": "2025-12-01T00:00:00Z", "lastUpdatedAt": "2025-12-01T00:00:01Z", "ttl": 60000})),
            Some("tasks/result") => ok(json!({"content": [{"type": "text", "text": "later"}]})),
            Some("tasks/list") => ok(json!({"tasks": [{"taskId": "l-1", "status": "completed"}]})),
            _ => vec![],
        }
    }))
}

#[tokio::test(start_paused = true)]
async fn a_2025_11_25_call_asks_for_a_task_only_where_the_tool_allows_and_fetches_its_result() {
    let wire = Wire::default();
    let session = connect(legacy(), wire.options()).await.unwrap();
    session.list_tools().await.unwrap();
    assert!(session.supports_tasks());
    let quick = session
        .start_tool_call("quick", None, Default::default())
        .await
        .unwrap();
    assert!(
        matches!(quick, ToolCall::Complete(_)),
        "a tool that forbids tasks is called plainly"
    );
    let ToolCall::Task(task) = session
        .start_tool_call("slow", None, Default::default())
        .await
        .unwrap()
    else {
        panic!("expected a task");
    };
    assert_eq!(task.task_id, "l-1");
    let result = session
        .await_task(*task, TaskWait::default())
        .await
        .unwrap();
    assert_eq!(result.content[0]["text"], "later");
    let calls = wire.sent_requests("tools/call");
    assert!(calls[0]["params"].get("task").is_none());
    assert_eq!(calls[1]["params"]["task"], json!({}));
    assert_eq!(wire.sent_requests("tasks/result").len(), 1);
    assert_eq!(session.list_tasks().await.unwrap()[0].task_id, "l-1");
    // The modern-only method does not exist in 2025-11-25.
    let err = session
        .update_task("l-1", &Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Refused(Refusal::NotInVersion { .. })),
        "{err}"
    );
    session.close().await;
}
