//! The tasks a 2025-11-25 host started through a bridge at a 2026-07-28 server, which
//! has no `tasks/list` and may run any call at once: what the bridge's `tasks/list`
//! answers from, and the tasks the bridge settles itself.
//!
//! A 2025-11-25 host that asks for a task (`params.task`) expects a
//! `CreateTaskResult`, whatever the receiver did. A 2026-07-28 server decides for
//! itself whether a call is a task; when it answered at once, the bridge gives the
//! host a task of its own, already over ([`Started::settle`]): `completed`, or
//! `failed` for a tool result with `isError` (2025-11-25: "for tool calls, this
//! includes cases where the tool call result has `isError` set to true"). Its
//! `tasks/get`, `tasks/result` (the result as the server gave it, with
//! `_meta[RELATED_TASK]`), `tasks/cancel` (terminal: `-32602`) and its place in
//! `tasks/list` are the bridge's ([`Started::answer`], [`Started::listing`]), never
//! the server's: its id says it is the bridge's ([`Started::owns`]).
//!
//! At most [`Started::KEPT`] tasks are kept, the oldest dropped first; a settled task
//! is kept for its `ttl` (the host's, at most [`Started::LONGEST`]), then answered as
//! unknown, like a server's expired task.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::jsonrpc::{codes, RpcError};
use crate::method::Method;
use crate::model::{Task, TaskStatus};
use crate::task_bridge::{legacy_task, with_related_task};

/// The tasks a legacy host started through the bridge, oldest first.
#[derive(Clone, Debug)]
pub struct Started {
    entries: VecDeque<Entry>,
    /// What every settled task's id starts with (unique to this bridge).
    prefix: String,
    next: u64,
}

#[derive(Clone, Debug)]
enum Entry {
    /// A task of the server's, known by its id.
    AtServer(String),
    /// A task the bridge settled itself.
    Settled(Box<Settled>),
}

#[derive(Clone, Debug)]
struct Settled {
    task: Task,
    result: Value,
    until: Instant,
}

/// One task of a legacy host's `tasks/list`, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub enum Listed {
    /// A task of the server's: its `tasks/get` tells how it is (an error: not listed).
    AtServer(String),
    /// A task of the bridge's, as the host gets it.
    Settled(Value),
}

impl Started {
    /// How many tasks are kept (each `tasks/list` asks the server about each of its).
    pub const KEPT: usize = 100;
    /// The longest a settled task is kept, and how long when the host asked no `ttl`.
    pub const LONGEST: Duration = Duration::from_secs(3600);

    /// No tasks yet; the bridge's own are named `{prefix}-{n}` (`prefix` unique to
    /// this bridge, so that no server's id is taken for one).
    pub fn new(prefix: String) -> Started {
        Started {
            entries: VecDeque::new(),
            prefix,
            next: 0,
        }
    }

    /// The host's `tools/call` started the server's task `id`.
    pub fn record(&mut self, id: String) {
        self.push(Entry::AtServer(id));
    }

    fn push(&mut self, entry: Entry) {
        if self.entries.len() == Self::KEPT {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }

    /// The host asked for a task (with `ttl_ms`, if it said) and the server answered
    /// at once with `result`: a task of the bridge's, already over, made at `now`
    /// (`at` in RFC 3339). The `CreateTaskResult` the host gets.
    pub fn settle(&mut self, result: Value, ttl_ms: Option<u64>, now: Instant, at: &str) -> Value {
        self.next += 1;
        let kept = ttl_ms
            .map(Duration::from_millis)
            .map_or(Self::LONGEST, |ttl| ttl.min(Self::LONGEST));
        let failed = result.get("isError") == Some(&Value::Bool(true));
        let task = Task {
            task_id: format!("{}-{}", self.prefix, self.next),
            status: match failed {
                true => TaskStatus::Failed,
                false => TaskStatus::Completed,
            },
            status_message: failed.then(|| "the tool reported an error (isError)".to_owned()),
            created_at: Some(at.to_owned()),
            last_updated_at: Some(at.to_owned()),
            ttl_ms: Some(json!(kept.as_millis() as u64)),
            poll_interval_ms: None,
            result: None,
            error: None,
            input_requests: None,
            extra: Default::default(),
        };
        let answer = json!({"task": legacy_task(&task)});
        let until = now + kept;
        self.push(Entry::Settled(Box::new(Settled {
            task,
            result,
            until,
        })));
        answer
    }

    /// What the bridge's own task ids start with (then `-`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The bridge's own task `id` at `now`, to be kept where other replicas see it:
    /// the task as the host gets it, its result, and how long it has left (`None`:
    /// no such task, or its ttl ran out).
    pub fn settled(&self, id: &str, now: Instant) -> Option<(Value, &Value, Duration)> {
        self.entries.iter().find_map(|e| match e {
            Entry::Settled(s) if s.task.task_id == id && s.until > now => {
                Some((legacy_task(&s.task), &s.result, s.until - now))
            }
            _ => None,
        })
    }

    /// Whether task `id` is the bridge's (then only [`Started::answer`] answers for it).
    pub fn owns(&self, id: &str) -> bool {
        id.strip_prefix(self.prefix.as_str())
            .is_some_and(|rest| rest.starts_with('-'))
    }

    /// The bridge's answer to `method` (`tasks/get`, `tasks/result`, `tasks/cancel`)
    /// for its own task `id` at `now`.
    pub fn answer(&mut self, method: Method, id: &str, now: Instant) -> Result<Value, RpcError> {
        self.expire(now);
        let settled = self.entries.iter().find_map(|e| match e {
            Entry::Settled(s) if s.task.task_id == id => Some(s),
            _ => None,
        });
        let Some(settled) = settled else {
            return Err(unknown(id));
        };
        answer_settled(method, id, legacy_task(&settled.task), &settled.result)
    }

    /// The tasks a `tasks/list` at `now` names, oldest first (the settled ones that
    /// expired left out).
    pub fn listing(&mut self, now: Instant) -> Vec<Listed> {
        self.expire(now);
        let listed = |e: &Entry| match e {
            Entry::AtServer(id) => Listed::AtServer(id.clone()),
            Entry::Settled(s) => Listed::Settled(legacy_task(&s.task)),
        };
        self.entries.iter().map(listed).collect()
    }

    /// Drops the settled tasks whose ttl ran out by `now`.
    fn expire(&mut self, now: Instant) {
        self.entries.retain(|e| match e {
            Entry::Settled(s) => s.until > now,
            Entry::AtServer(_) => true,
        });
    }
}

/// The bridge's answer to `method` (`tasks/get`, `tasks/result`, `tasks/cancel`) for
/// its own task `id`, already over: `task` as the host gets it, `result` the server's.
/// One answer whichever replica gives it (from memory, or from the store).
pub fn answer_settled(
    method: Method,
    id: &str,
    task: Value,
    result: &Value,
) -> Result<Value, RpcError> {
    match method {
        Method::GetTask => Ok(task),
        Method::TaskResult => Ok(with_related_task(result.clone(), id)),
        Method::CancelTask => Err(invalid(
            format!(
                "task {id} is {}: a task that is over cannot be cancelled",
                task.get("status").and_then(Value::as_str).unwrap_or("over")
            ),
            id,
        )),
        other => Err(invalid(format!("{other} is not a task's method"), id)),
    }
}

/// The answer about a task of the bridge's that is not (or no longer) known.
pub fn unknown(id: &str) -> RpcError {
    invalid(
        format!("Unknown task {id}: it expired, or was never made"),
        id,
    )
}

/// `-32602`, naming the task.
fn invalid(message: String, id: &str) -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message,
        data: Some(json!({"taskId": id})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task_bridge::RELATED_TASK;

    const AT: &str = "2026-12-01T00:00:00Z";

    fn started() -> Started {
        Started::new("bridge-ab12".into())
    }

    #[test]
    fn the_host_lists_the_most_recent_tasks_it_started() {
        let mut started = started();
        let now = Instant::now();
        for n in 0..Started::KEPT + 1 {
            started.record(format!("t-{n}"));
        }
        started.settle(json!({"content": []}), None, now, AT);
        let listed = started.listing(now);
        assert_eq!(listed.len(), Started::KEPT);
        assert_eq!(
            listed[0],
            Listed::AtServer("t-2".into()),
            "the oldest went first"
        );
        let Listed::Settled(last) = &listed[Started::KEPT - 1] else {
            panic!("the settled task is listed last: {listed:?}");
        };
        assert_eq!(last["status"], "completed");
    }

    #[test]
    fn a_call_the_server_ran_at_once_is_a_task_that_is_over() {
        let mut started = started();
        let now = Instant::now();
        let result =
            json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": 1}});
        let made = started.settle(result.clone(), Some(5_000), now, AT);
        let task = &made["task"];
        assert_eq!(
            (&task["status"], &task["ttl"], &task["createdAt"]),
            (&json!("completed"), &json!(5_000), &json!(AT))
        );
        assert!(task.get("pollInterval").is_none(), "nothing to poll for");
        let id = task["taskId"].as_str().unwrap().to_owned();
        assert!(started.owns(&id));
        assert!(!started.owns("task-1") && !started.owns("bridge-ab12x"));

        assert_eq!(started.answer(Method::GetTask, &id, now).unwrap(), *task);
        // The result as the server gave it, naming its task.
        let got = started.answer(Method::TaskResult, &id, now).unwrap();
        assert_eq!(got["structuredContent"], result["structuredContent"]);
        assert_eq!(got["content"], result["content"]);
        assert_eq!(got["_meta"][RELATED_TASK]["taskId"], id.as_str());
        let cancel = started.answer(Method::CancelTask, &id, now).unwrap_err();
        assert_eq!(cancel.code, codes::INVALID_PARAMS);
        assert!(cancel.message.contains("completed"), "{}", cancel.message);

        // Its ttl over, it is unknown, and no longer listed.
        let later = now + Duration::from_millis(5_000);
        let gone = started.answer(Method::GetTask, &id, later).unwrap_err();
        assert_eq!(gone.code, codes::INVALID_PARAMS);
        assert!(started.listing(later).is_empty());
    }

    #[test]
    fn a_tool_error_is_a_failed_task_whose_result_is_the_tools() {
        let mut started = started();
        let now = Instant::now();
        let error = json!({"content": [{"type": "text", "text": "disk full"}], "isError": true});
        let made = started.settle(error.clone(), None, now, AT);
        assert_eq!(made["task"]["status"], "failed");
        assert_eq!(made["task"]["ttl"], Started::LONGEST.as_millis() as u64);
        let id = made["task"]["taskId"].as_str().unwrap();
        let result = started.answer(Method::TaskResult, id, now).unwrap();
        assert_eq!(
            (&result["isError"], &result["content"]),
            (&error["isError"], &error["content"])
        );
        // A ttl beyond the longest is cut to it.
        let long = started.settle(json!({"content": []}), Some(u64::MAX), now, AT);
        assert_eq!(long["task"]["ttl"], Started::LONGEST.as_millis() as u64);
    }
}
