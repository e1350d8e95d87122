//! Tasks: a tool call the server runs in the background, polled until it ends.
//!
//! | era | how a call becomes a task | status | result | cancel |
//! |---|---|---|---|---|
//! | 2026-07-28 (extension `io.modelcontextprotocol/tasks`, declared with [`ClientOptions::with_tasks`](crate::ClientOptions::with_tasks)) | the server decides, per call | `tasks/get` | inline in `tasks/get` | `tasks/cancel` |
//! | 2025-11-25 (core) | the client asks (`params.task`) when the server declares `tasks.requests.tools.call` and the tool allows it | `tasks/get` | `tasks/result` | `tasks/cancel` (`tasks.cancel`) |
//!
//! A task is never cancelled with `notifications/cancelled`: only `tasks/cancel`. Every
//! tasks method passes the gating table like any other (a server that did not
//! declare tasks, or a modern session that did not declare the extension, is refused
//! locally). Whether a call runs as a task is the core's [`capable_core::internal::task_call`];
//! waiting ([`Session::await_task`], decided by the core's [`capable_core::internal::task_wait`])
//! polls `tasks/get` at the server's
//! `pollIntervalMs` (bounded to 100 ms … 1 min), answers a task's questions
//! (`input_required`) with the host's handlers through `tasks/update`, and ends with
//! the tool's result — or the task's failure, cancellation, or the host's deadline
//! (which cancels it).

use std::time::Duration;

use capable_core::internal::task_wait::{TaskOutcome, TaskStep, TaskWaiter};
use capable_core::model::{
    CallToolParams, CallToolResult, JsonObject, ListTasksResult, Task, TaskIdParams,
    UpdateTaskParams,
};
use capable_core::Method;
use serde_json::Value;

use crate::error::Error;

use super::exchange::RequestOptions;
use super::Session;

/// What a `tools/call` started: the result itself, or a task that will produce it.
#[derive(Clone, Debug)]
pub enum ToolCall {
    /// The tool answered at once.
    Complete(CallToolResult),
    /// The server runs the call as a task: wait for it with
    /// [`Session::await_task`], or cancel it with [`Session::cancel_task`].
    Task(Box<Task>),
}

/// Sees each status of a task while [`Session::await_task`] waits.
pub type TaskObserver = Box<dyn FnMut(&Task) + Send>;

/// How [`Session::await_task`] waits.
#[derive(Default)]
pub struct TaskWait {
    /// Sees the task after every poll that changed its status or message.
    pub on_status: Option<TaskObserver>,
    /// Gives up after this long, cancelling the task with `tasks/cancel`.
    pub deadline: Option<Duration>,
}

impl Session {
    /// `tools/call`, ready for it to become a task.
    ///
    /// Modern: the server decides (the client must have declared the tasks extension
    /// for it to be allowed to). 2025-11-25: the call asks for a task when the server
    /// declares `tasks.requests.tools.call` and the tool's `execution.taskSupport` (as
    /// listed in this session, or [known](crate::ClientOptions::known_tools)) is
    /// `optional` or `required`; otherwise it is a plain call. The tool's
    /// `outputSchema` checks a result that comes at once.
    pub async fn start_tool_call(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        options: RequestOptions,
    ) -> Result<ToolCall, Error> {
        self.call_tool_or_task(name, arguments, options, true).await
    }

    /// `tools/call` that may become a task, asking for one (2025-11-25) only when
    /// `ask` and the tool allows it, or when the tool requires it. Modern servers
    /// decide by themselves ([`Session::start_tool_call`] is this with `ask`).
    pub async fn call_tool_or_task(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        options: RequestOptions,
        ask: bool,
    ) -> Result<ToolCall, Error> {
        let task = capable_core::internal::task_call::asks_for_task(
            self.tool_task_support(name),
            ask,
            self.negotiated(),
        )
        .then(|| serde_json::json!({}));
        let params = CallToolParams {
            name,
            arguments,
            task,
        };
        let payload = self
            .request_payload(Method::CallTool, &params, options)
            .await?;
        let malformed = |detail| Error::MalformedResult {
            method: Method::CallTool,
            detail,
        };
        if let Some(task) =
            capable_core::internal::task_call::started_task(&payload).map_err(malformed)?
        {
            return Ok(ToolCall::Task(Box::new(task)));
        }
        let result =
            CallToolResult::from_payload(&payload).map_err(|e| malformed(e.to_string()))?;
        self.check_output(name, &result);
        Ok(ToolCall::Complete(result))
    }

    /// `tasks/get`: where a task is now.
    pub async fn get_task(&self, task_id: &str) -> Result<Task, Error> {
        let params = TaskIdParams { task_id };
        self.request(Method::GetTask, &params, RequestOptions::default())
            .await
    }

    /// `tasks/cancel`: asks the server to stop a task. Cancellation is cooperative:
    /// the task may still complete.
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), Error> {
        let params = TaskIdParams { task_id };
        let _: Value = self
            .request(Method::CancelTask, &params, RequestOptions::default())
            .await?;
        Ok(())
    }

    /// `tasks/list` (2025-11-25, `tasks.list`), every page. 2026-07-28 has no way to
    /// list tasks: the method is refused locally there.
    pub async fn list_tasks(&self) -> Result<Vec<Task>, Error> {
        self.list_all::<ListTasksResult>(Method::ListTasks).await
    }

    /// `tasks/update` (2026): answers to a task's `inputRequests`.
    pub async fn update_task(&self, task_id: &str, responses: &JsonObject) -> Result<(), Error> {
        let params = UpdateTaskParams {
            task_id,
            input_responses: responses,
        };
        let _: Value = self
            .request(Method::UpdateTask, &params, RequestOptions::default())
            .await?;
        Ok(())
    }

    /// Waits for a task to end and returns the tool's result (see the module
    /// documentation). A failed task is [`Error::TaskFailed`], a cancelled one
    /// [`Error::TaskCancelled`]; past `wait.deadline` the task is cancelled and the
    /// wait ends with [`Error::TaskTimedOut`].
    ///
    /// When to poll, what to answer and when to give up are the core's
    /// [`TaskWaiter`]'s decisions; this sends its requests and sleeps until its
    /// [`poll_timeout`](TaskWaiter::poll_timeout).
    pub async fn await_task(
        &self,
        task: Task,
        mut wait: TaskWait,
    ) -> Result<CallToolResult, Error> {
        let now = || tokio::time::Instant::now().into_std();
        let task_id = task.task_id.clone();
        let mut waiter = TaskWaiter::new(task, self.era(), wait.deadline, now());
        loop {
            let Some(step) = waiter.poll() else {
                let Some(at) = waiter.poll_timeout() else {
                    // Nothing to do and nothing to wait for cannot happen: every status
                    // leads somewhere.
                    return Err(Error::Closed);
                };
                tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                waiter.handle_timeout(now());
                continue;
            };
            match step {
                TaskStep::Show => {
                    if let Some(observe) = wait.on_status.as_mut() {
                        observe(waiter.task());
                    }
                }
                TaskStep::Answer(questions) => {
                    let responses = self.answer_requests(Method::UpdateTask, questions).await?;
                    self.update_task(&task_id, &responses).await?;
                    waiter.handle_updated(now());
                }
                TaskStep::Get => {
                    let task = self.get_task(&task_id).await?;
                    waiter.handle_status(task, now());
                }
                TaskStep::Cancel => {
                    // Best effort: the wait is over whatever the server says.
                    let _ = self.cancel_task(&task_id).await;
                    waiter.handle_cancelled();
                }
                TaskStep::FetchResult => {
                    // 2025-11-25: `tasks/result` carries the server's requests and
                    // blocks until the task ends.
                    let params = TaskIdParams { task_id: &task_id };
                    return self
                        .request(Method::TaskResult, &params, RequestOptions::default())
                        .await;
                }
                TaskStep::Done(outcome) => return outcome_of(outcome),
            }
        }
    }

    /// Whether this session may ask for tasks at all (the server declared them and,
    /// modern, the client did too).
    pub fn supports_tasks(&self) -> bool {
        let st = self.shared.lock();
        capable_core::internal::task_call::supports_tasks(
            self.negotiated(),
            &st.conn.config().capabilities,
        )
    }
}

/// How a wait's end reaches the host.
fn outcome_of(outcome: TaskOutcome) -> Result<CallToolResult, Error> {
    Err(match outcome {
        TaskOutcome::Completed(result) => return Ok(*result),
        TaskOutcome::Failed {
            task_id,
            error,
            message,
        } => Error::TaskFailed {
            task_id,
            error,
            message,
        },
        TaskOutcome::Cancelled { task_id } => Error::TaskCancelled { task_id },
        TaskOutcome::TimedOut { task_id, after } => Error::TaskTimedOut { task_id, after },
        TaskOutcome::Malformed { detail } => Error::MalformedResult {
            method: Method::GetTask,
            detail,
        },
    })
}
