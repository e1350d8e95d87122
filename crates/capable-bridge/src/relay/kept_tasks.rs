//! The bridge's own tasks kept for every replica (a seal key and `gateway.store`): a
//! legacy host's task call a 2026-07-28 server ran at once is a task of the bridge's,
//! already over (`tasks.rs`); with this, what it holds goes to the store before the host
//! is given its id, and a replica its `tasks/get`, `tasks/result` or `tasks/cancel`
//! reaches that never saw it answers from the store. What is kept, under which key, for
//! how long and what is answered from it are the core's
//! ([`capable::internal::bridge::kept_tasks`], tests there); this file writes and reads.
//!
//! | what happens | what the relay does |
//! |---|---|
//! | the bridge made a task | kept (`SET … PX ttl`), then the host answered; larger than the core's `MAX_KEPT_BYTES`: kept on this replica alone, a `notice` in the audit |
//! | a host names a task of the bridge's this replica did not make (its sealed id says so) | read (`GET`) and answered from it; not there (expired, never kept): unknown (`-32602`); nothing reaches the server |
//! | the store cannot be reached, writing | the task stays this replica's (the host gets it all the same: the tool ran), `store_down` with `"use":"tasks"` in the audit (so for the session's task list, `task_list.rs`) |
//! | … reading | `store_down` in the audit; `whenDown: open`: unknown, as without a store; `closed`: `-32603`, saying the store cannot be reached |
//!
//! Without a store, or without a seal key, a task of the bridge's is its replica's alone
//! (another replica answers that it is unknown).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use capable::config::WhenDown;
use capable::internal::bridge::kept_tasks::{self, KeptTask, KIND};
use capable::internal::bridge::task_ids::Presented;
use capable::internal::jsonrpc::{Payload, RequestId, RpcError};
use capable::internal::task_started;
use capable::internal::Method;
use serde_json::json;

use super::{Event, Exchange, Relay};
use crate::store::{Store, StoreError};

/// Where the relay keeps its own tasks for every replica, and what holds when it is
/// down.
pub(super) type Keeping = (Arc<dyn Store>, WhenDown);

/// An answer held until its task is kept: the host request, its exchange, the answer.
pub(super) type Held = (RequestId, Exchange, Payload);

/// A host request about another replica's task of the bridge's, while the store is
/// read: its id, method, the task's id and the id as the host sent it.
pub(super) type Asking = (RequestId, Method, String, Option<Presented>);

/// Milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Relay {
    /// The relay's own tasks are kept in `store` for every replica (see the module
    /// documentation), `when_down` holding while it cannot be reached.
    pub fn keep_tasks(&mut self, store: Arc<dyn Store>, when_down: WhenDown) {
        self.keeping = Some((store, when_down));
    }

    /// Host request `id` started `task` (the bridge's own, or the server's): kept in
    /// the store first when it is the bridge's, and listed for the host's session
    /// (`task_list.rs`), the answer held until then ([`Event::Kept`]); without a store
    /// the host is answered now.
    pub(super) fn keep(
        &mut self,
        id: &RequestId,
        task: &super::tasks::NewTask,
        exchange: Exchange,
        answer: Payload,
    ) {
        let keeping = match task.own {
            true => self.record(&task.task_id),
            false => None,
        };
        let listing = self.list_task(&task.task_id, task.own);
        if keeping.is_none() && listing.is_none() {
            return self.finish(id, exchange, Ok(answer));
        }
        let held = Box::new((id.clone(), exchange, answer));
        let audit = self.audit.clone();
        self.queue.push(async move {
            let done = |f: Option<crate::store::Answer<()>>| async move {
                match f {
                    Some(f) => f.await,
                    None => Ok(()),
                }
            };
            let (kept, listed) = futures_util::future::join(done(keeping), done(listing)).await;
            if let Err(e) = listed {
                let then = "the task is listed by the replica that started it alone";
                store_down(&audit, &e, then);
            }
            Event::Kept(held, kept)
        });
    }

    /// Task `task_id` being kept for every replica (`None`: no store, or the task is
    /// too large — said).
    fn record(&mut self, task_id: &str) -> Option<crate::store::Answer<()>> {
        let (Some((store, _)), Some(sealed)) = (&self.keeping, &self.sealed) else {
            return None;
        };
        let (now, now_ms) = (Instant::now(), unix_ms());
        let (task, result, left) = self.started.settled(task_id, now)?;
        let left_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        let kept = KeptTask::new(task, result.clone(), left_ms, now_ms);
        let parts = kept_tasks::key_parts(self.servers.name(), sealed.caller(), task_id);
        let key = crate::store::key(KIND, &parts);
        match kept.encode() {
            Ok(bytes) => Some(store.keep(&key, bytes, Duration::from_millis(kept.ttl(now_ms)))),
            Err(e) => {
                let notice = format!("{e}: the task stays with this replica");
                self.audit.record(
                    "notice",
                    json!({"side": "bridge", "level": "warning", "notice": notice}),
                );
                None
            }
        }
    }

    /// The store kept a task of the bridge's (or failed to: it stays this replica's,
    /// said in the audit): the host is answered.
    pub(super) fn kept(&mut self, held: Held, kept: Result<(), StoreError>) {
        let (id, exchange, answer) = held;
        if let Err(e) = kept {
            self.store_down(&e, "the task stays with the replica that made it");
        }
        self.finish(&id, exchange, Ok(answer));
    }

    /// Host request `id` of `method` names task `task_id` of the bridge's, made by
    /// another replica: read from the store ([`Event::KeptRead`]), or unknown without
    /// one.
    pub(super) fn read_kept(
        &mut self,
        id: &RequestId,
        method: Method,
        task_id: String,
        presented: Option<Presented>,
    ) {
        let (Some((store, _)), Some(sealed)) = (&self.keeping, &self.sealed) else {
            let mut unknown = task_started::unknown(&task_id);
            self.seal_error(&mut unknown, presented.as_ref());
            self.core.respond_error(id, &unknown);
            return;
        };
        let parts = kept_tasks::key_parts(self.servers.name(), sealed.caller(), &task_id);
        let reading = store.read(&crate::store::key(KIND, &parts));
        let asking = Box::new((id.clone(), method, task_id, presented));
        self.queue
            .push(async move { Event::KeptRead(asking, reading.await) });
    }

    /// What the store held of another replica's task of the bridge's: the host's answer.
    pub(super) fn kept_read(&mut self, asking: Asking, read: Result<Option<Vec<u8>>, StoreError>) {
        let (id, method, task_id, presented) = asking;
        let answer = match read {
            Ok(read) => kept_tasks::answer_kept(read.as_deref(), method, &task_id, unix_ms()),
            Err(e) => {
                let closed = self
                    .keeping
                    .as_ref()
                    .is_some_and(|(_, w)| *w == WhenDown::Closed);
                let then = match closed {
                    true => "the host's request about a task of the bridge's is refused",
                    false => "a task of the bridge's another replica made is unknown here",
                };
                self.store_down(&e, then);
                match closed {
                    true => Err(RpcError {
                        code: -32603,
                        message: format!(
                            "the store that keeps this task for every replica cannot be reached ({e}): try again"
                        ),
                        data: None,
                    }),
                    false => Err(task_started::unknown(&task_id)),
                }
            }
        };
        self.own_answer(&id, method, answer, presented.as_ref());
    }

    /// The bridge's answer about one of its tasks, its task ids sealed as a server's
    /// answer's are (`task_ids.rs`).
    pub(super) fn own_answer(
        &mut self,
        id: &RequestId,
        method: Method,
        answer: Result<serde_json::Value, RpcError>,
        presented: Option<&Presented>,
    ) {
        match answer {
            Ok(answer) => match self.seal_value(method, &answer, presented) {
                Ok(answer) => self.core.respond(id, &answer),
                Err(e) => self.core.respond_error(id, &e),
            },
            Err(mut e) => {
                self.seal_error(&mut e, presented);
                self.core.respond_error(id, &e);
            }
        }
    }

    /// The store could not be reached (`e`) for a task: said in the audit.
    fn store_down(&self, e: &StoreError, then: &str) {
        store_down(&self.audit, e, then);
    }
}

/// The store could not be reached (`e`) for a task: said in `audit` (`then`: what
/// the relay does instead).
pub(super) fn store_down(audit: &crate::audit::Audit, e: &StoreError, then: &str) {
    audit.record(
        "store_down",
        json!({"side": "bridge", "use": "tasks", "error": e.to_string(), "notice": then}),
    );
}
