//! Waiting for a task, as a decision with no I/O and no clock: when to poll
//! `tasks/get`, which of its questions to answer, when the host's deadline cancels it
//! with `tasks/cancel`, and what its end means.
//!
//! A task is polled at the server's `pollIntervalMs` (bounded to 100 ms … 1 min, see
//! [`Task::poll_interval`]). Each status is read by [`TaskWaiter::handle_status`]:
//!
//! | status | era | what comes next |
//! |---|---|---|
//! | `completed` with its `result` | either | [`TaskStep::Done`] with the tool's result |
//! | `completed` without one | 2025-11-25 | [`TaskStep::FetchResult`] (`tasks/result`) |
//! | `completed` without one | 2026-07-28 | done: [`TaskOutcome::Malformed`] |
//! | `failed` / `cancelled` | either | done: [`TaskOutcome::Failed`] / [`TaskOutcome::Cancelled`] |
//! | `input_required` | 2025-11-25 | [`TaskStep::FetchResult`]: `tasks/result` carries the server's requests and waits for the end |
//! | `input_required` | 2026-07-28 | [`TaskStep::Answer`] with the questions not answered before (each is answered once, through `tasks/update`), then the next poll |
//! | `working`, or one this client does not know | either | the next poll |
//!
//! Before any of it, a status or message that changed is [`TaskStep::Show`]n once.
//! With a deadline, a poll that would come after it is replaced by
//! [`TaskStep::Cancel`] at the deadline (`tasks/cancel`, never
//! `notifications/cancelled`), and the wait ends with [`TaskOutcome::TimedOut`].
//!
//! ```
//! use std::time::{Duration, Instant};
//! use capable_core::model::Task;
//! use capable_core::internal::task_wait::{TaskStep, TaskWaiter};
//! use capable_core::Era;
//!
//! let working: Task = serde_json::from_value(serde_json::json!(
//!     {"taskId": "t-1", "status": "working", "pollIntervalMs": 500})).unwrap();
//! let t0 = Instant::now();
//! let deadline = Some(Duration::from_millis(800));
//! let mut w = TaskWaiter::new(working.clone(), Era::Modern, deadline, t0);
//! assert_eq!(w.poll(), Some(TaskStep::Show));
//! assert_eq!(w.poll(), None);
//! // Polled at its interval…
//! assert_eq!(w.poll_timeout(), Some(t0 + Duration::from_millis(500)));
//! w.handle_timeout(t0 + Duration::from_millis(500));
//! assert_eq!(w.poll(), Some(TaskStep::Get));
//! w.handle_status(working, t0 + Duration::from_millis(500));
//! // …until the next poll would come after the deadline: cancelled at it.
//! assert_eq!(w.poll_timeout(), Some(t0 + Duration::from_millis(800)));
//! w.handle_timeout(t0 + Duration::from_millis(800));
//! assert_eq!(w.poll(), Some(TaskStep::Cancel));
//! ```

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::model::{CallToolResult, JsonObject, Task, TaskStatus};
use crate::time;
use crate::version::Era;

/// What the caller is to do for the task next.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskStep {
    /// Its status or message changed: show [`TaskWaiter::task`] to whoever watches.
    Show,
    /// Answer these questions of the task (its `inputRequests` not answered before),
    /// send the answers with `tasks/update`, then call [`TaskWaiter::handle_updated`].
    Answer(JsonObject),
    /// Ask where it is with `tasks/get`, then call [`TaskWaiter::handle_status`].
    Get,
    /// The deadline passed: send `tasks/cancel` (whatever its answer), then call
    /// [`TaskWaiter::handle_cancelled`].
    Cancel,
    /// 2025-11-25: ask for the outcome with `tasks/result`, whose answer is the tool's
    /// result (it waits for the task to end). The waiter has nothing more to do.
    FetchResult,
    /// The wait is over.
    Done(TaskOutcome),
}

/// How a wait for a task ended.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskOutcome {
    /// It completed with this result.
    Completed(Box<CallToolResult>),
    /// It failed with a JSON-RPC error.
    Failed {
        /// The task.
        task_id: String,
        /// The error (`null` when the server gave none).
        error: Value,
        /// The server's status message.
        message: Option<String>,
    },
    /// It was cancelled before it completed.
    Cancelled {
        /// The task.
        task_id: String,
    },
    /// The host's deadline passed; `tasks/cancel` was sent.
    TimedOut {
        /// The task.
        task_id: String,
        /// The deadline.
        after: Duration,
    },
    /// It completed, but not with a tool's result (`tasks/get` broke the protocol).
    Malformed {
        /// What is wrong.
        detail: String,
    },
}

/// What the waiter wakes up for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Due {
    Get,
    Cancel,
}

/// The wait for one task. See the module documentation.
#[derive(Debug)]
pub struct TaskWaiter {
    era: Era,
    task: Task,
    /// When the host gives up, and the deadline it gave.
    deadline: Option<(Instant, Duration)>,
    answered: HashSet<String>,
    shown: Option<(TaskStatus, Option<String>)>,
    steps: VecDeque<TaskStep>,
    wake: Option<(Instant, Due)>,
}

impl TaskWaiter {
    /// A wait for `task` (as its call or a `tasks/get` described it at `now`), given up
    /// `deadline` after `now` when there is one.
    pub fn new(task: Task, era: Era, deadline: Option<Duration>, now: Instant) -> TaskWaiter {
        let mut waiter = TaskWaiter {
            era,
            deadline: deadline.map(|d| (time::deadline(now, d), d)),
            task: task.clone(),
            answered: HashSet::new(),
            shown: None,
            steps: VecDeque::new(),
            wake: None,
        };
        waiter.handle_status(task, now);
        waiter
    }

    /// The task as last seen.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The next thing to do; `None`: wait until [`TaskWaiter::poll_timeout`].
    pub fn poll(&mut self) -> Option<TaskStep> {
        self.steps.pop_front()
    }

    /// When [`TaskWaiter::handle_timeout`] should be called (the next poll, or the
    /// deadline); `None` while a step is to be done, or once the wait is over.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.steps.is_empty() {
            true => self.wake.map(|(at, _)| at),
            false => None,
        }
    }

    /// The time is `now`: a poll, or the cancellation at the deadline, when due.
    /// Calling it early is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some((at, due)) = self.wake {
            if now >= at {
                self.wake = None;
                self.steps.push_back(match due {
                    Due::Get => TaskStep::Get,
                    Due::Cancel => TaskStep::Cancel,
                });
            }
        }
    }

    /// The task's status arrived at `now` (from `tasks/get`, or its call).
    pub fn handle_status(&mut self, task: Task, now: Instant) {
        self.task = task;
        let showing = (self.task.status.clone(), self.task.status_message.clone());
        if self.shown.as_ref() != Some(&showing) {
            self.shown = Some(showing);
            self.steps.push_back(TaskStep::Show);
        }
        let task = &self.task;
        let done = |outcome| Some(TaskStep::Done(outcome));
        let next = match (&task.status, self.era) {
            (TaskStatus::Completed, era) => match (&task.result, era) {
                (Some(result), _) => done(
                    match serde_json::from_value::<CallToolResult>(result.clone()) {
                        Ok(result) => TaskOutcome::Completed(Box::new(result)),
                        Err(e) => TaskOutcome::Malformed {
                            detail: format!("the task's result is not a tool result: {e}"),
                        },
                    },
                ),
                (None, Era::Legacy) => Some(TaskStep::FetchResult),
                (None, Era::Modern) => done(TaskOutcome::Malformed {
                    detail: format!("task {} completed without a result", task.task_id),
                }),
            },
            (TaskStatus::Failed, _) => done(TaskOutcome::Failed {
                task_id: task.task_id.clone(),
                error: task.error.clone().unwrap_or(Value::Null),
                message: task.status_message.clone(),
            }),
            (TaskStatus::Cancelled, _) => done(TaskOutcome::Cancelled {
                task_id: task.task_id.clone(),
            }),
            (TaskStatus::InputRequired, Era::Legacy) => Some(TaskStep::FetchResult),
            (TaskStatus::InputRequired, Era::Modern) => {
                let fresh: JsonObject = task
                    .input_requests
                    .iter()
                    .flatten()
                    .filter(|(key, _)| !self.answered.contains(*key))
                    .map(|(key, request)| (key.clone(), request.clone()))
                    .collect();
                match fresh.is_empty() {
                    true => None,
                    false => {
                        self.answered.extend(fresh.keys().cloned());
                        Some(TaskStep::Answer(fresh))
                    }
                }
            }
            (TaskStatus::Working | TaskStatus::Other(_), _) => None,
        };
        match next {
            Some(step) => self.steps.push_back(step),
            None => self.schedule(now),
        }
    }

    /// The answers of a [`TaskStep::Answer`] were sent at `now`: the next poll.
    pub fn handle_updated(&mut self, now: Instant) {
        self.schedule(now);
    }

    /// `tasks/cancel` was sent (its answer does not matter): the wait is over.
    pub fn handle_cancelled(&mut self) {
        let after = self.deadline.map_or(Duration::ZERO, |(_, d)| d);
        self.wake = None;
        self.steps.push_back(TaskStep::Done(TaskOutcome::TimedOut {
            task_id: self.task.task_id.clone(),
            after,
        }));
    }

    /// The next poll, one interval after `now` — or the cancellation at the deadline,
    /// when the poll would come after it.
    fn schedule(&mut self, now: Instant) {
        let next = time::deadline(now, self.task.poll_interval());
        self.wake = match self.deadline {
            Some((at, _)) if next > at => Some((at, Due::Cancel)),
            _ => Some((next, Due::Get)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MS: Duration = Duration::from_millis(1);

    fn task(status: &str, extra: Value) -> Task {
        let mut t = json!({"taskId": "t-1", "status": status, "pollIntervalMs": 500});
        if let (Some(t), Some(e)) = (t.as_object_mut(), extra.as_object()) {
            t.extend(e.clone());
        }
        serde_json::from_value(t).expect("a task")
    }

    fn steps(w: &mut TaskWaiter) -> Vec<TaskStep> {
        std::iter::from_fn(|| w.poll()).collect()
    }

    fn done() -> Task {
        task(
            "completed",
            json!({"result": {"content": [{"type": "text", "text": "done"}]}}),
        )
    }

    #[test]
    fn a_task_is_polled_at_its_interval_until_it_completes() {
        let t0 = Instant::now();
        let mut w = TaskWaiter::new(task("working", json!({})), Era::Modern, None, t0);
        assert_eq!(steps(&mut w), [TaskStep::Show]);
        assert_eq!(w.poll_timeout(), Some(t0 + 500 * MS));
        w.handle_timeout(t0 + 499 * MS);
        assert!(steps(&mut w).is_empty(), "not before the interval");
        // The poll's answer came 20 ms after it was sent: the interval counts from it.
        w.handle_timeout(t0 + 500 * MS);
        assert_eq!(steps(&mut w), [TaskStep::Get]);
        w.handle_status(task("working", json!({})), t0 + 520 * MS);
        assert!(steps(&mut w).is_empty(), "the same status is shown once");
        assert_eq!(w.poll_timeout(), Some(t0 + 1020 * MS));
        w.handle_timeout(t0 + 1020 * MS);
        assert_eq!(steps(&mut w), [TaskStep::Get]);
        w.handle_status(done(), t0 + 1020 * MS);
        let got = steps(&mut w);
        assert_eq!(got[0], TaskStep::Show);
        let TaskStep::Done(TaskOutcome::Completed(result)) = &got[1] else {
            panic!("{got:?}")
        };
        assert_eq!(result.content[0]["text"], "done");
        assert_eq!(w.poll_timeout(), None);
    }

    #[test]
    fn a_new_message_is_shown_and_an_absurd_interval_is_bounded() {
        let t0 = Instant::now();
        let fast = task("working", json!({"pollIntervalMs": 1}));
        let mut w = TaskWaiter::new(fast, Era::Modern, None, t0);
        assert_eq!(steps(&mut w), [TaskStep::Show]);
        assert_eq!(w.poll_timeout(), Some(t0 + 100 * MS), "at least 100 ms");
        let said = task(
            "working",
            json!({"statusMessage": "half way", "pollIntervalMs": 1e300}),
        );
        w.handle_status(said, t0);
        assert_eq!(steps(&mut w), [TaskStep::Show]);
        assert_eq!(w.task().status_message.as_deref(), Some("half way"));
        assert_eq!(
            w.poll_timeout(),
            Some(t0 + Duration::from_secs(60)),
            "at most a minute"
        );
    }

    #[test]
    fn a_deadline_cancels_instead_of_a_poll_that_would_come_after_it() {
        let t0 = Instant::now();
        let deadline = Some(Duration::from_millis(1200));
        let mut w = TaskWaiter::new(task("working", json!({})), Era::Modern, deadline, t0);
        steps(&mut w);
        for at in [500, 1000] {
            assert_eq!(w.poll_timeout(), Some(t0 + at * MS));
            w.handle_timeout(t0 + at * MS);
            assert_eq!(steps(&mut w), [TaskStep::Get]);
            w.handle_status(task("working", json!({})), t0 + at * MS);
        }
        // The next poll would be at 1.5 s: cancelled at 1.2 s instead.
        assert_eq!(w.poll_timeout(), Some(t0 + 1200 * MS));
        w.handle_timeout(t0 + 1200 * MS);
        assert_eq!(steps(&mut w), [TaskStep::Cancel]);
        w.handle_cancelled();
        assert_eq!(
            steps(&mut w),
            [TaskStep::Done(TaskOutcome::TimedOut {
                task_id: "t-1".into(),
                after: Duration::from_millis(1200)
            })]
        );
        assert_eq!(w.poll_timeout(), None);
        // A poll due exactly at the deadline is still made.
        let exact = Some(Duration::from_millis(500));
        let mut w = TaskWaiter::new(task("working", json!({})), Era::Modern, exact, t0);
        steps(&mut w);
        w.handle_timeout(t0 + 500 * MS);
        assert_eq!(steps(&mut w), [TaskStep::Get]);
    }

    #[test]
    fn each_question_is_answered_once_then_polling_goes_on() {
        let question = json!({"inputRequests": {
            "name": {"method": "elicitation/create", "params": {"message": "Your name?"}}
        }});
        let both = json!({"inputRequests": {
            "name": {"method": "elicitation/create", "params": {"message": "Your name?"}},
            "age": {"method": "elicitation/create", "params": {"message": "Your age?"}}
        }});
        let t0 = Instant::now();
        let mut w = TaskWaiter::new(
            task("input_required", question.clone()),
            Era::Modern,
            None,
            t0,
        );
        let got = steps(&mut w);
        assert_eq!(got[0], TaskStep::Show);
        let TaskStep::Answer(asked) = &got[1] else {
            panic!("{got:?}")
        };
        assert_eq!(asked.keys().collect::<Vec<_>>(), ["name"]);
        assert_eq!(w.poll_timeout(), None, "the answers first");
        w.handle_updated(t0 + 10 * MS);
        assert_eq!(w.poll_timeout(), Some(t0 + 510 * MS));
        // The same question again: not answered again; a new one is.
        w.handle_timeout(t0 + 510 * MS);
        steps(&mut w);
        w.handle_status(task("input_required", question), t0 + 510 * MS);
        assert!(steps(&mut w).is_empty());
        assert_eq!(w.poll_timeout(), Some(t0 + 1010 * MS));
        w.handle_status(task("input_required", both), t0 + 1010 * MS);
        let got = steps(&mut w);
        let [TaskStep::Answer(asked)] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!(asked.keys().collect::<Vec<_>>(), ["age"]);
    }

    #[test]
    fn a_2025_11_25_task_fetches_its_outcome_with_tasks_result() {
        let t0 = Instant::now();
        for status in ["input_required", "completed"] {
            let mut w = TaskWaiter::new(task(status, json!({})), Era::Legacy, None, t0);
            assert_eq!(
                steps(&mut w),
                [TaskStep::Show, TaskStep::FetchResult],
                "{status}"
            );
        }
        // A result already in the status needs no fetch.
        let mut w = TaskWaiter::new(done(), Era::Legacy, None, t0);
        assert!(matches!(
            steps(&mut w)[..],
            [TaskStep::Show, TaskStep::Done(TaskOutcome::Completed(_))]
        ));
    }

    #[test]
    fn failure_cancellation_and_a_missing_result_end_the_wait() {
        let t0 = Instant::now();
        let end = |t: Task| {
            let mut w = TaskWaiter::new(t, Era::Modern, None, t0);
            let got = steps(&mut w);
            assert_eq!(got[0], TaskStep::Show);
            assert_eq!(w.poll_timeout(), None);
            match &got[1] {
                TaskStep::Done(outcome) => outcome.clone(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            end(task(
                "failed",
                json!({"statusMessage": "rate limited", "error": {"code": -32603}})
            )),
            TaskOutcome::Failed {
                task_id: "t-1".into(),
                error: json!({"code": -32603}),
                message: Some("rate limited".into())
            }
        );
        assert_eq!(
            end(task("cancelled", json!({}))),
            TaskOutcome::Cancelled {
                task_id: "t-1".into()
            }
        );
        assert!(matches!(
            end(task("completed", json!({}))),
            TaskOutcome::Malformed { detail } if detail.contains("without a result")
        ));
        assert!(matches!(
            end(task("completed", json!({"result": {"content": "not a list"}}))),
            TaskOutcome::Malformed { detail } if detail.contains("not a tool result")
        ));
        // A status this client does not know is polled like `working`.
        let mut w = TaskWaiter::new(task("paused", json!({})), Era::Modern, None, t0);
        assert_eq!(steps(&mut w), [TaskStep::Show]);
        assert_eq!(w.poll_timeout(), Some(t0 + 500 * MS));
    }
}
