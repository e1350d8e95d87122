//! The bridge's own tasks kept where every replica of a gateway sees them, sans-IO: what
//! is kept of a task the bridge made for a legacy host (a call a 2026-07-28 server ran
//! at once: the core's `task_started`), under which key, for how long, and what another
//! replica answers from it. The shell writes and reads the store (`gateway.store`).
//!
//! | what | how |
//! |---|---|
//! | what is kept ([`KeptTask`]) | the task as the host got it (`status`, `statusMessage`, `ttl`, `createdAt`, `lastUpdatedAt`), the server's result (a tool error is one too) and until when it may be asked about (ms since the Unix epoch), as JSON |
//! | under which key ([`key_parts`]) | parts the shell hashes: the server, the caller (issuer, subject) and the task's id — never the id itself, never the caller in clear |
//! | for how long ([`KeptTask::ttl`]) | what is left of the task's `ttl` (the host's, at most the core's `Started::LONGEST`) |
//! | how much ([`MAX_KEPT_BYTES`]) | a task whose record is larger stays with the replica that made it (the shell says so) |
//! | `tasks/get`, `tasks/result`, `tasks/cancel` on another replica ([`KeptTask::answer`]) | the answers the replica that made it gives ([`answer_settled`]); a task not in the store, or expired, is unknown (`-32602`) |
//! | `tasks/list` | each replica lists the tasks the host started through it ([`Started::listing`](crate::task_started::Started::listing)); with a store, the shell lists every replica's from the session's list there, another replica's task of the bridge's by this record ([`KeptTask::decode`], `until_ms`), its id sealed as the bridge's ([`TaskIds::seal_answer_owning`](super::task_ids::TaskIds::seal_answer_owning)) |
//!
//! ```
//! use capable_core::internal::bridge::kept_tasks::KeptTask;
//! use capable_core::Method;
//! use serde_json::json;
//! let task = json!({"taskId": "bridge-ab-1", "status": "completed", "ttl": 60000});
//! let kept = KeptTask::new(task, json!({"content": []}), 60_000, 1_000);
//! let stored = kept.encode().unwrap();
//! let read = KeptTask::decode(&stored).unwrap();
//! assert_eq!(read.answer(Method::GetTask, "bridge-ab-1", 2_000).unwrap()["status"], "completed");
//! assert!(read.answer(Method::GetTask, "bridge-ab-1", 61_000).is_err());
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jsonrpc::RpcError;
use crate::seal::Caller;
use crate::task_started::{answer_settled, unknown};
use crate::Method;

/// The kind of key a task is kept under (`capable:task:…`).
pub const KIND: &str = "task";

/// The largest record kept in the store, in bytes (1 MiB): a task whose result is
/// larger stays with the replica that made it.
pub const MAX_KEPT_BYTES: usize = 1 << 20;

/// A task of the bridge's, already over, as kept for every replica.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeptTask {
    /// The task as the host gets it from `tasks/get`.
    pub task: Value,
    /// The server's result, as `tasks/result` gives it (with the related task added).
    pub result: Value,
    /// Until when it may be asked about, in ms since the Unix epoch.
    pub until_ms: u64,
}

/// Why a task is not kept in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeepError {
    /// Its record is larger than [`MAX_KEPT_BYTES`].
    #[error(
        "the task's result is {0} bytes, more than the {MAX_KEPT_BYTES} kept for every replica"
    )]
    TooLarge(usize),
    /// It does not encode.
    #[error("the task does not encode")]
    Encode(#[source] serde_json::Error),
}

/// The parts of the key task `task_id` of server `server`, started by `caller`, is kept
/// under: the shell hashes them (nothing of them is readable in the key).
pub fn key_parts<'a>(server: &'a str, caller: &'a Caller<'_>, task_id: &'a str) -> [&'a str; 4] {
    [
        server,
        caller.iss.as_deref().unwrap_or(""),
        caller.sub.as_deref().unwrap_or(""),
        task_id,
    ]
}

impl KeptTask {
    /// `task` (as the host got it) with its `result`, made at `now_ms` (ms since the
    /// Unix epoch) with `left_ms` of its ttl left.
    pub fn new(task: Value, result: Value, left_ms: u64, now_ms: u64) -> KeptTask {
        KeptTask {
            task,
            result,
            until_ms: now_ms.saturating_add(left_ms),
        }
    }

    /// How long the store keeps it from `now_ms`, in ms (at least 1).
    pub fn ttl(&self, now_ms: u64) -> u64 {
        self.until_ms.saturating_sub(now_ms).max(1)
    }

    /// The record as stored; refused past [`MAX_KEPT_BYTES`].
    pub fn encode(&self) -> Result<Vec<u8>, KeepError> {
        let bytes = serde_json::to_vec(self).map_err(KeepError::Encode)?;
        match bytes.len() > MAX_KEPT_BYTES {
            true => Err(KeepError::TooLarge(bytes.len())),
            false => Ok(bytes),
        }
    }

    /// A record read from the store (`None`: larger than kept, or not one).
    pub fn decode(bytes: &[u8]) -> Option<KeptTask> {
        if bytes.len() > MAX_KEPT_BYTES {
            return None;
        }
        serde_json::from_slice(bytes).ok()
    }

    /// The answer to `method` for task `id` at `now_ms`: as the replica that made it
    /// answers ([`answer_settled`]); past its time, unknown.
    pub fn answer(&self, method: Method, id: &str, now_ms: u64) -> Result<Value, RpcError> {
        let same = self.task.get("taskId").and_then(Value::as_str) == Some(id);
        if !same || self.until_ms <= now_ms {
            return Err(unknown(id));
        }
        answer_settled(method, id, self.task.clone(), &self.result)
    }
}

/// The answer to `method` for the bridge's own task `id`, another replica's, from what
/// the store held (`None`: nothing, or not a record) at `now_ms`.
pub fn answer_kept(
    read: Option<&[u8]>,
    method: Method,
    id: &str,
    now_ms: u64,
) -> Result<Value, RpcError> {
    match read.and_then(KeptTask::decode) {
        Some(kept) => kept.answer(method, id, now_ms),
        None => Err(unknown(id)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;
    use crate::jsonrpc::codes;
    use crate::task_bridge::RELATED_TASK;
    use crate::task_started::Started;

    const AT: &str = "2026-12-01T00:00:00Z";

    #[test]
    fn another_replica_answers_from_the_store_as_the_one_that_made_the_task() {
        let mut started = Started::new("bridge-ab".into());
        let now = Instant::now();
        let result = json!({"content": [{"type": "text", "text": "disk full"}], "isError": true});
        let made = started.settle(result, Some(30_000), now, AT);
        let id = made["task"]["taskId"].as_str().unwrap().to_owned();
        let (task, result, left) = started.settled(&id, now).unwrap();
        assert_eq!(left, Duration::from_millis(30_000));
        let kept = KeptTask::new(task, result.clone(), 30_000, 1_000_000);
        assert_eq!(kept.ttl(1_000_000), 30_000);
        let stored = kept.encode().unwrap();
        let t = 1_010_000;
        for method in [Method::GetTask, Method::TaskResult, Method::CancelTask] {
            let here = started.answer(method, &id, now + Duration::from_secs(10));
            let there = answer_kept(Some(&stored), method, &id, t);
            assert_eq!(format!("{here:?}"), format!("{there:?}"), "{method}");
        }
        let result = answer_kept(Some(&stored), Method::TaskResult, &id, t).unwrap();
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], id.as_str());
        assert_eq!(result["isError"], true);
        let get = answer_kept(Some(&stored), Method::GetTask, &id, t).unwrap();
        assert_eq!(
            (&get["status"], &get["ttl"]),
            (&json!("failed"), &json!(30_000))
        );

        // Past its ttl, not in the store, garbled, or asked by another id: unknown.
        for (read, id, at) in [
            (Some(&stored[..]), id.as_str(), 1_030_000),
            (None, id.as_str(), t),
            (Some(&b"{not json"[..]), id.as_str(), t),
            (Some(&stored[..]), "bridge-ab-2", t),
        ] {
            let e = answer_kept(read, Method::GetTask, id, at).unwrap_err();
            assert_eq!(e.code, codes::INVALID_PARAMS);
        }
    }

    #[test]
    fn a_record_past_the_limit_is_not_kept_and_the_key_names_nobody() {
        let large = json!({"content": [{"type": "text", "text": "x".repeat(MAX_KEPT_BYTES)}]});
        let kept = KeptTask::new(json!({"taskId": "b-1"}), large, 1, 0);
        assert!(matches!(kept.encode(), Err(KeepError::TooLarge(_))));
        let alice = Caller {
            iss: Some("https://idp".into()),
            sub: Some("alice".into()),
            client_id: None,
        };
        let bob = Caller {
            sub: Some("bob".into()),
            ..alice.clone()
        };
        assert_ne!(
            key_parts("jira", &alice, "b-1"),
            key_parts("jira", &bob, "b-1")
        );
    }
}
