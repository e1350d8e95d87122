//! Tasks: a request the server runs in the background, polled until it ends.
//!
//! Two wire forms, one [`Task`]:
//!
//! - **2026-07-28, the `io.modelcontextprotocol/tasks` extension.** A `tools/call`
//!   may be answered with `resultType: "task"` and the task's fields inline
//!   ([`CreateTaskResult`]); `tasks/get` returns the task with its outcome inline
//!   (`result` when completed, `error` when failed, `inputRequests` when it needs
//!   input); `tasks/update` answers its questions; `tasks/cancel` asks it to stop.
//! - **2025-11-25, core tasks.** The client asks for a task (`params.task`), the
//!   answer is `{task: {...}}`; `tasks/get` returns the task; the outcome is fetched
//!   with `tasks/result`; `tasks/list` lists them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::JsonObject;

/// Where a task is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Being processed.
    Working,
    /// Waiting for answers to its `inputRequests`.
    InputRequired,
    /// Done; the result is available.
    Completed,
    /// Failed with a JSON-RPC error.
    Failed,
    /// Cancelled before it completed.
    Cancelled,
    /// A status this client does not know.
    #[serde(untagged)]
    Other(String),
}

impl TaskStatus {
    /// Whether the task is over (completed, failed or cancelled).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The status as on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(s) => s,
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task, as `tasks/get` (either era) or a task-creating answer describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The server's id for it.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What the server says about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// How long the server keeps it, in ms (2026: `ttlMs`, `null` for unlimited;
    /// 2025-11-25: `ttl`).
    #[serde(default, alias = "ttl", skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<Value>,
    /// How often to poll, in ms (2026: `pollIntervalMs`; 2025-11-25: `pollInterval`).
    #[serde(
        default,
        alias = "pollInterval",
        skip_serializing_if = "Option::is_none"
    )]
    pub poll_interval_ms: Option<f64>,
    /// 2026, completed: the request's result (a `CallToolResult` for a tool call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// 2026, failed: the JSON-RPC error it failed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// 2026, input required: the questions (as in `input_required` results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<JsonObject>,
    /// Everything else (`_meta`, `resultType`, …).
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Task {
    /// The server's polling interval, bounded to something sane: at least 100 ms,
    /// at most a minute; a second when the server gives none.
    pub fn poll_interval(&self) -> std::time::Duration {
        let ms = self
            .poll_interval_ms
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .unwrap_or(1000.0);
        std::time::Duration::from_millis(ms.clamp(100.0, 60_000.0) as u64)
    }
}

/// The answer to a `tools/call` that became a task.
///
/// 2026 puts the task's fields at the top of the result (`resultType: "task"`);
/// 2025-11-25 nests them under `task`. [`CreateTaskResult::task`] reads either.
#[derive(Clone, Debug, Deserialize)]
pub struct CreateTaskResult {
    #[serde(default)]
    task: Option<Task>,
    #[serde(flatten)]
    inline: Option<Task>,
}

impl CreateTaskResult {
    /// The task the server created.
    pub fn task(self) -> Option<Task> {
        self.task.or(self.inline)
    }
}

/// Params naming one task (`tasks/get`, `tasks/result`, `tasks/cancel`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams<'a> {
    /// The task's id.
    pub task_id: &'a str,
}

/// `tasks/update` params (2026): answers to the task's `inputRequests`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams<'a> {
    /// The task's id.
    pub task_id: &'a str,
    /// Answers, under the keys of the questions they answer.
    pub input_responses: &'a JsonObject,
}

/// One page of `tasks/list` (2025-11-25).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// Where to continue.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

impl super::Page for ListTasksResult {
    type Item = Task;
    const ITEMS: &'static str = "tasks";
    fn into_parts(self) -> (Vec<Task>, Option<String>) {
        (self.tasks, self.next_cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_created_task_reads_in_both_eras() {
        let modern: CreateTaskResult = serde_json::from_value(json!({
            "resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "ttlMs": null, "pollIntervalMs": 250
        }))
        .unwrap();
        let t = modern.task().unwrap();
        assert_eq!(
            (t.task_id.as_str(), &t.status),
            ("t1", &TaskStatus::Working)
        );
        assert_eq!(t.poll_interval(), std::time::Duration::from_millis(250));
        let legacy: CreateTaskResult = serde_json::from_value(json!({
            "task": {"taskId": "t2", "status": "working", "pollInterval": 5, "ttl": 60000}
        }))
        .unwrap();
        let t = legacy.task().unwrap();
        assert_eq!(t.task_id, "t2");
        assert_eq!(
            t.poll_interval(),
            std::time::Duration::from_millis(100),
            "bounded below"
        );
    }

    #[test]
    fn statuses_know_when_they_are_over() {
        let t: Task = serde_json::from_value(json!({"taskId": "x", "status": "paused"})).unwrap();
        assert_eq!(t.status, TaskStatus::Other("paused".into()));
        assert!(!t.status.is_terminal());
        assert_eq!(t.poll_interval(), std::time::Duration::from_secs(1));
        for s in ["completed", "failed", "cancelled"] {
            let t: Task = serde_json::from_value(json!({"taskId": "x", "status": s})).unwrap();
            assert!(t.status.is_terminal(), "{s}");
        }
    }
}
