//! A 2025-11-25 task's questions, for a 2026-07-28 host: the server asks them on a
//! `tasks/result`, which such a host never calls; the bridge calls it, and the host
//! reads them in `tasks/get` and answers with `tasks/update`. What is shown, kept and
//! answered is the core's [`TaskQuestions`](capable::internal::task_questions); this file
//! sends the `tasks/result` and routes the questions and answers.
//!
//! | what happens | what the bridge does |
//! |---|---|
//! | the host's `tasks/get` (or the call that made the task) finds it `input_required` | opens `tasks/result` at the server, within `--progress-cap`; the host sees `working` until the questions come |
//! | the server asks, naming the task (`_meta[RELATED_TASK]`) | kept as the task's; failing a name, the task's when nothing else of the host's could take it and one task is being fetched |
//! | the host's `tasks/get` | the task `input_required`, the open questions in `inputRequests` |
//! | the host's `tasks/update` | each answer to its question (a key that names none is ignored, with an audit notice); `{}` |
//! | the bridge's `tasks/result` ends | what is still open fails at the server; the host fetches the outcome with `tasks/get` as before |

use std::time::Duration;

use capable::internal::jsonrpc::{Payload, RequestId};
use capable::internal::Method;
use capable::RequestOptions;
use serde_json::{json, Value};

use super::{gone, invalid_params, Event, Relay};
use crate::upstream::Ask;

impl Relay {
    /// A task as a 2026-07-28 host is to see it (`answer`, from `tasks/get` or the call
    /// that made it), with the questions it asks; one the server reports
    /// `input_required` has its `tasks/result` opened.
    pub(super) fn with_questions(&mut self, answer: Payload) -> Payload {
        let Ok(mut task) = answer.decode::<Value>() else {
            return answer;
        };
        if self.task_questions.present(&mut task) {
            if let Some(task_id) = task.get("taskId").and_then(Value::as_str) {
                self.fetch_questions(task_id.to_owned());
            }
        }
        Payload::from_json(task.to_string().into_bytes())
    }

    /// Opens `tasks/result` for `task_id` at the server: the task's questions come on
    /// it. Given up past `--progress-cap` (cancelled at the server; the task goes on,
    /// and a later `input_required` opens another).
    fn fetch_questions(&mut self, task_id: String) {
        let Some(session) = self.servers.one().cloned() else {
            return;
        };
        let bound: Duration = self.engine.config().request_timeout;
        let fetch = async move {
            let params = json!({ "taskId": task_id });
            let options = RequestOptions::default();
            let result = session.request::<_, Value>(Method::TaskResult, &params, options);
            // The outcome is the host's to fetch with tasks/get: only the end matters.
            let _ = tokio::time::timeout(bound, result).await;
            Event::Fetched(task_id)
        };
        self.queue.push(fetch);
    }

    /// The bridge's `tasks/result` for `task_id` ended: the questions still open fail.
    pub(super) fn fetched(&mut self, task_id: &str) {
        for reply in self.task_questions.fetched(task_id) {
            let _ = reply.send(Err(gone(
                "the task's tasks/result ended before the host answered",
            )));
        }
    }

    /// A question of the server's for a 2026-07-28 host that is a task's: kept for the
    /// host's `tasks/get` (`None`), or given back when it is of no task being fetched.
    /// `nothing_else` says no request of the host's could take it.
    pub(super) fn ask_for_task(&mut self, ask: Ask, nothing_else: bool) -> Option<Ask> {
        let task_id = self.task_questions.claims(&ask.params, nothing_else);
        let Some(task_id) = task_id.map(str::to_owned) else {
            return Some(ask);
        };
        let Ask {
            token,
            method,
            params,
            reply,
            ..
        } = ask;
        let asked = self
            .task_questions
            .ask(&task_id, token, method, params, reply);
        if let Err(reply) = asked {
            // Cannot be: the task is being fetched (above).
            let _ = reply.send(Err(gone("the task asks nothing now")));
        }
        None
    }

    /// A 2026-07-28 host's `tasks/update` (`id`, `params`): its answers go to the
    /// questions the server asked; answered here.
    pub(super) fn update_task(&mut self, id: &RequestId, params: &Payload) {
        let params: Value = params.decode().unwrap_or_default();
        let task_id = params.get("taskId").and_then(Value::as_str);
        let responses = params.get("inputResponses").and_then(Value::as_object);
        let (Some(task_id), Some(responses)) = (task_id, responses) else {
            let why = invalid_params("tasks/update needs taskId and inputResponses", None);
            self.engine.respond_error(id, &why, &mut self.out);
            return;
        };
        let update = match self.task_questions.update(task_id, responses) {
            Ok(update) => update,
            Err(why) => {
                self.engine.respond_error(id, &why, &mut self.out);
                return;
            }
        };
        for (reply, answer) in update.answers {
            let _ = reply.send(Ok(answer));
        }
        if !update.ignored.is_empty() {
            let notice = format!(
                "the host's tasks/update of task {task_id} answered {}, which it does not ask (now): ignored",
                update.ignored.join(", ")
            );
            self.audit.host_round("info", &notice);
        }
        let done = json!({"resultType": "complete"});
        self.engine.respond(id, &done, &mut self.out);
    }
}
