//! One host request carried across the eras' tasks, sans-IO ([`TaskCarry`]): the
//! requests it takes at the server, in order, and the answer the host gets — with no
//! I/O. The shell runs each [`Command`] on the session to the server, hands its outcome
//! back with [`TaskCarry::handle_upstream`], and answers the host once the carry is
//! [`done`](TaskCarry::poll_done); a wait with a bound ends at
//! [`poll_timeout`](TaskCarry::poll_timeout), told with
//! [`handle_timeout`](TaskCarry::handle_timeout).
//!
//! Which carry a host request takes is [`TaskBridge::route`](crate::task_bridge::TaskBridge::route)'s;
//! every wire form is [`task_bridge`](crate::task_bridge)'s. The steps:
//!
//! | carry | commands, in order | the host gets |
//! |---|---|---|
//! | legacy `tools/list` | `tools/list` | the list, tools that say nothing of tasks `optional` |
//! | legacy `tools/call` | `tools/call` (without `task`); a task it made, unasked, waited for ([`Command::WaitForHost`]) | the result; `{task}` when the host asked for one |
//! | legacy `tasks/get` | `tasks/get` | the task, legacy form |
//! | legacy `tasks/result` | `tasks/get`, then the wait to its end ([`Command::AwaitResult`], bounded) | the result naming the task; past the bound, an error saying the task goes on |
//! | legacy `tasks/cancel` | `tasks/cancel`, `tasks/get` | the task, legacy form |
//! | legacy `tasks/list` | `tasks/get` of each task at the server, in order | the tasks, one page; one the server refuses is not listed; a `cursor` (none was given) is `-32602` |
//! | 2026-07-28 `tools/call` | the tool's support learnt when unknown; the call (with `task` when it may be one), or for a host without the extension [`Command::CallWithoutTasks`] | the result, or the task (`resultType: "task"`) |
//! | 2026-07-28 `tasks/get` | `tasks/get`; `tasks/result` once it is over (completed or failed) | the task with its outcome inline |
//! | 2026-07-28 `tasks/cancel` | `tasks/cancel` | `{}` |
//! | 2026-07-28 `tasks/update` | nothing (the relay answers its questions) | `{"resultType": "complete"}` |
//!
//! A `tasks/…` request without `params.taskId` is refused before anything is sent.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::jsonrpc::{codes, Payload, RpcError};
use crate::model::{Task, TaskSupport};
use crate::task_bridge::{self, Carry};
use crate::task_call;
use crate::task_started::Listed;
use crate::Method;

/// What the shell runs on the session to the server for a carry; its outcome comes
/// back under `token` ([`TaskCarry::handle_upstream`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Sends `method` with `params`; answered with [`Upstream::Answer`]. `host_options`:
    /// with the host request's own options (its progress, the cache bypassed), else
    /// the defaults.
    Request {
        /// The outcome's token.
        token: u64,
        /// The method.
        method: Method,
        /// Its params.
        params: Map<String, Value>,
        /// With the host request's options.
        host_options: bool,
    },
    /// `tasks/get` of `task_id`; answered with [`Upstream::Task`].
    GetTask {
        /// The outcome's token.
        token: u64,
        /// The task.
        task_id: String,
    },
    /// `tasks/cancel` of `task_id`; answered with [`Upstream::Cancelled`].
    CancelTask {
        /// The outcome's token.
        token: u64,
        /// The task.
        task_id: String,
    },
    /// Lists the server's tools, to learn tool `name`'s `execution.taskSupport`;
    /// answered with [`Upstream::Support`] (a failure leaves it unknown).
    LearnSupport {
        /// The outcome's token.
        token: u64,
        /// The tool.
        name: String,
    },
    /// A `tools/call` (`params`) for a host that sees no tasks: a tool that requires
    /// one gets it asked for and waited for, within the host request's bound;
    /// answered with [`Upstream::Answer`] (the tool's result).
    CallWithoutTasks {
        /// The outcome's token.
        token: u64,
        /// The call's params.
        params: Map<String, Value>,
    },
    /// Waits for `task`, which the host does not see, to end (within the host
    /// request's bound; the host's cancel cancels it); answered with
    /// [`Upstream::Answer`] (the tool's result).
    WaitForHost {
        /// The outcome's token.
        token: u64,
        /// The task.
        task: Task,
    },
    /// Waits for `task` to end for a legacy host's `tasks/result`, each change of
    /// status told to the host and each question of the task's put to it; answered
    /// with [`Upstream::Answer`] (the tool's result). Bounded by the carry's
    /// [`poll_timeout`](TaskCarry::poll_timeout): the shell drops it then.
    AwaitResult {
        /// The outcome's token.
        token: u64,
        /// The task.
        task: Task,
    },
}

/// The outcome of a [`Command`], as the shell hands it back.
#[derive(Debug)]
pub enum Upstream<E> {
    /// The answer to a request, a call or a wait.
    Answer(Payload),
    /// The task `tasks/get` described.
    Task(Box<Task>),
    /// `tasks/cancel` was accepted.
    Cancelled,
    /// The tool's `execution.taskSupport` as listed (`None`: unknown).
    Support(Option<TaskSupport>),
    /// It failed with `error`; `rpc` when it was the server's JSON-RPC error.
    Failed {
        /// The server's JSON-RPC error, when it was one.
        rpc: Option<RpcError>,
        /// The failure, given back as it is when the carry ends with it.
        error: E,
    },
}

/// How a carry ended in failure ([`TaskCarry::poll_done`]).
#[derive(Debug)]
pub enum Failure<E> {
    /// A command's failure, as it came.
    Upstream(E),
    /// The host request is answered with this error (of the host's method).
    Refused(RpcError),
    /// The server's `tools/call` answer claims a task and is not one: what is wrong.
    Malformed(String),
}

/// Which answer the carry waits for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// The host's own request (or the call for a host without tasks).
    Sent,
    /// A task the host did not ask for, waited on.
    Waited,
    /// `tasks/get` of the task named.
    Got,
    /// The wait for a legacy host's `tasks/result`.
    Awaited,
    /// `tasks/cancel`, before its `tasks/get`.
    Cancelled,
    /// `tasks/get` of the next task listed.
    Listing,
    /// The tool's support, learnt.
    Learnt,
    /// A 2026-07-28 host's finished task's `tasks/result`.
    Outcome,
}

/// One carried host request (see the module documentation). `E` is the shell's error,
/// given back as it is.
#[derive(Debug)]
pub struct TaskCarry<E> {
    carry: Carry,
    method: Method,
    params: Map<String, Value>,
    bound: Duration,
    /// The task the host's request names (`params.taskId`).
    task_id: Option<String>,
    /// The tool's support, as the session knows it.
    support: Option<TaskSupport>,
    /// The server takes task calls (2025-11-25, declared).
    task_calls: bool,
    /// A legacy host's `tasks/list`: what is left to ask about, and what is listed.
    to_list: VecDeque<Listed>,
    listed: Vec<Value>,
    /// The task a 2026-07-28 host's `tasks/get` found.
    task: Option<Task>,
    /// The command to run next.
    next: Option<Command>,
    /// The outstanding command's token and what it is.
    waiting: Option<(u64, Stage)>,
    tokens: u64,
    deadline: Option<Instant>,
    done: Option<Result<Payload, Failure<E>>>,
}

/// What the carry needs to know of the session and the host request
/// ([`TaskCarry::new`]).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Known {
    /// How long a wait for a task's end may last (the host request's bound).
    pub bound: Duration,
    /// For a `tools/call`: the tool's `execution.taskSupport` as the session last
    /// listed it (`None`: unknown, learnt first).
    pub support: Option<TaskSupport>,
    /// The server takes task calls ([`task_call::takes_task_calls`]).
    pub task_calls: bool,
    /// For a legacy host's `tasks/list`: the tasks it started through the bridge.
    pub started: Vec<Listed>,
}

impl Known {
    /// Nothing known, and waits bounded by `bound`.
    pub fn new(bound: Duration) -> Self {
        Known {
            bound,
            ..Known::default()
        }
    }
}

impl<E> TaskCarry<E> {
    /// Carries host request `method` (`params`, the host's envelope out) as `carry`
    /// says, knowing `known`; its first command is ready at once.
    pub fn new(carry: Carry, method: Method, mut params: Map<String, Value>, known: Known) -> Self {
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if matches!(carry, Carry::CallForLegacy { .. }) {
            // The server is asked for the call; whether it is a task is its choice.
            params.remove("task");
        }
        let mut c = TaskCarry {
            carry,
            method,
            params,
            bound: known.bound,
            task_id,
            support: known.support,
            task_calls: known.task_calls,
            to_list: known.started.into(),
            listed: Vec::new(),
            task: None,
            next: None,
            waiting: None,
            tokens: 0,
            deadline: None,
            done: None,
        };
        c.start();
        c
    }

    /// The next command to run, once each.
    pub fn poll_upstream(&mut self) -> Option<Command> {
        self.next.take()
    }

    /// The host's answer, once the carry is over (taken once).
    pub fn poll_done(&mut self) -> Option<Result<Payload, Failure<E>>> {
        self.done.take()
    }

    /// When the wait under way gives up ([`handle_timeout`](Self::handle_timeout)).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }

    /// `now` is past [`poll_timeout`](Self::poll_timeout): a legacy host's
    /// `tasks/result` is answered with an error saying the task goes on at the server.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.deadline.is_none_or(|d| now < d) {
            return;
        }
        self.deadline = None;
        self.waiting = None;
        let task_id = self.task_id.as_deref().unwrap_or("");
        let message = format!(
            "task {task_id} did not end within {:?}; it goes on at the server: ask tasks/result \
             again, or tasks/cancel it",
            self.bound
        );
        self.fail_with(codes::INTERNAL_ERROR, message);
    }

    /// The outcome of the command under `token`, at `now` (a token not outstanding is
    /// ignored).
    pub fn handle_upstream(&mut self, token: u64, event: Upstream<E>, now: Instant) {
        let stage = match self.waiting {
            Some((t, stage)) if t == token => stage,
            _ => return,
        };
        self.waiting = None;
        self.deadline = None;
        match (stage, event) {
            (Stage::Learnt, Upstream::Support(support)) => {
                self.support = support;
                self.call_for_modern();
            }
            // A failed listing leaves the call as it would have been.
            (Stage::Learnt, Upstream::Failed { .. }) => self.call_for_modern(),
            (Stage::Sent, Upstream::Answer(answer)) => self.sent(answer),
            (Stage::Waited, Upstream::Answer(result)) => self.finish(Ok(result)),
            (Stage::Got, Upstream::Task(task)) => self.got(*task, now),
            (Stage::Awaited, Upstream::Answer(result)) => {
                let task_id = self.task_id.as_deref().unwrap_or("");
                match result.decode::<Value>() {
                    Ok(result) => {
                        self.finish_value(task_bridge::with_related_task(result, task_id))
                    }
                    Err(_) => self.finish(Ok(result)),
                }
            }
            (Stage::Cancelled, Upstream::Cancelled) => match self.carry {
                Carry::CancelForLegacy => {
                    let task_id = self.task_id.clone().unwrap_or_default();
                    self.command(Stage::Got, |token| Command::GetTask { token, task_id });
                }
                _ => self.finish_value(json!({})),
            },
            (Stage::Listing, Upstream::Task(task)) => {
                self.listed.push(task_bridge::legacy_task(&task));
                self.list_next();
            }
            // Expired, or unknown at the server now: not listed.
            (Stage::Listing, Upstream::Failed { rpc: Some(_), .. }) => self.list_next(),
            (Stage::Outcome, Upstream::Answer(result)) => {
                let outcome = result.decode::<Value>().unwrap_or_default();
                self.modern_get(Some(Ok(outcome)));
            }
            // A 2026-07-28 host sees the task's error inline.
            (
                Stage::Outcome,
                Upstream::Failed {
                    rpc: Some(error), ..
                },
            ) => self.modern_get(Some(Err(error))),
            (_, Upstream::Failed { error, .. }) => self.finish(Err(Failure::Upstream(error))),
            // Not an outcome this command has: the carry cannot go on.
            (_, _) => self.fail_with(
                codes::INTERNAL_ERROR,
                format!(
                    "{}: the bridge got an outcome its request does not have",
                    self.method
                ),
            ),
        }
    }

    fn start(&mut self) {
        use Carry::*;
        let needs_task = matches!(
            self.carry,
            GetForLegacy | ResultForLegacy | CancelForLegacy | GetForModern | CancelForModern
        );
        if needs_task && self.task_id.is_none() {
            let message = format!("{} needs params.taskId", self.method);
            return self.fail_with(codes::INVALID_PARAMS, message);
        }
        let task_id = self.task_id.clone().unwrap_or_default();
        match self.carry {
            ListToolsForLegacy | CallForLegacy { .. } => self.send_own(),
            GetForLegacy | ResultForLegacy | GetForModern => {
                self.command(Stage::Got, |token| Command::GetTask { token, task_id })
            }
            CancelForLegacy | CancelForModern => self.command(Stage::Cancelled, |token| {
                Command::CancelTask { token, task_id }
            }),
            // One page (the server picks the page size): no cursor was ever given.
            ListForLegacy if self.params.get("cursor").is_some_and(Value::is_string) => self
                .fail_with(
                    codes::INVALID_PARAMS,
                    "Invalid cursor: the bridge lists a host's tasks in one page".into(),
                ),
            ListForLegacy => self.list_next(),
            CallForModern { .. } if self.support.is_none() => {
                let name = self.tool_name();
                self.command(Stage::Learnt, |token| Command::LearnSupport { token, name })
            }
            CallForModern { .. } => self.call_for_modern(),
            UpdateForModern => self.finish_value(json!({"resultType": "complete"})),
        }
    }

    /// The host's own request, as it is (bar what `new` took out).
    fn send_own(&mut self) {
        let (method, params) = (self.method, self.params.clone());
        self.command(Stage::Sent, |token| Command::Request {
            token,
            method,
            params,
            host_options: true,
        });
    }

    fn tool_name(&self) -> String {
        let name = self.params.get("name").and_then(Value::as_str);
        name.unwrap_or("").to_owned()
    }

    /// A 2026-07-28 host's call, the tool's support known as far as it can be.
    fn call_for_modern(&mut self) {
        let declared = matches!(self.carry, Carry::CallForModern { declared: true });
        if !declared {
            let params = self.params.clone();
            return self.command(Stage::Waited, |token| Command::CallWithoutTasks {
                token,
                params,
            });
        }
        if task_call::wants_task(self.support, true) && self.task_calls {
            self.params.insert("task".into(), json!({}));
        }
        self.send_own();
    }

    /// The server answered the host's own request.
    fn sent(&mut self, answer: Payload) {
        match self.carry {
            Carry::ListToolsForLegacy => {
                let Ok(mut list) = answer.decode::<Value>() else {
                    return self.finish(Ok(answer));
                };
                task_bridge::tools_for_legacy(&mut list);
                self.finish_value(list);
            }
            Carry::CallForLegacy { asked } => match task_call::started_task(&answer) {
                Err(detail) => self.finish(Err(Failure::Malformed(detail))),
                Ok(None) => self.finish(Ok(answer)),
                Ok(Some(task)) if asked => {
                    self.finish_value(json!({"task": task_bridge::legacy_task(&task)}))
                }
                // The host asked for no task: it gets what the call would have given.
                Ok(Some(task)) => {
                    self.command(Stage::Waited, |token| Command::WaitForHost { token, task })
                }
            },
            Carry::CallForModern { .. } => match task_call::started_task(&answer) {
                Err(detail) => self.finish(Err(Failure::Malformed(detail))),
                Ok(Some(task)) => self.finish_value(task_bridge::modern_task(&task, "task", None)),
                // A plain result: the relay adds what 2026-07-28 requires.
                Ok(None) => self.finish(Ok(answer)),
            },
            _ => self.finish(Ok(answer)),
        }
    }

    /// `tasks/get` described the task named.
    fn got(&mut self, task: Task, now: Instant) {
        match self.carry {
            Carry::ResultForLegacy => {
                self.deadline = Some(now + self.bound);
                self.command(Stage::Awaited, |token| Command::AwaitResult { token, task });
            }
            Carry::GetForModern if task_bridge::needs_outcome(&task) => {
                let mut params = Map::new();
                params.insert("taskId".into(), json!(task.task_id));
                self.task = Some(task);
                self.command(Stage::Outcome, |token| Command::Request {
                    token,
                    method: Method::TaskResult,
                    params,
                    host_options: false,
                });
            }
            Carry::GetForModern => {
                self.task = Some(task);
                self.modern_get(None);
            }
            _ => self.finish_value(task_bridge::legacy_task(&task)),
        }
    }

    /// A 2026-07-28 host's `tasks/get`, with the outcome found.
    fn modern_get(&mut self, outcome: Option<Result<Value, RpcError>>) {
        if let Some(task) = self.task.take() {
            self.finish_value(task_bridge::modern_task(&task, "complete", outcome));
        }
    }

    /// A legacy host's `tasks/list`: the next task at the server asked about, or the
    /// list.
    fn list_next(&mut self) {
        while let Some(listed) = self.to_list.pop_front() {
            match listed {
                Listed::Settled(task) => self.listed.push(task),
                Listed::AtServer(task_id) => {
                    return self
                        .command(Stage::Listing, |token| Command::GetTask { token, task_id });
                }
            }
        }
        let tasks = std::mem::take(&mut self.listed);
        self.finish_value(json!({ "tasks": tasks }));
    }

    fn command(&mut self, stage: Stage, make: impl FnOnce(u64) -> Command) {
        self.tokens += 1;
        let token = self.tokens;
        self.waiting = Some((token, stage));
        self.next = Some(make(token));
    }

    fn finish_value(&mut self, answer: Value) {
        self.finish(Ok(Payload::from_json(answer.to_string().into_bytes())));
    }

    fn fail_with(&mut self, code: i64, message: String) {
        let error = RpcError {
            code,
            message,
            data: None,
        };
        self.finish(Err(Failure::Refused(error)));
    }

    fn finish(&mut self, done: Result<Payload, Failure<E>>) {
        self.next = None;
        self.waiting = None;
        self.done = Some(done);
    }
}

#[cfg(test)]
#[path = "task_carry_tests.rs"]
mod tests;
