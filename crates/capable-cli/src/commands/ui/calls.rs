//! Tool calls from the page: the arguments checked against the tool's `inputSchema`
//! before anything is sent, progress on the stream as it comes, a call the server
//! runs as a task followed through its statuses, and cancel — `notifications/cancelled`
//! for a plain call, `tasks/cancel` for a task (a task is never cancelled any other
//! way). The result comes with the check of its `structuredContent` against the
//! tool's `outputSchema`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Response, StatusCode};
use capable::core::model::{Task, Tool};
use capable::core::Notice;
use capable::{Error, RequestOptions, Session, TaskWait, ToolCall};
use serde_json::{json, Value};
use tokio::task::AbortHandle;

use super::api::{client, json_response, ok, usage, with_session, Shared};
use super::events::Bus;

/// A call in flight: how to stop it.
struct Running {
    abort: AbortHandle,
    session: Arc<Session>,
    /// Set once the server made the call a task.
    task: Option<String>,
}

/// The calls in flight, by the page's call id.
pub struct Calls {
    bus: Bus,
    next: AtomicU64,
    running: Arc<Mutex<HashMap<String, Running>>>,
}

impl Calls {
    /// None yet.
    pub fn new(bus: Bus) -> Calls {
        Calls {
            bus,
            next: AtomicU64::new(1),
            running: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A task's status for the page: `{server, call, task}` on the stream.
fn publish_task(bus: &Bus, server: &str, call: &str, task: &Task) {
    bus.publish(
        "task",
        json!({"server": server, "call": call, "task": task}),
    );
}

/// `POST /api/call {server, tool, arguments, call?, task?}`.
pub async fn call(State(app): Shared, bytes: Bytes) -> Response<Body> {
    let app2 = app.clone();
    with_session(&app, &bytes, async |c, session| {
        let tool_name = match c.str("tool") {
            Ok(t) => t.to_owned(),
            Err(m) => return usage(m),
        };
        let arguments = match c.object("arguments") {
            Ok(a) => a,
            Err(m) => return usage(m),
        };
        let want_task = c.body.get("task").and_then(Value::as_bool).unwrap_or(false);
        let tool = app2
            .servers
            .tools(&c.server)
            .await
            .into_iter()
            .find(|t| t.name == tool_name);
        if let Some(tool) = &tool {
            let instance = Value::Object(arguments.clone().unwrap_or_default());
            let problems = super::schema_check::check(tool.input_schema.get(), &instance);
            if !problems.is_empty() {
                let body = json!({"error": {"kind": "usage", "message": "the arguments do not match the tool's inputSchema; nothing was sent", "exitCode": 2}, "invalid": problems});
                return json_response(StatusCode::UNPROCESSABLE_ENTITY, &body);
            }
        }
        let calls = &app2.calls;
        let call_id = c
            .body
            .get("call")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| calls.next.fetch_add(1, Ordering::Relaxed).to_string());
        let before = session.notices().len();
        let bus = calls.bus.clone();
        let (server, id) = (c.server.clone(), call_id.clone());
        let on_progress: capable::ProgressCallback = {
            let (bus, server, id) = (bus.clone(), server.clone(), id.clone());
            Box::new(move |p| {
                bus.publish("progress", json!({"server": server, "call": id, "progress": p}));
            })
        };
        let options = RequestOptions {
            on_progress: Some(on_progress),
            ..RequestOptions::default()
        };
        let s = session.clone();
        let name = tool_name.clone();
        let running = calls.running.clone();
        let work = tokio::spawn(async move {
            match s.call_tool_or_task(&name, arguments.as_ref(), options, want_task).await? {
                ToolCall::Complete(result) => Ok(result),
                ToolCall::Task(task) => {
                    publish_task(&bus, &server, &id, &task);
                    if let Some(r) = running.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&id) {
                        r.task = Some(task.task_id.clone());
                    }
                    let (b, sv, i) = (bus.clone(), server.clone(), id.clone());
                    let wait = TaskWait {
                        on_status: Some(Box::new(move |t: &Task| publish_task(&b, &sv, &i, t))),
                        deadline: None,
                    };
                    s.await_task(*task, wait).await
                }
            }
        });
        calls.lock().insert(
            call_id.clone(),
            Running {
                abort: work.abort_handle(),
                session: session.clone(),
                task: None,
            },
        );
        let outcome = work.await;
        calls.lock().remove(&call_id);
        let result = match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(Error::TaskCancelled { task_id })) => {
                return ok(json!({"call": call_id, "cancelled": true, "task": task_id}))
            }
            Ok(Err(e)) => return client(e),
            // Aborted: dropping the request sent `notifications/cancelled`.
            Err(_) => return ok(json!({"call": call_id, "cancelled": true})),
        };
        let check = output_check(&session, tool.as_ref(), &tool_name, before);
        ok(json!({"call": call_id, "result": result, "outputCheck": check}))
    })
    .await
}

/// `POST /api/cancel {server, call}`: a plain call stops being waited for, which sends
/// `notifications/cancelled`; a task is cancelled with `tasks/cancel`, and its call
/// ends when the server says it is cancelled.
pub async fn cancel(State(app): Shared, bytes: Bytes) -> Response<Body> {
    let id = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("call").and_then(Value::as_str).map(str::to_owned));
    let Some(id) = id else {
        return usage("the command has no string \"call\"");
    };
    let (abort, task) = {
        let running = app.calls.lock();
        match running.get(&id) {
            None => return ok(json!({"call": id, "cancelled": false})),
            Some(r) => match &r.task {
                Some(task) => (None, Some((r.session.clone(), task.clone()))),
                None => (Some(r.abort.clone()), None),
            },
        }
    };
    if let Some(abort) = abort {
        abort.abort();
        return ok(json!({"call": id, "cancelled": true}));
    }
    let Some((session, task)) = task else {
        return ok(json!({"call": id, "cancelled": false}));
    };
    match session.cancel_task(&task).await {
        Ok(()) => ok(json!({"call": id, "cancelled": true, "task": task})),
        Err(e) => client(e),
    }
}

/// What the session found checking the result against the tool's `outputSchema`.
fn output_check(session: &Session, tool: Option<&Tool>, name: &str, before: usize) -> Value {
    let Some(schema) = tool.and_then(|t| t.output_schema.as_ref()) else {
        return json!({"declared": false});
    };
    let schema: Value = serde_json::from_str(schema.get()).unwrap_or(Value::Null);
    for notice in session.notices().iter().skip(before) {
        match notice {
            Notice::OutputSchemaMismatch { tool, errors, .. } if tool == name => {
                return json!({"declared": true, "schema": schema, "ok": false, "errors": errors});
            }
            Notice::OutputSchemaUnchecked { tool, why } if tool == name => {
                return json!({"declared": true, "schema": schema, "ok": null, "errors": [why]});
            }
            _ => {}
        }
    }
    json!({"declared": true, "schema": schema, "ok": true, "errors": []})
}

/// `POST /api/tasks {server}`: the server's tasks (`tasks/list`, where declared).
pub async fn tasks(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |_, session| {
        match session.list_tasks().await {
            Ok(tasks) => ok(json!(tasks)),
            Err(e) => client(e),
        }
    })
    .await
}

/// `POST /api/task {server, id, action: "get" | "cancel"}`.
pub async fn task(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |c, session| {
        let id = match c.str("id") {
            Ok(id) => id,
            Err(m) => return usage(m),
        };
        match c.body.get("action").and_then(Value::as_str) {
            Some("get") => match session.get_task(id).await {
                Ok(task) => ok(json!(task)),
                Err(e) => client(e),
            },
            Some("cancel") => match session.cancel_task(id).await {
                Ok(()) => ok(json!({"id": id, "cancelled": true})),
                Err(e) => client(e),
            },
            _ => usage("the action must be get or cancel"),
        }
    })
    .await
}
