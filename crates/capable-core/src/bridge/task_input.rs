//! A 2025-11-25 task's questions for a 2026-07-28 host, sans-IO ([`TaskInput`]): when
//! the bridge opens a `tasks/result` at the server to bring a task's questions, how long
//! it keeps it open, which of the server's questions are a task's, and what the host's
//! `tasks/update` answers — with no I/O.
//!
//! A 2025-11-25 server asks a task's questions on the client's `tasks/result`, which a
//! 2026-07-28 host never calls: it reads them in `tasks/get` and answers with
//! `tasks/update`. What a task shows and which answer goes to which question is
//! [`TaskQuestions`]'s; this machine adds the requests the bridge makes for it and
//! their deadlines. The shell runs each [`Command`], tells the end of a fetch with
//! [`TaskInput::handle_upstream`], wakes at [`TaskInput::poll_timeout`] for
//! [`TaskInput::handle_timeout`], and carries out every [`Outcome`].
//!
//! | what happens | in | what comes out |
//! |---|---|---|
//! | the host's `tasks/get` (or the call that made it) finds a task `input_required` | [`handle_task`](TaskInput::handle_task) | the task `working` until its questions come; [`Command::Fetch`] once per task, bounded |
//! | the server asks | [`handle_question`](TaskInput::handle_question) | kept, when it names a task being fetched, or names none while one task alone is and nothing else of the host's could take it; else given back |
//! | the host's `tasks/get` again | [`handle_task`](TaskInput::handle_task) | `input_required`, the open questions in `inputRequests` |
//! | the host's `tasks/update` | [`handle_update`](TaskInput::handle_update) | its answer `{"resultType": "complete"}`; an [`Outcome::Answer`] per question answered, an [`Outcome::Notice`] naming the keys that answer none; refused (`-32602`) without `taskId` and `inputResponses`, or for a task that asks nothing |
//! | the server withdraws a question | [`handle_withdrawn`](TaskInput::handle_withdrawn) | it leaves `inputRequests`; an [`Outcome::Notice`] |
//! | the fetch ends | [`handle_upstream`](TaskInput::handle_upstream) | an [`Outcome::Fail`] per question still open; a later `input_required` fetches again |
//! | the fetch outlives its bound | [`handle_timeout`](TaskInput::handle_timeout) | [`Command::Abandon`] (the shell drops it: cancelled at the server, the task goes on), and the same as its end |
//!
//! Generic over the waiter `W` (where a question's answer goes).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jsonrpc::{codes, Payload, RpcError};
use crate::server::ServerMethod;
use crate::task_questions::TaskQuestions;

/// What the shell runs on the session to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Sends `tasks/result` of `task_id`: the task's questions come on it. Its end,
    /// whatever it brought, is told with [`TaskInput::handle_upstream`] under `token`.
    Fetch {
        /// The fetch's token.
        token: u64,
        /// The task.
        task_id: String,
    },
    /// Drops the fetch under `token` (cancelled at the server; the task goes on).
    Abandon {
        /// The fetch's token.
        token: u64,
    },
}

/// What the shell carries out for the questions.
#[derive(Debug, PartialEq)]
pub enum Outcome<W> {
    /// The host answered the question whose waiter this is.
    Answer {
        /// Where the answer goes.
        waiter: W,
        /// The host's answer.
        answer: Value,
    },
    /// The question whose waiter this is fails at the server with `error`.
    Fail {
        /// Where the failure goes.
        waiter: W,
        /// Why.
        error: RpcError,
    },
    /// Something the audit says (at level `info`).
    Notice(String),
}

/// A question of the server's, as [`TaskInput::handle_question`] takes it (and gives
/// it back when it is no task's).
#[derive(Debug, PartialEq)]
pub struct Question<W> {
    /// The bridge's token for it (see [`TaskInput::handle_withdrawn`]).
    pub token: u64,
    /// The server's method.
    pub method: ServerMethod,
    /// Its params, as the server sent them.
    pub params: Value,
    /// Where its answer goes.
    pub waiter: W,
}

/// One fetch open at the server.
#[derive(Debug)]
struct Fetch {
    task_id: String,
    deadline: Instant,
}

/// The questions of the legacy tasks a 2026-07-28 host follows, and the `tasks/result`
/// each comes on. See the module documentation.
#[derive(Debug)]
pub struct TaskInput<W> {
    questions: TaskQuestions<W>,
    /// How long a fetch stays open.
    bound: Duration,
    /// The fetches open, by token.
    fetches: BTreeMap<u64, Fetch>,
    tokens: u64,
    commands: VecDeque<Command>,
    outcomes: VecDeque<Outcome<W>>,
}

impl<W> TaskInput<W> {
    /// No task asks anything; a fetch stays open at most `bound`.
    pub fn new(bound: Duration) -> Self {
        TaskInput {
            questions: TaskQuestions::new(),
            bound,
            fetches: BTreeMap::new(),
            tokens: 0,
            commands: VecDeque::new(),
            outcomes: VecDeque::new(),
        }
    }

    /// The next command to run, once each.
    pub fn poll_upstream(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// The next outcome to carry out, once each.
    pub fn poll_outcome(&mut self) -> Option<Outcome<W>> {
        self.outcomes.pop_front()
    }

    /// When the first fetch open outlives its bound ([`handle_timeout`](Self::handle_timeout)).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.fetches.values().map(|f| f.deadline).min()
    }

    /// A task as the host is to see it (`answer`, from `tasks/get` or the call that
    /// made it, at `now`), with the questions it asks; one the server reports
    /// `input_required` whose questions are not here yet has them fetched
    /// ([`Command::Fetch`]). An answer that is not JSON is given back as it is.
    pub fn handle_task(&mut self, answer: Payload, now: Instant) -> Payload {
        let Ok(mut task) = answer.decode::<Value>() else {
            return answer;
        };
        if self.questions.present(&mut task) {
            if let Some(task_id) = task.get("taskId").and_then(Value::as_str) {
                self.tokens += 1;
                let (token, task_id) = (self.tokens, task_id.to_owned());
                let deadline = now + self.bound;
                let fetch = Fetch {
                    task_id: task_id.clone(),
                    deadline,
                };
                self.fetches.insert(token, fetch);
                self.commands.push_back(Command::Fetch { token, task_id });
            }
        }
        Payload::from_json(task.to_string().into_bytes())
    }

    /// A question of the server's: kept as a task's (`Ok`) when it names a task being
    /// fetched, or names none while exactly one is and `nothing_else` of the host's
    /// could take it; given back otherwise.
    pub fn handle_question(
        &mut self,
        question: Question<W>,
        nothing_else: bool,
    ) -> Result<(), Question<W>> {
        let claimed = self.questions.claims(&question.params, nothing_else);
        let Some(task_id) = claimed.map(str::to_owned) else {
            return Err(question);
        };
        let Question {
            token,
            method,
            params,
            waiter,
        } = question;
        if let Err(waiter) = self.questions.ask(&task_id, token, method, params, waiter) {
            // Cannot be: the task is being fetched (claimed above).
            self.outcomes
                .push_back(fail(waiter, "the task asks nothing now"));
        }
        Ok(())
    }

    /// A 2026-07-28 host's `tasks/update` (`params`): each answer goes to its
    /// question ([`Outcome::Answer`]); keys that answer none are said
    /// ([`Outcome::Notice`]). The host's answer, or why it is refused.
    pub fn handle_update(&mut self, params: &Payload) -> Result<Value, RpcError> {
        let params: Value = params.decode().unwrap_or_default();
        let task_id = params.get("taskId").and_then(Value::as_str);
        let responses = params.get("inputResponses").and_then(Value::as_object);
        let (Some(task_id), Some(responses)) = (task_id, responses) else {
            return Err(RpcError {
                code: codes::INVALID_PARAMS,
                message: "tasks/update needs taskId and inputResponses".into(),
                data: None,
            });
        };
        let update = self.questions.update(task_id, responses)?;
        for (waiter, answer) in update.answers {
            self.outcomes.push_back(Outcome::Answer { waiter, answer });
        }
        if !update.ignored.is_empty() {
            self.outcomes.push_back(Outcome::Notice(format!(
                "the host's tasks/update of task {task_id} answered {}, which it does not ask (now): ignored",
                update.ignored.join(", ")
            )));
        }
        Ok(json!({"resultType": "complete"}))
    }

    /// Question `token` is over at the server: it leaves its task's `inputRequests`
    /// (and the audit says so). Whether it was a task's.
    pub fn handle_withdrawn(&mut self, token: u64) -> bool {
        let withdrawn = self.questions.withdraw(token);
        if withdrawn {
            self.outcomes.push_back(Outcome::Notice(
                "the server withdrew a question of a task's that a 2026-07-28 host follows".into(),
            ));
        }
        withdrawn
    }

    /// The fetch under `token` ended (a token not open is ignored): the questions
    /// still open fail.
    pub fn handle_upstream(&mut self, token: u64, _now: Instant) {
        if let Some(fetch) = self.fetches.remove(&token) {
            self.over(
                &fetch.task_id,
                "the task's tasks/result ended before the host answered",
            );
        }
    }

    /// `now` is past [`poll_timeout`](Self::poll_timeout): each fetch past its bound is
    /// abandoned and its questions fail.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<u64> = self
            .fetches
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(token, _)| *token)
            .collect();
        for token in expired {
            if let Some(fetch) = self.fetches.remove(&token) {
                self.commands.push_back(Command::Abandon { token });
                let why = "the host did not answer the task's questions in time";
                self.over(&fetch.task_id, why);
            }
        }
    }

    /// The bridge is closing: every waiter still open, to fail (the shell drops its
    /// fetches).
    pub fn close(&mut self) -> Vec<W> {
        self.fetches.clear();
        self.commands.clear();
        let mut open: Vec<W> = self.questions.drain();
        open.extend(self.outcomes.drain(..).filter_map(|o| match o {
            Outcome::Answer { waiter, .. } | Outcome::Fail { waiter, .. } => Some(waiter),
            Outcome::Notice(_) => None,
        }));
        open
    }

    /// Task `task_id`'s fetch is over: what is open fails with `why`.
    fn over(&mut self, task_id: &str, why: &str) {
        for waiter in self.questions.fetched(task_id) {
            self.outcomes.push_back(fail(waiter, why));
        }
    }
}

/// Question `waiter` fails with `why`.
fn fail<W>(waiter: W, why: &str) -> Outcome<W> {
    let error = RpcError {
        code: codes::INTERNAL_ERROR,
        message: why.to_owned(),
        data: None,
    };
    Outcome::Fail { waiter, error }
}

#[cfg(test)]
#[path = "task_input_tests.rs"]
mod tests;
