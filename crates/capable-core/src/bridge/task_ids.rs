//! Sealed task ids: with a seal key shared by a gateway's replicas, every task id the
//! gateway hands a host is the [`TaskSeal`] of the task — the server that runs it, the
//! server's own id, the caller who started it, an expiry — and every task id a host
//! sends is opened first. So any replica continues a task (nothing is kept in a
//! store), nothing of the server's id is readable, and no caller can use another's
//! task: a forged, changed, expired, foreign or other caller's id is refused as the
//! spec refuses an unknown task (`-32602`), before anything is sent to the server.
//!
//! What is sealed, and where ([`TaskIds`]):
//!
//! | message to the host | task ids in it |
//! |---|---|
//! | answer to `tools/call` | `task.taskId` (2025-11-25's `CreateTaskResult`), `taskId` of a `resultType: "task"` (2026-07-28), `_meta[RELATED_TASK].taskId`, each round question's `params._meta[RELATED_TASK].taskId` |
//! | answer to `tasks/get`, `tasks/cancel` | `taskId`, `_meta[RELATED_TASK].taskId`, each question's in `inputRequests` |
//! | answer to `tasks/result` | `_meta[RELATED_TASK].taskId` |
//! | answer to `tasks/list` | each `tasks[].taskId` |
//! | an error (a task that ended in one, a server's refusal) | `data.taskId`; the named task's id where the message repeats it |
//! | `notifications/tasks/status` | `params.taskId`, and (any notification) `params._meta[RELATED_TASK].taskId` |
//! | a question of the server's (`elicitation/create`, …) | `params._meta[RELATED_TASK].taskId` |
//!
//! | message from the host | task ids in it |
//! |---|---|
//! | `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update` | `params.taskId`: opened, or the request refused |
//! | its answer to a question | `_meta[RELATED_TASK].taskId`: opened, or left out |
//!
//! Nothing else is looked at: a tool's own content naming a `taskId` is the tool's.
//!
//! **One task, one id.** A host keeps the id it was given and finds it again in every
//! answer about the task, status notification and list, on whichever replica: a task's
//! seal is deterministic ([`TaskSeal::seal`]) and its expiry is not the moment it is
//! sealed but the end of the day after next ([`expiry`]), so every replica seals a task
//! for a caller on one day to the same id. The day after, a newly sealed id differs;
//! the answer to a request that named the task repeats the id the host sent
//! ([`Presented`]), so a host polling a task sees its id unchanged until it expires.
//!
//! **A task of the bridge's own** (a legacy host's task call a 2026-07-28 server ran at
//! once: the core's `task_started`) is sealed as such ([`TaskSeal::own`], given by
//! [`TaskIds::with_own`]): the replica that made it answers it from memory, another
//! one from the store the replicas share (the core's `kept_tasks`), and none asks a
//! server about it.
//!
//! **What the seal does not hold: the server's session.** A replica reaches the task in
//! the server session it holds: a legacy host's sealed session is re-attached by every
//! replica to the one upstream session it began with, so the task is where the replica
//! asks; a 2026-07-28 server has no sessions. Only a 2026-07-28 host in front of a
//! 2025-11-25 server that binds tasks to sessions would find a task of another replica's
//! unknown (each replica has its own session for it there).

use serde_json::{Map, Value};

use crate::jsonrpc::{codes, RpcError};
use crate::method::{Method, TaskRole};
use crate::seal::{Caller, KeyRing, TaskSeal, TaskSealError, Text};
use crate::task_bridge::RELATED_TASK;

/// How often the expiry sealed in a task id moves on, in seconds (a day).
pub const PERIOD: u64 = 24 * 60 * 60;

/// The expiry sealed in a task id made at `now` (seconds since the Unix epoch): the end
/// of the day after next, so that an id opens for one to two days after it was handed
/// out, and every replica seals one task to one id all day.
pub fn expiry(now: u64) -> u64 {
    (now / PERIOD).saturating_add(2).saturating_mul(PERIOD)
}

/// The error a host request naming a task id that does not open gets: the spec's
/// answer to an unknown task. It says nothing of why (nor repeats the id).
pub fn unknown_task() -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message: "Unknown task: it expired, or was never made".into(),
        data: None,
    }
}

/// The task a host request named: the server's id and the sealed id the host sent,
/// which the answer repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    /// The server's own task id.
    pub task_id: String,
    /// The id as the host sent it.
    pub sealed: String,
    /// The task is the bridge's own ([`TaskSeal::own`]), not the server's.
    pub own: bool,
}

/// The sealing of task ids for one server behind a gateway (see the module
/// documentation): its key ring and its name.
#[derive(Debug, Clone)]
pub struct TaskIds {
    ring: KeyRing,
    server: String,
    /// The bridge's own tasks' ids start with this and `-` ([`TaskIds::with_own`]).
    own: Option<String>,
}

impl TaskIds {
    /// Task ids of server `server` (its name in the gateway), sealed under `ring`.
    pub fn new(ring: KeyRing, server: impl Into<String>) -> TaskIds {
        TaskIds {
            ring,
            server: server.into(),
            own: None,
        }
    }

    /// The task ids starting with `prefix` and `-` are the bridge's own (the core's
    /// `Started` names them so): sealed as such ([`TaskSeal::own`]).
    pub fn with_own(mut self, prefix: impl Into<String>) -> TaskIds {
        self.own = Some(prefix.into());
        self
    }

    /// Whether `task_id` is one of the bridge's own ([`TaskIds::with_own`]).
    fn is_own(&self, task_id: &str) -> bool {
        let own = self.own.as_deref().and_then(|p| task_id.strip_prefix(p));
        own.is_some_and(|rest| rest.starts_with('-'))
    }

    /// The id a host of `caller` is given at `now` for the server's `task_id`.
    pub fn seal(
        &self,
        task_id: &str,
        caller: &Caller<'_>,
        now: u64,
    ) -> Result<String, TaskSealError> {
        self.seal_as(task_id, caller, now, self.is_own(task_id))
    }

    /// [`TaskIds::seal`], the task the bridge's own when `own` says so.
    fn seal_as(
        &self,
        task_id: &str,
        caller: &Caller<'_>,
        now: u64,
        own: bool,
    ) -> Result<String, TaskSealError> {
        TaskSeal {
            expires_at: expiry(now),
            caller: caller.clone(),
            server: Text::from(self.server.as_str()),
            task_id: Text::from(task_id),
            own,
        }
        .seal(&self.ring)
    }

    /// The server's task id in `sealed`, presented by `caller` at `now`; refused as
    /// [`TaskSeal::open`] refuses, when sealed for another server, and when it is a task
    /// of the bridge's own (which no server knows).
    pub fn open(&self, sealed: &str, caller: &Caller<'_>, now: u64) -> Result<String, RpcError> {
        match self.open_any(sealed, caller, now)? {
            (_, true) => Err(unknown_task()),
            (task_id, false) => Ok(task_id),
        }
    }

    /// The task id in `sealed`, and whether it is the bridge's own: [`TaskIds::open`]
    /// that takes the bridge's own tasks too.
    fn open_any(
        &self,
        sealed: &str,
        caller: &Caller<'_>,
        now: u64,
    ) -> Result<(String, bool), RpcError> {
        let mut buffer = Vec::new();
        match TaskSeal::open(&self.ring, sealed, caller, now, &mut buffer) {
            Ok(task) if *task.server == *self.server => Ok((task.task_id.to_string(), task.own)),
            _ => Err(unknown_task()),
        }
    }

    /// A host request of `method`: the task id it names (`params.taskId`) opened in
    /// place; `None` for a method that names no task. Refused ([`unknown_task`]) when
    /// the id is missing, not a string or does not open: nothing is to be sent.
    pub fn open_request(
        &self,
        method: Method,
        params: &mut Value,
        caller: &Caller<'_>,
        now: u64,
    ) -> Result<Option<Presented>, RpcError> {
        if !Self::names_task(method) {
            return Ok(None);
        }
        let slot = params
            .get_mut("taskId")
            .filter(|v| v.is_string())
            .ok_or_else(unknown_task)?;
        let sealed = slot.as_str().unwrap_or_default().to_owned();
        let (task_id, own) = self.open_any(&sealed, caller, now)?;
        *slot = Value::String(task_id.clone());
        Ok(Some(Presented {
            task_id,
            sealed,
            own,
        }))
    }

    /// Whether a host request of `method` names a task (`params.taskId`).
    pub fn names_task(method: Method) -> bool {
        matches!(
            method.props().task_role(),
            Some(TaskRole::Status | TaskRole::Outcome | TaskRole::Cancel | TaskRole::Answers)
        )
    }

    /// Whether an answer to `method` may name tasks (only those are looked at).
    pub fn names_tasks(method: Method) -> bool {
        matches!(
            method.props().task_role(),
            Some(
                TaskRole::Call
                    | TaskRole::Status
                    | TaskRole::Outcome
                    | TaskRole::List
                    | TaskRole::Cancel
            )
        )
    }

    /// An answer to `method` for `caller` at `now`: each task id in it sealed (the one
    /// the host named, `presented`, as it sent it). Refused when one does not seal (a
    /// server's id too long to hand out).
    pub fn seal_answer(
        &self,
        method: Method,
        result: &mut Value,
        caller: &Caller<'_>,
        now: u64,
        presented: Option<&Presented>,
    ) -> Result<(), TaskSealError> {
        self.seal_answer_owning(method, result, caller, now, presented, &|_| false)
    }

    /// [`TaskIds::seal_answer`], where the ids `also_own` says so are the bridge's own
    /// too (not by their prefix: another replica made them, and a legacy host's
    /// `tasks/list` learned so from the store replicas share).
    pub fn seal_answer_owning(
        &self,
        method: Method,
        result: &mut Value,
        caller: &Caller<'_>,
        now: u64,
        presented: Option<&Presented>,
        also_own: &dyn Fn(&str) -> bool,
    ) -> Result<(), TaskSealError> {
        let mut seal = |id: &mut Value| self.seal_in(id, caller, now, presented, also_own);
        let Some(result) = result.as_object_mut() else {
            return Ok(());
        };
        match method.props().task_role() {
            Some(TaskRole::Call) => {
                if let Some(task) = result.get_mut("task").and_then(Value::as_object_mut) {
                    at(task, "taskId", &mut seal)?;
                }
                if result.get("resultType").and_then(Value::as_str) == Some("task") {
                    at(result, "taskId", &mut seal)?;
                }
                questions(result, &mut seal)?;
            }
            Some(TaskRole::Status | TaskRole::Cancel) => {
                at(result, "taskId", &mut seal)?;
                questions(result, &mut seal)?;
            }
            Some(TaskRole::List) => {
                let tasks = result.get_mut("tasks").and_then(Value::as_array_mut);
                for task in tasks.into_iter().flatten() {
                    if let Some(task) = task.as_object_mut() {
                        at(task, "taskId", &mut seal)?;
                    }
                }
            }
            Some(TaskRole::Outcome) => {}
            _ => return Ok(()),
        }
        related(result, &mut seal)
    }

    /// An error answer for `caller` at `now`: the task id in its `data` sealed (left out
    /// when it does not seal), and the server's id of the task the host named, where
    /// the server's message repeats it, put as the host knows it.
    pub fn seal_error(
        &self,
        error: &mut RpcError,
        caller: &Caller<'_>,
        now: u64,
        presented: Option<&Presented>,
    ) {
        if let Some(p) = presented {
            if let Some(message) = replace_word(&error.message, &p.task_id, &p.sealed) {
                error.message = message;
            }
        }
        let Some(data) = error.data.as_mut().and_then(Value::as_object_mut) else {
            return;
        };
        if at(data, "taskId", &mut |id| {
            self.seal_in(id, caller, now, presented, &|_| false)
        })
        .is_err()
        {
            data.remove("taskId");
        }
    }

    /// A notification `method` to the host of `caller` at `now`: `params.taskId` of a
    /// `notifications/tasks/status`, and any notification's related task, sealed.
    pub fn seal_notification(
        &self,
        method: &str,
        params: &mut Value,
        caller: &Caller<'_>,
        now: u64,
    ) -> Result<(), TaskSealError> {
        let mut seal = |id: &mut Value| self.seal_in(id, caller, now, None, &|_| false);
        let Some(params) = params.as_object_mut() else {
            return Ok(());
        };
        if method == crate::method::NotificationMethod::TaskStatus.as_str() {
            at(params, "taskId", &mut seal)?;
        }
        related(params, &mut seal)
    }

    /// A question of the server's to the host of `caller` at `now`: the task it is
    /// about (`params._meta[RELATED_TASK]`) sealed, or left out when it cannot be (the
    /// question is still asked).
    pub fn seal_question(&self, params: &mut Value, caller: &Caller<'_>, now: u64) {
        let Some(params) = params.as_object_mut() else {
            return;
        };
        if related(params, &mut |id| {
            self.seal_in(id, caller, now, None, &|_| false)
        })
        .is_err()
        {
            if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
                meta.remove(RELATED_TASK);
            }
        }
    }

    /// The host's answer to a question: the task it names (`_meta[RELATED_TASK]`)
    /// opened, or left out when it does not open (the server never sees a host's id).
    pub fn open_reply(&self, result: &mut Value, caller: &Caller<'_>, now: u64) {
        let Some(meta) = result.get_mut("_meta").and_then(Value::as_object_mut) else {
            return;
        };
        let Some(task) = meta.get_mut(RELATED_TASK).and_then(Value::as_object_mut) else {
            return;
        };
        let opened = task
            .get("taskId")
            .and_then(Value::as_str)
            .map(|id| self.open(id, caller, now));
        match opened {
            Some(Ok(task_id)) => {
                task.insert("taskId".into(), Value::String(task_id));
            }
            _ => {
                meta.remove(RELATED_TASK);
            }
        }
    }

    /// One task id (a string; anything else is left as it is) sealed in place.
    fn seal_in(
        &self,
        id: &mut Value,
        caller: &Caller<'_>,
        now: u64,
        presented: Option<&Presented>,
        also_own: &dyn Fn(&str) -> bool,
    ) -> Result<(), TaskSealError> {
        let Some(task_id) = id.as_str() else {
            return Ok(());
        };
        let sealed = match presented {
            Some(p) if p.task_id == task_id => p.sealed.clone(),
            _ => {
                let own = self.is_own(task_id) || also_own(task_id);
                self.seal_as(task_id, caller, now, own)?
            }
        };
        *id = Value::String(sealed);
        Ok(())
    }
}

/// `text` with each occurrence of `word` that stands alone (no letter, digit, `-` or `_`
/// on either side) replaced by `by`; `None` when there is none.
fn replace_word(text: &str, word: &str, by: &str) -> Option<String> {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    if word.is_empty() || !text.contains(word) {
        return None;
    }
    let (mut out, mut rest, mut replaced) = (String::with_capacity(text.len()), text, false);
    while let Some(at) = rest.find(word) {
        let (before, after) = (&rest[..at], &rest[at + word.len()..]);
        let alone = !part(before.chars().next_back()) && !part(after.chars().next());
        out.push_str(before);
        out.push_str(if alone { by } else { word });
        replaced |= alone;
        rest = after;
    }
    out.push_str(rest);
    replaced.then_some(out)
}

/// A task id sealer, as the walkers take it.
type Sealer<'s> = dyn FnMut(&mut Value) -> Result<(), TaskSealError> + 's;

/// `object[member]`, sealed when present.
fn at(
    object: &mut Map<String, Value>,
    member: &str,
    seal: &mut Sealer<'_>,
) -> Result<(), TaskSealError> {
    match object.get_mut(member) {
        Some(id) => seal(id),
        None => Ok(()),
    }
}

/// `object._meta[RELATED_TASK].taskId`, sealed when present.
fn related(object: &mut Map<String, Value>, seal: &mut Sealer<'_>) -> Result<(), TaskSealError> {
    let task = object
        .get_mut("_meta")
        .and_then(|m| m.get_mut(RELATED_TASK))
        .and_then(Value::as_object_mut);
    match task {
        Some(task) => at(task, "taskId", seal),
        None => Ok(()),
    }
}

/// The related task of each question in `object.inputRequests` (2026-07-28: a round's,
/// or a task's in `tasks/get`), sealed.
fn questions(object: &mut Map<String, Value>, seal: &mut Sealer<'_>) -> Result<(), TaskSealError> {
    let asked = object
        .get_mut("inputRequests")
        .and_then(Value::as_object_mut);
    for question in asked.into_iter().flat_map(|q| q.values_mut()) {
        let params = question.get_mut("params").and_then(Value::as_object_mut);
        if let Some(params) = params {
            related(params, seal)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "task_ids_tests.rs"]
mod tests;
