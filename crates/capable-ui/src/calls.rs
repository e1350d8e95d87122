//! Tool calls in flight from the page: progress on the bus as it comes, a call the
//! server runs as a task followed through its statuses, and cancel —
//! `notifications/cancelled` for a plain call (the request is dropped), `tasks/cancel`
//! for a task (a task is never cancelled any other way).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use capable::internal::model::{CallToolResult, JsonObject, Task};
use capable::{Error, RequestOptions, Session, TaskWait, ToolCall};
use serde_json::json;
use tokio::task::AbortHandle;

use crate::bus::Bus;

/// A call in flight: how to stop it.
struct Running {
    abort: AbortHandle,
    session: Arc<Session>,
    /// Set once the server made the call a task.
    task: Option<String>,
}

/// How a call ended, when the server did not fail it.
pub enum Ended {
    /// With its result.
    Done(CallToolResult),
    /// Cancelled from the page: a plain call dropped, or its task cancelled.
    Cancelled {
        /// The task, when it was one.
        task: Option<String>,
    },
}

/// What a cancel did.
pub enum Cancel {
    /// No such call is in flight (it ended already).
    NotRunning,
    /// The plain call stopped being waited for, which sent `notifications/cancelled`.
    Dropped,
    /// `tasks/cancel` was sent for this task; the call ends when the server says so.
    Task(String),
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

    /// The page's id for a call, or a fresh one.
    pub fn id(&self, given: Option<String>) -> String {
        given.unwrap_or_else(|| self.next.fetch_add(1, Ordering::Relaxed).to_string())
    }

    /// Calls tool `name` on `server` as call `id` (as a task when `as_task` and the
    /// tool allows it), its progress and task statuses onto the bus, until it ends or
    /// is cancelled; within `timeout` when given (each progress notification restarts
    /// it, up to the session's cap; a task gets as long to finish, then `tasks/cancel`).
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        &self,
        server: &str,
        session: Arc<Session>,
        id: &str,
        name: String,
        arguments: Option<JsonObject>,
        as_task: bool,
        timeout: Option<std::time::Duration>,
    ) -> Result<Ended, Error> {
        let on_progress: capable::ProgressCallback = {
            let (bus, server, id) = (self.bus.clone(), server.to_owned(), id.to_owned());
            Box::new(move |p| {
                bus.publish(
                    "progress",
                    json!({"server": server, "call": id, "progress": p}),
                );
            })
        };
        let options = RequestOptions {
            on_progress: Some(on_progress),
            timeout,
            ..RequestOptions::default()
        };
        let (s, bus, running) = (session.clone(), self.bus.clone(), self.running.clone());
        let (server, call) = (server.to_owned(), id.to_owned());
        let work = tokio::spawn(async move {
            let task = match s
                .call_tool_or_task(&name, arguments.as_ref(), options, as_task)
                .await?
            {
                ToolCall::Complete(result) => return Ok(result),
                ToolCall::Task(task) => task,
            };
            publish_task(&bus, &server, &call, &task);
            if let Some(r) = lock(&running).get_mut(&call) {
                r.task = Some(task.task_id.clone());
            }
            let wait = TaskWait {
                on_status: Some(Box::new(move |t: &Task| {
                    publish_task(&bus, &server, &call, t)
                })),
                // The page's timeout bounds the wait for the task too (then `tasks/cancel`).
                deadline: timeout,
            };
            s.await_task(*task, wait).await
        });
        let entry = Running {
            abort: work.abort_handle(),
            session,
            task: None,
        };
        lock(&self.running).insert(id.to_owned(), entry);
        let outcome = work.await;
        lock(&self.running).remove(id);
        match outcome {
            Ok(Ok(result)) => Ok(Ended::Done(result)),
            Ok(Err(Error::TaskCancelled { task_id })) => Ok(Ended::Cancelled {
                task: Some(task_id),
            }),
            Ok(Err(e)) => Err(e),
            // Aborted: dropping the request sent `notifications/cancelled`.
            Err(_) => Ok(Ended::Cancelled { task: None }),
        }
    }

    /// Cancels call `id`: a plain call is dropped at once; a task gets `tasks/cancel`.
    pub async fn cancel(&self, id: &str) -> Result<Cancel, Error> {
        let task = {
            let running = lock(&self.running);
            let Some(r) = running.get(id) else {
                return Ok(Cancel::NotRunning);
            };
            match &r.task {
                None => {
                    r.abort.abort();
                    return Ok(Cancel::Dropped);
                }
                Some(task) => (r.session.clone(), task.clone()),
            }
        };
        let (session, task) = task;
        session.cancel_task(&task).await?;
        Ok(Cancel::Task(task))
    }
}

fn lock(
    running: &Mutex<HashMap<String, Running>>,
) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
    running.lock().unwrap_or_else(|e| e.into_inner())
}

/// A task's status for the page: `{server, call, task}` on the bus.
fn publish_task(bus: &Bus, server: &str, call: &str, task: &Task) {
    bus.publish(
        "task",
        json!({"server": server, "call": call, "task": task}),
    );
}
