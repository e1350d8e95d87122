//! A task run for a host that sees none: a tool that requires a task, called by a host
//! without tasks (a 2026-07-28 host without the extension in front of a 2025-11-25
//! server, a legacy host that asked for none, any host in front of many servers as
//! one). The bridge asks for the task, waits for its end within `--progress-cap` (the
//! core's `task_wait`, through [`Session::await_task`]), and the host gets the tool's
//! result — or the task's error; each change of status is progress when the host asked
//! for progress; the host's cancel (the wait dropped) cancels the task at the server.

use std::sync::Arc;
use std::time::Duration;

use capable::internal::jsonrpc::Payload;
use capable::internal::model::{CallToolResult, ProgressParams, Task};
use capable::internal::task_bridge;
use capable::internal::task_call;
use capable::internal::{Era, Method};
use capable::{Error, RequestOptions, Session, TaskWait};
use serde_json::{json, Map, Value};

/// A host's `tools/call` (`params`, under the name the server knows) at `session`, for
/// a host that sees no tasks: a tool that requires a task gets one asked for, waited
/// for within `bound` (its statuses the host's progress), and the host gets the tool's
/// result; any other call goes as it is. The tool's `execution.taskSupport` is as the
/// session last listed it.
pub(super) async fn call_without_tasks(
    session: &Arc<Session>,
    mut params: Map<String, Value>,
    mut options: RequestOptions,
    bound: Duration,
) -> Result<Payload, Error> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let support = session.tool_task_support(name);
    let mut progress = None;
    if task_call::asks_for_task(support, false, session.negotiated()) {
        params.insert("task".into(), json!({}));
        // The host's progress is the wait's, for a task it cannot see.
        progress = options.on_progress.take();
    }
    let payload = session
        .request_payload(Method::CallTool, &params, options)
        .await?;
    let Some(task) = task_of(&payload)? else {
        return Ok(payload);
    };
    let result = wait_for_host(session, task, bound, progress).await;
    let result = result.map_err(|e| ended(Method::CallTool, e))?;
    Ok(Payload::from_json(
        serde_json::to_vec(&result).unwrap_or_default(),
    ))
}

/// Waits for `task` (at most `bound`) for a host's call that is no task to the host (a
/// 2026-07-28 host without the extension, a legacy host that asked for none): each
/// change of status is progress to the host when it asked for progress (`progress`);
/// the wait given up (the host cancelled its call) cancels the task at the server when
/// it declares `tasks/cancel`.
pub(super) async fn wait_for_host(
    session: &Arc<Session>,
    task: Task,
    bound: Duration,
    progress: Option<capable::ProgressCallback>,
) -> Result<CallToolResult, Error> {
    let guard = CancelOnDrop {
        session: session.clone(),
        task_id: Some(task.task_id.clone()),
    };
    let on_status = progress.map(|mut progress| {
        let mut seen = 0.0;
        Box::new(move |task: &Task| {
            seen += 1.0;
            let message = match &task.status_message {
                Some(m) => format!("{}: {m}", task.status.as_str()),
                None => task.status.as_str().to_owned(),
            };
            progress(&ProgressParams {
                progress_token: Value::Null,
                progress: seen,
                total: None,
                message: Some(message),
            });
        }) as capable::TaskObserver
    });
    let wait = TaskWait {
        on_status,
        deadline: Some(bound),
    };
    let waited = match session.await_task(task, wait).await {
        // A 2025-11-25 task that failed: its `tasks/result` is what the call would
        // have given (the server's error, or the tool's `isError` result).
        Err(Error::TaskFailed { task_id, .. }) if session.era() == Era::Legacy => {
            let params = json!({ "taskId": task_id });
            let options = RequestOptions::default();
            session.request(Method::TaskResult, &params, options).await
        }
        other => other,
    };
    // Over, one way or another (a wait past its bound cancelled the task itself).
    guard.disarm();
    waited
}

/// Cancels a task at the server when the wait for it is dropped before its end.
struct CancelOnDrop {
    session: Arc<Session>,
    task_id: Option<String>,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.task_id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        if self.session.check(Method::CancelTask).is_err() {
            return;
        }
        let session = self.session.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = session.cancel_task(&task_id).await;
            });
        }
    }
}

/// The task a `tools/call` answer started, if any.
pub(super) fn task_of(payload: &Payload) -> Result<Option<Task>, Error> {
    task_call::started_task(payload).map_err(|detail| Error::MalformedResult {
        method: Method::CallTool,
        detail,
    })
}

/// A wait for a task that did not complete, as the host gets it: the task's own
/// error when it failed with one, else an error that says how it ended; any other
/// failure as it is.
pub(super) fn ended(method: Method, e: Error) -> Error {
    let error = match e {
        Error::TaskFailed {
            task_id,
            error,
            message,
        } => {
            let how = format!(
                "failed: {}",
                message.as_deref().unwrap_or("no reason given")
            );
            task_bridge::ended_error(&task_id, Some(&error), &how)
        }
        Error::TaskCancelled { task_id } => {
            task_bridge::ended_error(&task_id, None, "was cancelled")
        }
        other => return other,
    };
    Error::Rpc { method, error }
}
