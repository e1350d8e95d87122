//! Tasks across eras: a 2025-11-25 host's tasks carried out at a 2026-07-28 server
//! with the tasks extension, and a 2026-07-28 host's at a 2025-11-25 server with core
//! tasks. What the host is told, which request is carried and how, what is refused,
//! and every wire form are the core's ([`capable::internal::task_bridge`]); the requests
//! each one takes, in order, and the answer the host gets are the core's
//! [`TaskCarry`]'s (scripted tests there); this file runs its commands on the session
//! to the server behind.
//!
//! | the host asks | the bridge asks the server |
//! |---|---|
//! | legacy `tools/list` | `tools/list`; tools may run as tasks |
//! | legacy `tools/call` with `params.task` | `tools/call`; the task it made, as `{task}`; a result that came at once, as a task of the bridge's, already over |
//! | legacy `tasks/get`, `tasks/result`, `tasks/cancel` of a task of the bridge's | nothing: the bridge answers (the core's `task_started`; another replica's, from the store: `kept_tasks.rs`) |
//! | legacy `tools/call` | `tools/call`; a task it made anyway is waited for, within the request's bound (the host's cancel a `tasks/cancel`) |
//! | legacy `tasks/get`, `tasks/cancel` | `tasks/get`; `tasks/cancel` then `tasks/get` |
//! | legacy `tasks/list` | `tasks/get` of each task the host started through the bridge (kept by the relay; with a store, through any replica: `task_list.rs`); the bridge's own as they are |
//! | legacy `tasks/result` | `tasks/get` at the task's `pollIntervalMs` until it ends, within the request's bound (the session's [`Session::await_task`], the core's `task_wait`); each change of status meanwhile is a `notifications/tasks/status` to the host; each question of the task's, a request to the host naming it (`_meta[RELATED_TASK]`) |
//! | 2026-07-28 `tools/call` | `tools/list` once if the tool is unknown, `tools/call` with `params.task` when the tool allows it (declared extension) or requires it |
//! | … without the extension, of a tool that requires a task | the task waited for as above, within the request's bound; each change of status a progress notification when the host asked for progress; the host's cancel a `tasks/cancel` (when declared) |
//! | 2026-07-28 `tasks/get` | `tasks/get`, and `tasks/result` once it is over; while it needs input, `tasks/result` to bring its questions (`task_input.rs`) |
//! | 2026-07-28 `tasks/update` | nothing: its answers go to the questions the server asked (`task_input.rs`) |
//! | 2026-07-28 `tasks/cancel` | `tasks/cancel` |

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use capable::internal::bridge::task_ids::Presented;
use capable::internal::bridge::{
    self, Carried, Command, Failure, Known, OwnTask, TaskCarry, Upstream,
};
use capable::internal::jsonrpc::{Payload, RequestId};
use capable::internal::model::{CallToolResult, Task};
use capable::internal::notification::{Notification, NotificationMethod};
use capable::internal::task_bridge::{self, Carry};
use capable::internal::task_call;
use capable::internal::task_started::{Listed, Started};
use capable::internal::Method;
use capable::{Error, RequestOptions, Session, TaskWait};
use serde_json::{Map, Value};

use super::{Event, Inbox, Relay};
use crate::run_task::{call_without_tasks, ended, wait_for_host};
use crate::upstream::FOR_TASK;

/// How a host request is carried out.
pub(super) struct How {
    /// What the core says to do.
    pub carry: Carry,
    /// The host's method.
    pub method: Method,
    /// How long a wait for a task's end may last.
    pub bound: Duration,
    /// The tasks the host started through the bridge (for `tasks/list`).
    pub started: Vec<Listed>,
    /// Where the statuses of a task waited on go (`notifications/tasks/status`).
    pub statuses: Inbox,
}

/// A task a legacy host's call started: its id, and whether it is the bridge's own
/// (else the server's).
pub(super) struct NewTask {
    pub task_id: String,
    pub own: bool,
}

/// What the relay does with a carried host request before anything is sent.
pub(super) enum Before {
    /// It was about a task of the bridge's: answered.
    Answered,
    /// It goes on; a legacy host's task call asked for this `ttl`.
    Send { ttl: Option<u64> },
}

/// No task started yet; the bridge's own named after a random prefix, which no
/// server's task id takes.
pub(super) fn started() -> Started {
    Started::new(format!("bridge-{}", super::super::random_hex::<6>()))
}

impl Relay {
    /// A carried host request, before anything is sent, as the core's
    /// [`own_task`](bridge::own_task) decides: a legacy host's `tasks/get`,
    /// `tasks/result` or `tasks/cancel` of a task of the bridge's is answered here, a
    /// 2026-07-28 host's `tasks/update` too; the `ttl` a task call asked for is noted.
    pub(super) fn own_task(
        &mut self,
        id: &RequestId,
        method: Method,
        carry: Carry,
        params: &Payload,
        presented: Option<&Presented>,
    ) -> Before {
        let own = presented.is_some_and(|p| p.own);
        let now = Instant::now();
        match bridge::own_task(&mut self.started, carry, method, params, now, own) {
            OwnTask::Update => self.update_task(id, params),
            OwnTask::Answered(answer) => self.own_answer(id, method, answer, presented),
            // Another replica's: from the store (`kept_tasks.rs`).
            OwnTask::Elsewhere { task_id } => {
                self.read_kept(id, method, task_id, presented.cloned());
            }
            OwnTask::Send { ttl } => return Before::Send { ttl },
        }
        Before::Answered
    }

    /// An answer carried out for the host arrived, as the core's
    /// [`carried`](bridge::carried) makes it: a task a legacy host started is kept for
    /// its `tasks/list` (its id given, to be listed for other replicas:
    /// `task_list.rs`), a result given at once where it asked for a task is a task of
    /// the bridge's (its id given too, to be kept for other replicas:
    /// `kept_tasks.rs`); a legacy task a 2026-07-28 host sees shows the questions it
    /// asks.
    pub(super) fn carried(
        &mut self,
        carry: Option<Carry>,
        ttl: Option<u64>,
        answer: Payload,
    ) -> (Payload, Option<NewTask>) {
        // Most answers are of no carried request: no clock is read for them.
        let Some(carry) = carry else {
            return (answer, None);
        };
        let (now, wall) = (Instant::now(), SystemTime::now());
        match bridge::carried(&mut self.started, carry, ttl, answer, now, wall) {
            Carried::Answer(answer) => (answer, None),
            Carried::Made { answer, task_id } => (answer, Some(NewTask { task_id, own: true })),
            Carried::Recorded { answer, task_id } => (
                answer,
                Some(NewTask {
                    task_id,
                    own: false,
                }),
            ),
            Carried::WithQuestions(task) => (self.with_questions(task), None),
        }
    }

    /// A task the bridge waits on for a legacy host changed: the host hears of it
    /// (`notifications/tasks/status`, as the engine lets it go).
    pub(super) fn task_status(&mut self, task: &Value) {
        let method = NotificationMethod::TaskStatus.as_str();
        let notification = Notification::from_value(method, task);
        if let Some(task) = self.seal_notification(method, task) {
            let _ = self.core.notify(&notification, &task);
        }
    }
}

/// Carries out a host request as `how` says, with `params` (the host's own envelope
/// out), on `session`: the answer the host gets, in its era's form. Which requests it
/// takes and what the host gets is the core's [`TaskCarry`]'s; this runs its commands.
pub(super) async fn carry(
    session: Arc<Session>,
    how: How,
    params: Map<String, Value>,
    options: RequestOptions,
) -> Result<Payload, Error> {
    carry_noting(session, how, params, options, &mut Vec::new()).await
}

/// [`carry`], noting in `gone` each task the server said it does not know (`-32602`
/// to its `tasks/get`: expired, or never made), for a `tasks/list` to forget.
pub(super) async fn carry_noting(
    session: Arc<Session>,
    how: How,
    params: Map<String, Value>,
    options: RequestOptions,
    gone: &mut Vec<String>,
) -> Result<Payload, Error> {
    let How {
        carry,
        method,
        bound,
        started,
        statuses,
    } = how;
    let mut known = Known::new(bound);
    if let Carry::CallForModern { .. } = carry {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        known.support = session.tool_task_support(name);
        known.task_calls = task_call::takes_task_calls(session.negotiated());
    }
    known.started = started;
    let mut machine = TaskCarry::new(carry, method, params, known);
    // The host request's own options go with the one request that is its own.
    let mut options = Some(options);
    let now = || tokio::time::Instant::now().into_std();
    loop {
        if let Some(done) = machine.poll_done() {
            return done.map_err(|failure| match failure {
                Failure::Upstream(e) => e,
                Failure::Refused(error) => Error::Rpc { method, error },
                Failure::Malformed(detail) => Error::MalformedResult {
                    method: Method::CallTool,
                    detail,
                },
            });
        }
        // Every step leads to a command or to the end: none is a carry lost.
        let Some(command) = machine.poll_upstream() else {
            return Err(Error::Closed);
        };
        let (token, outcome) = match command {
            Command::Request {
                token,
                method,
                params,
                host_options,
            } => {
                let options = match host_options {
                    true => options.take().unwrap_or_default(),
                    false => RequestOptions::default(),
                };
                let answer = session.request_payload(method, &params, options).await;
                (token, answer.map(Upstream::Answer))
            }
            Command::GetTask { token, task_id } => {
                let task = session.get_task(&task_id).await;
                if let Err(Error::Rpc { error, .. }) = &task {
                    if error.code == capable::internal::jsonrpc::codes::INVALID_PARAMS {
                        gone.push(task_id);
                    }
                }
                (token, task.map(|t| Upstream::Task(Box::new(t))))
            }
            Command::CancelTask { token, task_id } => {
                let cancelled = session.cancel_task(&task_id).await;
                (token, cancelled.map(|()| Upstream::Cancelled))
            }
            Command::LearnSupport { token, name } => {
                // Learns the tools' `execution.taskSupport`; a failure leaves it unknown.
                let _ = session.list_tools().await;
                (
                    token,
                    Ok(Upstream::Support(session.tool_task_support(&name))),
                )
            }
            Command::CallWithoutTasks { token, params } => {
                let options = options.take().unwrap_or_default();
                let answer = call_without_tasks(&session, params, options, bound).await;
                (token, answer.map(Upstream::Answer))
            }
            Command::WaitForHost { token, task } => {
                let waited = wait_for_host(&session, task, bound, None).await;
                (token, waited.map_err(|e| ended(method, e)).map(result))
            }
            Command::AwaitResult { token, task } => {
                let task_id = task.task_id.clone();
                let statuses = statuses.clone();
                // The host hears of each change while it waits (2025-11-25 has the
                // notification; 2026-07-28 servers send none).
                let wait = TaskWait {
                    on_status: Some(Box::new(move |task: &Task| {
                        let _ = statuses.send(Event::TaskStatus(task_bridge::legacy_task(task)));
                    })),
                    deadline: None,
                };
                // The server's questions meanwhile reach the host as this task's.
                let waiting = FOR_TASK.scope(task_id, session.await_task(task, wait));
                let until = machine.poll_timeout().unwrap_or_else(now);
                match tokio::time::timeout_at(until.into(), waiting).await {
                    Ok(waited) => (token, waited.map_err(|e| ended(method, e)).map(result)),
                    // The task goes on at the server: the host may ask again.
                    Err(_) => {
                        machine.handle_timeout(now());
                        continue;
                    }
                }
            }
        };
        let outcome = outcome.unwrap_or_else(|error| Upstream::Failed {
            rpc: match &error {
                Error::Rpc { error, .. } => Some(error.clone()),
                _ => None,
            },
            error,
        });
        machine.handle_upstream(token, outcome, now());
    }
}

/// A tool's result, as an answer.
fn result(result: CallToolResult) -> Upstream<Error> {
    Upstream::Answer(Payload::from_json(
        serde_json::to_vec(&result).unwrap_or_default(),
    ))
}
