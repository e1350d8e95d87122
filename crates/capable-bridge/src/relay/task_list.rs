//! A legacy host's `tasks/list` on any replica (a seal key and `gateway.store`): each
//! task the host starts through a replica — a task of the server's, or one of the
//! bridge's own (a call a 2026-07-28 server ran at once, `kept_tasks.rs`) — is added
//! to its session's list in the store ([`crate::store::task_lists`], under a key hashed
//! from the server's name and the sealed session id) before the host is answered with
//! it, and the `tasks/list` a replica answers lists them all, as one replica lists the
//! tasks started through it (`tasks.rs`):
//!
//! | what happens | what the relay does |
//! |---|---|
//! | the host's task call made a task (the server's, or the bridge's own) | added to the session's list (entries: `s:` and the server's task id, `b:` and the bridge's); an id past [`MAX_ENTRY_LEN`] stays this replica's (a `notice`) |
//! | the host's `tasks/list` | the list read; each server's task asked about at the server (`tasks/get`), each task of the bridge's this replica made as it holds it, another replica's read from the store (`kept_tasks.rs`); then the tasks started here that the list lacks. Sealed as every answer is, another replica's tasks of the bridge's sealed as the bridge's own. Oldest first, one page (at most the core's `Started::KEPT` from the store) |
//! | a task the server no longer knows (`-32602` to its `tasks/get`), a task of the bridge's whose ttl ran out | not listed, and taken from the list |
//! | the store cannot be reached, adding | the task is listed by this replica alone (the host gets it all the same), `store_down` with `"use":"tasks"` in the audit |
//! | … reading | `store_down` in the audit; `whenDown: open`: the tasks started here, as without a store; `closed`: `-32603`, saying the store cannot be reached |
//!
//! Without a store, or without a seal key, a replica lists the tasks started through it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use capable::config::WhenDown;
use capable::internal::bridge::kept_tasks::{self, KeptTask};
use capable::internal::jsonrpc::{codes, Payload, RpcError};
use capable::internal::seal::Caller;
use capable::internal::task_started::Listed;
use capable::internal::Method;
use capable::{Error, RequestOptions, Session};
use serde_json::{json, Map, Value};

use super::tasks::{carry, carry_noting, How};
use super::{Event, Relay};
use crate::audit::Audit;
use crate::store::task_lists::{KIND, MAX_ENTRY_LEN, MAX_TASKS};
use crate::store::{Store, StoreError};

/// The most ids of other replicas' tasks of the bridge's a relay remembers, to seal
/// them as such in the `tasks/list` answers they are listed in.
const ELSEWHERE: usize = 4 * MAX_TASKS;

/// A session's list entry for `task_id`: the bridge's own (`own`) or the server's.
fn entry(own: bool, task_id: &str) -> String {
    match own {
        true => format!("b:{task_id}"),
        false => format!("s:{task_id}"),
    }
}

/// What an entry names: whether the task is the bridge's own, and its id (`None`: no
/// entry of ours).
fn parse(entry: &str) -> Option<(bool, &str)> {
    match entry.split_at_checked(2)? {
        ("b:", id) => Some((true, id)),
        ("s:", id) => Some((false, id)),
        _ => None,
    }
}

/// Milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Relay {
    /// The host's session is known by sealed id `session` from now on: with a store
    /// and a seal key ([`Relay::keep_tasks`]), the tasks it starts are listed in the
    /// store for every replica (see the module documentation).
    pub fn list_tasks_of(&mut self, session: &str) {
        let keeps_lists = self
            .keeping
            .as_ref()
            .is_some_and(|(store, _)| store.task_lists().is_some());
        if keeps_lists && self.sealed.is_some() {
            self.task_list = Some(crate::store::key(KIND, &[self.servers.name(), session]));
        }
    }

    /// Task `task_id` (the bridge's own: `own`) added to the session's list in the
    /// store (`None`: no list, or an id too long for it — said).
    pub(super) fn list_task(&self, task_id: &str, own: bool) -> Option<crate::store::Answer<()>> {
        let key = self.task_list.as_deref()?;
        let lists = self.keeping.as_ref()?.0.task_lists()?;
        let entry = entry(own, task_id);
        if entry.len() > MAX_ENTRY_LEN {
            let notice =
                "a task id longer than the store lists: the task is listed by this replica alone";
            self.audit.record(
                "notice",
                json!({"side": "bridge", "level": "warning", "notice": notice}),
            );
            return None;
        }
        Some(lists.add(key, &entry))
    }

    /// What a `tasks/list` reads from the store (`None`: no list is kept).
    pub(super) fn list_reading(&self) -> Option<Reading> {
        let key = self.task_list.clone()?;
        let (store, when_down) = self.keeping.clone()?;
        let sealed = self.sealed.as_ref()?;
        Some(Reading {
            store,
            when_down,
            key,
            audit: self.audit.clone(),
            server: self.servers.name().to_owned(),
            caller: sealed.caller().clone(),
            inbox: self.inbox.clone(),
        })
    }

    /// Tasks of the bridge's other replicas made were listed for the host: sealed as
    /// the bridge's own in the answer ([`Event::ListedElsewhere`], before it).
    pub(super) fn listed_elsewhere(&mut self, ids: Vec<String>) {
        if self.elsewhere.len() + ids.len() > ELSEWHERE {
            self.elsewhere.clear();
        }
        self.elsewhere.extend(ids);
    }

    /// Whether `task_id` is a task of the bridge's another replica made, listed here.
    pub(super) fn is_elsewhere(&self, task_id: &str) -> bool {
        self.elsewhere.contains(task_id)
    }
}

/// A `tasks/list` read from the store: where, for whom, and what holds while it is down.
pub(super) struct Reading {
    store: Arc<dyn Store>,
    when_down: WhenDown,
    key: String,
    audit: Arc<Audit>,
    server: String,
    caller: Caller<'static>,
    inbox: super::Inbox,
}

impl Reading {
    /// The host's `tasks/list`: the session's list read, merged with the tasks started
    /// here (`how.started`), and carried out as [`carry`] does; what is gone is taken
    /// from the list.
    pub(super) async fn carry(
        self,
        session: Arc<Session>,
        mut how: How,
        params: Map<String, Value>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        let Some(lists) = self.store.task_lists() else {
            return carry(session, how, params, options).await;
        };
        let entries = match lists.members(&self.key).await {
            Ok(entries) => entries,
            Err(e) => {
                self.down(&e);
                return match self.when_down {
                    WhenDown::Closed => Err(Error::Rpc {
                        method: Method::ListTasks,
                        error: RpcError {
                            code: codes::INTERNAL_ERROR,
                            message: format!(
                                "the store that lists this session's tasks for every replica cannot be reached ({e}): try again"
                            ),
                            data: None,
                        },
                    }),
                    _ => carry(session, how, params, options).await,
                };
            }
        };
        let local = std::mem::take(&mut how.started);
        let (listed, mut gone) = self.merge(entries, local).await;
        how.started = listed;
        let mut unknown = Vec::new();
        let answer = carry_noting(session, how, params, options, &mut unknown).await;
        gone.extend(unknown.iter().map(|id| entry(false, id)));
        // Failing, it is tried again at the next list.
        let _ = lists.remove(&self.key, gone).await;
        answer
    }

    /// The tasks to list: the session's `entries` in order (another replica's tasks of
    /// the bridge's read from the store), then those of `local` the list lacks; and the
    /// entries that are gone.
    async fn merge(&self, entries: Vec<String>, local: Vec<Listed>) -> (Vec<Listed>, Vec<String>) {
        let mut settled_here: HashMap<String, Value> = HashMap::new();
        for listed in &local {
            if let Listed::Settled(task) = listed {
                if let Some(id) = task.get("taskId").and_then(Value::as_str) {
                    settled_here.insert(id.to_owned(), task.clone());
                }
            }
        }
        // The tasks of the bridge's this replica does not hold (another's, or one it
        // let go), read from the store at once.
        let elsewhere: Vec<&str> = entries
            .iter()
            .filter_map(|e| parse(e))
            .filter(|(own, id)| *own && !settled_here.contains_key(*id))
            .map(|(_, id)| id)
            .collect();
        let reads = elsewhere.iter().map(|id| {
            let parts = kept_tasks::key_parts(&self.server, &self.caller, id);
            self.store
                .read(&crate::store::key(kept_tasks::KIND, &parts))
        });
        let read = futures_util::future::join_all(reads).await;
        let now_ms = unix_ms();
        let mut found: HashMap<&str, Value> = HashMap::new();
        let mut down = None;
        let mut gone = Vec::new();
        for (id, read) in elsewhere.iter().zip(read) {
            match read.map(|r| r.as_deref().and_then(KeptTask::decode)) {
                Ok(Some(kept)) if kept.until_ms > now_ms => {
                    found.insert(id, kept.task);
                }
                Ok(_) => gone.push(entry(true, id)),
                // Not known gone: left in the list, not listed this time.
                Err(e) => down = Some(e),
            }
        }
        if let Some(e) = down {
            self.down(&e);
        }
        let mut seen = HashSet::new();
        let mut listed = Vec::new();
        for e in &entries {
            let Some((own, id)) = parse(e) else {
                gone.push(e.clone());
                continue;
            };
            if !seen.insert(id.to_owned()) {
                continue;
            }
            let task = match own {
                false => Some(Listed::AtServer(id.to_owned())),
                // Held here, or read from the store (not there: gone, said above).
                true => settled_here
                    .get(id)
                    .cloned()
                    .or_else(|| found.remove(id))
                    .map(Listed::Settled),
            };
            listed.extend(task);
        }
        // The answer seals them as the bridge's own (another replica's prefix): the
        // relay knows before it has it.
        let sealed_own: Vec<String> = elsewhere.iter().map(|id| (*id).to_owned()).collect();
        if !sealed_own.is_empty() {
            self.inbox.send(Event::ListedElsewhere(sealed_own));
        }
        for task in local {
            let id = match &task {
                Listed::AtServer(id) => id.as_str(),
                Listed::Settled(task) => task.get("taskId").and_then(Value::as_str).unwrap_or(""),
            };
            if !seen.contains(id) {
                listed.push(task);
            }
        }
        (listed, gone)
    }

    /// The store could not be reached for the host's `tasks/list`: said in the audit.
    fn down(&self, e: &StoreError) {
        let then = match self.when_down {
            WhenDown::Closed => "the host's tasks/list is refused",
            _ => "the tasks/list lists the tasks started through this replica",
        };
        super::kept_tasks::store_down(&self.audit, e, then);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_says_whose_task_it_is_and_nothing_else_is_one() {
        assert_eq!(
            parse(&entry(true, "bridge-ab-1")),
            Some((true, "bridge-ab-1"))
        );
        assert_eq!(parse(&entry(false, "b:x")), Some((false, "b:x")));
        assert_eq!(parse("x:1"), None);
        assert_eq!(parse("s"), None);
        assert_eq!(parse("é"), None, "never a panic on a byte boundary");
    }
}
