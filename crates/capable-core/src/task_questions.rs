//! A 2025-11-25 task's questions, for a 2026-07-28 host in front of it.
//!
//! The two eras ask a task's questions in different ways. A 2025-11-25 task that needs
//! input goes `input_required`, and its questions come as requests of the server's
//! (`elicitation/create`, `sampling/createMessage`, each naming the task in
//! `_meta[RELATED_TASK]`) while the client's `tasks/result` for it is open. A
//! 2026-07-28 host never calls `tasks/result` and takes no requests: it reads the
//! questions in `tasks/get` (`status: "input_required"`, `inputRequests`) and answers
//! them with `tasks/update` (`inputResponses`, under the same keys).
//!
//! A bridge between them keeps a [`TaskQuestions`]; this decides, the bridge sends:
//!
//! | what happens | what it decides |
//! |---|---|
//! | the host's `tasks/get` finds the server's task `input_required` | [`TaskQuestions::present`]: the questions come on a `tasks/result` the bridge opens (`true`: open it, once per task); the host sees `working` until they are here |
//! | the server asks | [`TaskQuestions::claims`]: a task's when it names a task whose `tasks/result` is open, or names none while exactly one is open and no request of the host's could take it |
//! | the server asks, naming the task | [`TaskQuestions::ask`]: kept under a key of its own (`q1`, `q2`, …) |
//! | the host's `tasks/get` again | [`TaskQuestions::present`]: `input_required` with every question not yet answered in `inputRequests`, whatever the server's status says meanwhile |
//! | the host's `tasks/update` | [`TaskQuestions::update`]: each answer to its question's waiter; a key that names no open question is ignored (and said); a task that asks nothing is refused (`-32602`) |
//! | the server withdraws a question (`notifications/cancelled`) | [`TaskQuestions::withdraw`]: it leaves `inputRequests` |
//! | the bridge's `tasks/result` ends (the task is over, or the wait was given up) | [`TaskQuestions::fetched`]: what is still open fails; a later `input_required` opens a new one |
//!
//! Generic over the waiter `W` (where an answer goes), without I/O.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::jsonrpc::{codes, RpcError};
use crate::server::ServerMethod;
use crate::task_bridge::RELATED_TASK;

/// One question of a task's, open.
#[derive(Debug)]
struct Question<W> {
    /// The bridge's token for it (see [`TaskQuestions::withdraw`]).
    token: u64,
    method: ServerMethod,
    params: Value,
    waiter: W,
}

/// What one task asks now, and whether its `tasks/result` is open.
#[derive(Debug)]
struct Asking<W> {
    /// The bridge's `tasks/result` for it is open (the questions come on it).
    fetching: bool,
    /// By key, in the order asked.
    questions: BTreeMap<String, Question<W>>,
    /// The number of the next key.
    next: u64,
}

impl<W> Default for Asking<W> {
    fn default() -> Self {
        Asking {
            fetching: false,
            questions: BTreeMap::new(),
            next: 1,
        }
    }
}

/// The questions of the 2025-11-25 tasks a 2026-07-28 host follows. See the module
/// documentation.
#[derive(Debug)]
pub struct TaskQuestions<W> {
    tasks: BTreeMap<String, Asking<W>>,
}

impl<W> Default for TaskQuestions<W> {
    fn default() -> Self {
        TaskQuestions {
            tasks: BTreeMap::new(),
        }
    }
}

/// What a host's `tasks/update` carried.
#[derive(Debug)]
pub struct Update<W> {
    /// Each answer, with the waiter of the question it answers.
    pub answers: Vec<(W, Value)>,
    /// Keys that named no open question (asked and withdrawn, answered before, or
    /// never asked): ignored.
    pub ignored: Vec<String>,
}

/// The task a server's request names (`_meta[RELATED_TASK].taskId`), if it names one.
pub fn related_task(params: &Value) -> Option<&str> {
    params
        .get("_meta")?
        .get(RELATED_TASK)?
        .get("taskId")?
        .as_str()
}

impl<W> TaskQuestions<W> {
    /// No task asks anything.
    pub fn new() -> Self {
        Self::default()
    }

    /// A 2026-07-28 task (`task`, as the host is to get it from `tasks/get`, or from
    /// the call that made it) completed with what the bridge knows: a task with open
    /// questions is `input_required` with them as `inputRequests`; one the server
    /// reports `input_required` whose questions are not here yet is `working`, with a
    /// status message that says so. Returns `true` when the bridge is to open a
    /// `tasks/result` for it, which brings the questions (once, until
    /// [`TaskQuestions::fetched`]).
    pub fn present(&mut self, task: &mut Value) -> bool {
        let Some(t) = task.as_object_mut() else {
            return false;
        };
        let Some(id) = t.get("taskId").and_then(Value::as_str).map(str::to_owned) else {
            return false;
        };
        let status = t.get("status").and_then(Value::as_str).unwrap_or("");
        if matches!(status, "completed" | "failed" | "cancelled") {
            return false;
        }
        let asking = self.tasks.get(&id);
        if let Some(asking) = asking.filter(|a| !a.questions.is_empty()) {
            t.insert("status".into(), json!("input_required"));
            t.insert("inputRequests".into(), input_requests(asking));
            return false;
        }
        if status != "input_required" {
            return false;
        }
        t.insert("status".into(), json!("working"));
        t.insert(
            "statusMessage".into(),
            json!(
                "the server needs input: the bridge is fetching its questions, ask again shortly"
            ),
        );
        let asking = self.tasks.entry(id).or_default();
        !std::mem::replace(&mut asking.fetching, true)
    }

    /// A question of the server's (`method`, `params`) for task `task_id`, whose
    /// answer goes to `waiter`; `token` names it for [`TaskQuestions::withdraw`].
    /// Given back when no `tasks/result` of the bridge's is open for that task (the
    /// question is not of a task the host follows through the bridge).
    pub fn ask(
        &mut self,
        task_id: &str,
        token: u64,
        method: ServerMethod,
        params: Value,
        waiter: W,
    ) -> Result<(), W> {
        let Some(asking) = self.tasks.get_mut(task_id).filter(|a| a.fetching) else {
            return Err(waiter);
        };
        let key = format!("q{}", asking.next);
        asking.next += 1;
        let question = Question {
            token,
            method,
            params,
            waiter,
        };
        asking.questions.insert(key, question);
        Ok(())
    }

    /// Whether the bridge's `tasks/result` for task `task_id` is open: its questions
    /// are taken.
    pub fn is_fetching(&self, task_id: &str) -> bool {
        self.tasks.get(task_id).is_some_and(|a| a.fetching)
    }

    /// The one task whose `tasks/result` is open, if exactly one is: where a question
    /// that names no task goes when nothing else of the host's could take it.
    pub fn only_fetching(&self) -> Option<&str> {
        let mut fetching = self.tasks.iter().filter(|(_, a)| a.fetching);
        match (fetching.next(), fetching.next()) {
            (Some((id, _)), None) => Some(id),
            _ => None,
        }
    }

    /// The task a question of the server's (`params`) is for, among those whose
    /// `tasks/result` the bridge has open: the task it names, if that one is; one that
    /// names none goes to the only task open when `nothing_else` of the host's could
    /// take it ([`TaskQuestions::only_fetching`]). `None`: no task's.
    pub fn claims<'a>(&'a self, params: &'a Value, nothing_else: bool) -> Option<&'a str> {
        match related_task(params) {
            Some(id) => Some(id).filter(|id| self.is_fetching(id)),
            None if nothing_else => self.only_fetching(),
            None => None,
        }
    }

    /// The host's `tasks/update` of task `task_id` with `responses`
    /// (`inputResponses`): the answers, each to its question, which is closed.
    /// Refused (`-32602`, nothing answered) when the task asks nothing through the
    /// bridge.
    pub fn update(
        &mut self,
        task_id: &str,
        responses: &Map<String, Value>,
    ) -> Result<Update<W>, RpcError> {
        let asking = self
            .tasks
            .get_mut(task_id)
            .filter(|a| !a.questions.is_empty())
            .ok_or_else(|| RpcError {
                code: codes::INVALID_PARAMS,
                message: format!(
                    "task {task_id} asks nothing now: answer the inputRequests its tasks/get shows"
                ),
                data: Some(json!({"taskId": task_id})),
            })?;
        let mut update = Update {
            answers: Vec::new(),
            ignored: Vec::new(),
        };
        for (key, answer) in responses {
            match asking.questions.remove(key) {
                Some(q) => update.answers.push((q.waiter, answer.clone())),
                None => update.ignored.push(key.clone()),
            }
        }
        Ok(update)
    }

    /// Question `token` is over at the server (withdrawn, or the server gave up on
    /// it): it leaves its task's `inputRequests`. Whether it was open.
    pub fn withdraw(&mut self, token: u64) -> bool {
        for asking in self.tasks.values_mut() {
            let key = asking
                .questions
                .iter()
                .find(|(_, q)| q.token == token)
                .map(|(k, _)| k.clone());
            if let Some(key) = key {
                asking.questions.remove(&key);
                return true;
            }
        }
        false
    }

    /// The bridge's `tasks/result` for task `task_id` ended: the waiters of its
    /// questions still open, to fail.
    pub fn fetched(&mut self, task_id: &str) -> Vec<W> {
        self.tasks
            .remove(task_id)
            .map(|a| a.questions.into_values().map(|q| q.waiter).collect())
            .unwrap_or_default()
    }

    /// Every waiter still open (the bridge is closing).
    pub fn drain(&mut self) -> Vec<W> {
        std::mem::take(&mut self.tasks)
            .into_values()
            .flat_map(|a| a.questions.into_values().map(|q| q.waiter))
            .collect()
    }
}

/// A task's open questions as `inputRequests`.
fn input_requests<W>(asking: &Asking<W>) -> Value {
    let map: Map<String, Value> = asking
        .questions
        .iter()
        .map(|(key, q)| {
            let request = json!({"method": q.method.as_str(), "params": q.params});
            (key.clone(), request)
        })
        .collect();
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(status: &str) -> Value {
        json!({"resultType": "complete", "taskId": "t1", "status": status, "ttlMs": null})
    }

    fn question(n: u32) -> Value {
        json!({"message": format!("question {n}"), "requestedSchema": {"type": "object"},
            "_meta": {RELATED_TASK: {"taskId": "t1"}}})
    }

    #[test]
    fn a_task_that_needs_input_is_working_until_its_questions_come_then_asks_them() {
        let mut q = TaskQuestions::<&str>::new();
        let mut t = task("input_required");
        assert!(q.present(&mut t), "the first look opens a tasks/result");
        assert_eq!(t["status"], "working");
        assert!(t.get("inputRequests").is_none());
        let mut again = task("input_required");
        assert!(!q.present(&mut again), "opened once");

        let params = question(1);
        assert_eq!(related_task(&params), Some("t1"));
        q.ask("t1", 7, ServerMethod::Elicit, params, "a").unwrap();
        q.ask("t1", 8, ServerMethod::Elicit, question(2), "b")
            .unwrap();
        // The server may say `working` while it waits: the questions still stand.
        let mut t = task("working");
        assert!(!q.present(&mut t));
        assert_eq!(t["status"], "input_required");
        assert_eq!(t["inputRequests"]["q1"]["method"], "elicitation/create");
        assert_eq!(t["inputRequests"]["q2"]["params"]["message"], "question 2");

        let responses = json!({"q1": {"action": "accept"}, "q9": {}});
        let update = q.update("t1", responses.as_object().unwrap()).unwrap();
        assert_eq!(update.answers, [("a", json!({"action": "accept"}))]);
        assert_eq!(update.ignored, ["q9"]);
        let mut t = task("input_required");
        q.present(&mut t);
        assert_eq!(
            t["inputRequests"],
            json!({"q2": {"method": "elicitation/create", "params": question(2)}})
        );

        // Withdrawn by the server: nothing left to ask; the server still says
        // input_required, so the host waits.
        assert!(q.withdraw(8));
        assert!(!q.withdraw(8));
        let mut t = task("input_required");
        assert!(!q.present(&mut t), "the tasks/result is still open");
        assert_eq!(t["status"], "working");
    }

    #[test]
    fn questions_of_tasks_nobody_fetches_are_given_back_and_an_update_without_questions_is_refused()
    {
        let mut q = TaskQuestions::<&str>::new();
        assert_eq!(
            q.ask("t1", 1, ServerMethod::Elicit, question(1), "a"),
            Err("a")
        );
        assert_eq!(q.only_fetching(), None);
        let refused = q.update("t1", &Map::new()).unwrap_err();
        assert_eq!(refused.code, codes::INVALID_PARAMS);
        assert!(refused.message.contains("t1"), "{}", refused.message);

        q.present(&mut task("input_required"));
        assert_eq!(q.only_fetching(), Some("t1"));
        assert!(q.is_fetching("t1") && !q.is_fetching("t2"));
        q.ask("t1", 1, ServerMethod::Elicit, question(1), "a")
            .unwrap();
        // Over: what is open fails, and the next input_required opens a new fetch.
        assert_eq!(q.fetched("t1"), ["a"]);
        assert!(q.present(&mut task("input_required")));
        q.ask("t1", 2, ServerMethod::CreateMessage, json!({}), "b")
            .unwrap();
        assert_eq!(q.drain(), ["b"]);
    }

    #[test]
    fn a_question_is_a_tasks_when_it_names_one_being_fetched_or_nothing_else_could_take_it() {
        let mut q = TaskQuestions::<&str>::new();
        let plain = json!({"message": "?"});
        assert_eq!(q.claims(&question(1), true), None, "t1 is not fetched");
        assert!(q.present(&mut task("input_required")), "t1 fetched");
        assert_eq!(q.claims(&question(1), false), Some("t1"));
        assert_eq!(
            q.claims(&plain, false),
            None,
            "a request of the host's takes it"
        );
        assert_eq!(q.claims(&plain, true), Some("t1"));
        let t2 = json!({"_meta": {RELATED_TASK: {"taskId": "t2"}}});
        assert_eq!(q.claims(&t2, true), None, "t2 is not fetched");
        let mut other = task("input_required");
        other["taskId"] = json!("t2");
        assert!(q.present(&mut other), "t2 fetched");
        assert_eq!(q.claims(&t2, false), Some("t2"));
        assert_eq!(q.claims(&plain, true), None, "two open: neither's");
    }

    #[test]
    fn an_ended_task_is_shown_as_it_is() {
        let mut q = TaskQuestions::<&str>::new();
        q.present(&mut task("input_required"));
        q.ask("t1", 1, ServerMethod::Elicit, question(1), "a")
            .unwrap();
        for status in ["completed", "failed", "cancelled"] {
            let mut t = task(status);
            assert!(!q.present(&mut t));
            assert_eq!(t, task(status));
        }
    }
}
