//! A 2025-11-25 task's questions, for a 2026-07-28 host: the server asks them on a
//! `tasks/result`, which such a host never calls; the bridge calls it, and the host
//! reads them in `tasks/get` and answers with `tasks/update`. Every decision — when a
//! `tasks/result` is opened and for how long, which question is a task's, what an
//! update answers — is the core's [`TaskInput`] (scripted tests there); this file runs
//! its commands on the session and carries out its outcomes.
//!
//! | what happens | what the bridge does |
//! |---|---|
//! | the host's `tasks/get` (or the call that made the task) finds it `input_required` | opens `tasks/result` at the server, within `--progress-cap`; the host sees `working` until the questions come |
//! | the server asks, naming the task (`_meta[RELATED_TASK]`) | kept as the task's; failing a name, the task's when nothing else of the host's could take it and one task is being fetched |
//! | the host's `tasks/get` | the task `input_required`, the open questions in `inputRequests` |
//! | the host's `tasks/update` | each answer to its question (a key that names none is ignored, with an audit notice); `{}` |
//! | the bridge's `tasks/result` ends, or outlives its bound (dropped: cancelled at the server) | what is still open fails at the server; the host fetches the outcome with `tasks/get` as before |

use std::time::Instant;

use capable::internal::bridge::task_input::{Command, Outcome, Question};
use capable::internal::jsonrpc::{Payload, RequestId};
use capable::internal::Method;
use capable::RequestOptions;
use futures_util::future::abortable;
use futures_util::FutureExt;
use serde_json::{json, Value};

use super::{Event, Relay};
use crate::upstream::Ask;

impl Relay {
    /// A task as a 2026-07-28 host is to see it (`answer`, from `tasks/get` or the call
    /// that made it), with the questions it asks; one the server reports
    /// `input_required` has its `tasks/result` opened.
    pub(super) fn with_questions(&mut self, answer: Payload) -> Payload {
        let task = self.task_input.handle_task(answer, Instant::now());
        self.run_task_input();
        task
    }

    /// A question of the server's for a 2026-07-28 host that is a task's: kept for the
    /// host's `tasks/get` (`None`), or given back when it is of no task being fetched.
    /// `nothing_else` says no request of the host's could take it.
    pub(super) fn ask_for_task(&mut self, ask: Ask, nothing_else: bool) -> Option<Ask> {
        let Ask {
            token,
            server,
            method,
            params,
            reply,
        } = ask;
        let question = Question {
            token,
            method,
            params,
            waiter: reply,
        };
        let back = match self.task_input.handle_question(question, nothing_else) {
            Ok(()) => None,
            Err(q) => Some(Ask {
                token: q.token,
                server,
                method: q.method,
                params: q.params,
                reply: q.waiter,
            }),
        };
        self.run_task_input();
        back
    }

    /// A 2026-07-28 host's `tasks/update` (`id`, `params`): its answers go to the
    /// questions the server asked; answered here.
    pub(super) fn update_task(&mut self, id: &RequestId, params: &Payload) {
        match self.task_input.handle_update(params) {
            Ok(done) => self.engine.respond(id, &done, &mut self.out),
            Err(why) => self.engine.respond_error(id, &why, &mut self.out),
        };
        self.run_task_input();
    }

    /// The bridge's `tasks/result` under `token` ended.
    pub(super) fn fetched(&mut self, token: u64) {
        self.fetches.remove(&token);
        self.task_input.handle_upstream(token, Instant::now());
        self.run_task_input();
    }

    /// Runs what the core's [`TaskInput`] asks for and carries out its outcomes.
    pub(super) fn run_task_input(&mut self) {
        while let Some(command) = self.task_input.poll_upstream() {
            match command {
                Command::Fetch { token, task_id } => self.fetch_questions(token, task_id),
                Command::Abandon { token } => {
                    if let Some(fetch) = self.fetches.remove(&token) {
                        fetch.abort();
                    }
                }
            }
        }
        while let Some(outcome) = self.task_input.poll_outcome() {
            match outcome {
                Outcome::Answer { waiter, answer } => {
                    let _ = waiter.send(Ok(answer));
                }
                Outcome::Fail { waiter, error } => {
                    let _ = waiter.send(Err(error));
                }
                Outcome::Notice(notice) => self.audit.host_round("info", &notice),
            }
        }
    }

    /// Opens `tasks/result` for `task_id` at the server under `token`: the task's
    /// questions come on it. Its end is [`Event::Fetched`]; dropped when the core
    /// abandons it (cancelled at the server; the task goes on).
    fn fetch_questions(&mut self, token: u64, task_id: String) {
        let Some(session) = self.servers.one().cloned() else {
            // No one server to ask: over at once.
            return self.task_input.handle_upstream(token, Instant::now());
        };
        let (fetch, handle) = abortable(async move {
            let params = json!({ "taskId": task_id });
            let options = RequestOptions::default();
            // The outcome is the host's to fetch with tasks/get: only the end matters.
            let _ = session
                .request::<_, Value>(Method::TaskResult, &params, options)
                .await;
        });
        self.fetches.insert(token, handle);
        self.queue.push(fetch.map(move |ended| match ended {
            Ok(()) => Event::Fetched(token),
            Err(_aborted) => Event::Nothing,
        }));
    }
}
