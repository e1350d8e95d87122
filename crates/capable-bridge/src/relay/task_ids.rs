//! Sealed task ids (with a seal key, `--seal-key-file`): every task id handed to the
//! host is sealed, every one it sends opened first — which members of which messages,
//! and what a refusal is, are the core's ([`capable::internal::bridge::task_ids`],
//! scripted tests there); this file applies it where a task id passes the relay, and
//! only there:
//!
//! | where | what |
//! |---|---|
//! | a host request, before anything is sent (`exchange.rs`) | `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`: the id opened; refused (`-32602`, unknown task, an audit `sealed` line) when it does not, nothing sent |
//! | the answer to it, and to `tools/call`, `tasks/list` (`exchange.rs`, `tasks.rs`) | sealed, when it mentions `taskId` (the bridge's own tasks' answers too); the id the host sent repeated |
//! | a notification to the host (`notifications/tasks/status`, a related task) | sealed; withheld if it cannot be |
//! | a question of the server's about a task, and the host's answer to it | sealed; opened (left out when it does not open) |
//!
//! The caller a task id is sealed for is the host's verified caller (`--auth-issuer`),
//! or nobody when there is no identity: then every host holding the id may use it, as
//! every host may use the session.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use capable::internal::bridge::task_ids::{Presented, TaskIds};
use capable::internal::jsonrpc::{Payload, RpcError};
use capable::internal::seal::{Caller, KeyRing};
use capable::internal::Method;
use serde_json::{json, Value};

use super::Relay;

/// The task ids of one server, sealed for one caller.
pub(super) struct Sealed {
    ids: TaskIds,
    caller: Caller<'static>,
}

impl Sealed {
    /// The caller the task ids are sealed for.
    pub(super) fn caller(&self) -> &Caller<'static> {
        &self.caller
    }
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Relay {
    /// Seals the task ids the host is handed under `ring` (the replicas' key), for the
    /// caller this relay serves (the task's: read once, here).
    pub fn seal_tasks(&mut self, ring: KeyRing) {
        let caller = crate::audit::caller();
        let caller = crate::listen::sealed_caller(caller.as_ref()).into_owned();
        // The bridge's own tasks sealed as such: any replica answers them (`kept_tasks.rs`).
        let ids = TaskIds::new(ring, self.servers.name()).with_own(self.started.prefix());
        self.sealed = Some(Sealed { ids, caller });
    }

    /// A host request's params with the task id it names opened (`None`: it names none,
    /// or ids are not sealed); `Err` when it does not open — answered here, as an
    /// unknown task, and nothing is sent.
    pub(super) fn open_task(
        &mut self,
        id: &capable::internal::jsonrpc::RequestId,
        method: Method,
        params: &mut Payload,
    ) -> Result<Option<Presented>, ()> {
        let Some(sealed) = &self.sealed else {
            return Ok(None);
        };
        if !TaskIds::names_task(method) {
            return Ok(None);
        }
        let mut value: Value = params.decode().unwrap_or(Value::Null);
        match sealed
            .ids
            .open_request(method, &mut value, &sealed.caller, now())
        {
            Ok(None) => Ok(None),
            Ok(Some(presented)) => {
                *params = Payload::from_json(value.to_string());
                Ok(Some(presented))
            }
            Err(_) => {
                self.refuse_task(id, method);
                Err(())
            }
        }
    }

    /// Host request `id` named a task id that does not open: an unknown task.
    fn refuse_task(&mut self, id: &capable::internal::jsonrpc::RequestId, method: Method) {
        let error = capable::internal::bridge::task_ids::unknown_task();
        self.audit.record(
            "sealed",
            json!({"task": "refused", "method": method.as_str()}),
        );
        self.core.respond_error(id, &error);
    }

    /// The answer to `method` as the host is handed it: its task ids sealed (`presented`
    /// repeated). Untouched when ids are not sealed, or it names none; an error when
    /// one cannot be sealed.
    pub(super) fn seal_answer(
        &self,
        method: Method,
        answer: Payload,
        presented: Option<&Presented>,
    ) -> Result<Payload, RpcError> {
        let Some(sealed) = &self.sealed else {
            return Ok(answer);
        };
        if !TaskIds::names_tasks(method) || !answer.mentions("taskId") {
            return Ok(answer);
        }
        let Ok(mut value) = answer.decode::<Value>() else {
            // Not JSON: the answer's own check says so.
            return Ok(answer);
        };
        // Another replica's tasks of the bridge's, listed here, sealed as the bridge's.
        let elsewhere = |id: &str| self.is_elsewhere(id);
        match sealed.ids.seal_answer_owning(
            method,
            &mut value,
            &sealed.caller,
            now(),
            presented,
            &elsewhere,
        ) {
            Ok(()) => Ok(Payload::from_json(value.to_string())),
            Err(e) => Err(super::gone(&format!(
                "the server's task cannot be handed out: {e}"
            ))),
        }
    }

    /// A value answer (the bridge's own) as the host is handed it: [`Self::seal_answer`].
    pub(super) fn seal_value(
        &self,
        method: Method,
        answer: &Value,
        presented: Option<&Presented>,
    ) -> Result<Value, RpcError> {
        if self.sealed.is_none() {
            return Ok(answer.clone());
        }
        let payload = Payload::from_json(answer.to_string());
        let sealed = self.seal_answer(method, payload, presented)?;
        Ok(sealed.decode().unwrap_or_default())
    }

    /// An error answer's task id (`data.taskId`) sealed.
    pub(super) fn seal_error(&self, error: &mut RpcError, presented: Option<&Presented>) {
        if let Some(sealed) = &self.sealed {
            sealed
                .ids
                .seal_error(error, &sealed.caller, now(), presented);
        }
    }

    /// A notification's params as the host is handed them; `None`: withheld (a task id
    /// in it cannot be sealed).
    pub(super) fn seal_notification<'v>(
        &self,
        method: &str,
        params: &'v Value,
    ) -> Option<Cow<'v, Value>> {
        let Some(sealed) = &self.sealed else {
            return Some(Cow::Borrowed(params));
        };
        let names = params.get("taskId").is_some() || params.get("_meta").is_some();
        if !names {
            return Some(Cow::Borrowed(params));
        }
        let mut value = params.clone();
        let sealing = sealed
            .ids
            .seal_notification(method, &mut value, &sealed.caller, now());
        sealing.ok().map(|()| Cow::Owned(value))
    }

    /// A question of the server's for the host: the task it is about sealed.
    pub(super) fn seal_question(&self, params: &mut Value) {
        if let Some(sealed) = &self.sealed {
            sealed.ids.seal_question(params, &sealed.caller, now());
        }
    }

    /// The host's answer to a question: the task it names opened (or left out).
    pub(super) fn open_reply(&self, answer: &mut Result<Value, RpcError>) {
        if let (Some(sealed), Ok(answer)) = (&self.sealed, answer) {
            sealed.ids.open_reply(answer, &sealed.caller, now());
        }
    }
}
