//! The 2026-07-28 hosts of the listener, one task for each declaration.
//!
//! A 2026-07-28 host has no session: all it says of itself comes with each request, in
//! `_meta` — its version, `clientCapabilities` and `clientInfo`. The server behind is
//! connected declaring exactly that (a legacy server is asked only what the host can
//! answer, and sees the host's name), so hosts that declare differently are never
//! served by the same connection: a host that declared only `sampling` is never asked
//! to elicit because another host declared `elicitation`, nor sampled because another
//! did. Requests that declare the same share one task and one server behind.
//!
//! At most [`MAX_DECLARATIONS`] tasks run at once. A new declaration past that replaces
//! the one used least recently among those with no request in flight (its server is
//! shut down); when every one is busy, the request is refused with `503` and
//! `Retry-After`, and nothing else is disturbed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use capable::core::jsonrpc::Incoming;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::session::Command;

/// The most 2026-07-28 declarations served at once.
pub const MAX_DECLARATIONS: usize = 16;

/// What a 2026-07-28 request declares of its host, as one key: the version, the
/// capabilities and the client info exactly as sent (`""` for a request without the
/// envelope, which the engine refuses).
pub fn declaration(message: &Incoming) -> String {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<Meta<'a>>,
    }
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
        version: Option<&'a RawValue>,
        #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow)]
        capabilities: Option<&'a RawValue>,
        #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow)]
        client_info: Option<&'a RawValue>,
    }
    let (Incoming::Request { params, .. } | Incoming::Notification { params, .. }) = message else {
        return String::new();
    };
    let Some(meta) = params
        .raw_value()
        .ok()
        .and_then(|raw| serde_json::from_str::<Params<'_>>(raw.get()).ok())
        .and_then(|p| p.meta)
    else {
        return String::new();
    };
    let text = |v: Option<&RawValue>| v.map_or("", RawValue::get).to_owned();
    [
        text(meta.version),
        text(meta.capabilities),
        text(meta.client_info),
    ]
    .join("\n")
}

/// A request in flight at a declaration's task, for as long as this lives.
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::AcqRel);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

struct Task {
    commands: mpsc::UnboundedSender<Command>,
    in_flight: Arc<AtomicUsize>,
    used: u64,
}

/// Every declaration's task (see the module documentation).
#[derive(Default)]
pub struct Moderns {
    tasks: HashMap<String, Task>,
    clock: u64,
}

/// Every declaration's task is busy: the request waits for none of them.
#[derive(Debug)]
pub struct Busy;

impl Moderns {
    /// The task of `declaration`, started by `spawn` if there is none (making room if
    /// need be), and the request's hold on it.
    pub fn task(
        &mut self,
        declaration: String,
        spawn: impl FnOnce() -> mpsc::UnboundedSender<Command>,
    ) -> Result<(mpsc::UnboundedSender<Command>, InFlight), Busy> {
        self.clock += 1;
        let now = self.clock;
        self.tasks.retain(|_, t| !t.commands.is_closed());
        if let Some(task) = self.tasks.get_mut(&declaration) {
            task.used = now;
            return Ok((task.commands.clone(), InFlight::new(&task.in_flight)));
        }
        if self.tasks.len() >= MAX_DECLARATIONS {
            let idle = self
                .tasks
                .iter()
                .filter(|(_, t)| t.in_flight.load(Ordering::Acquire) == 0)
                .min_by_key(|(_, t)| t.used)
                .map(|(key, _)| key.clone());
            // Dropping its commands ends the task, and shuts its server down.
            self.tasks.remove(&idle.ok_or(Busy)?);
        }
        let task = Task {
            commands: spawn(),
            in_flight: Arc::new(AtomicUsize::new(0)),
            used: now,
        };
        let held = (task.commands.clone(), InFlight::new(&task.in_flight));
        self.tasks.insert(declaration, task);
        Ok(held)
    }

    /// The task of `declaration`, if it runs (for a notification, which starts none).
    pub fn existing(&self, declaration: &str) -> Option<mpsc::UnboundedSender<Command>> {
        self.tasks.get(declaration).map(|t| t.commands.clone())
    }

    /// Ends every task (the listener stops).
    pub fn clear(&mut self) {
        self.tasks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(meta: serde_json::Value) -> Incoming {
        let line = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": meta}});
        Incoming::parse(line.to_string().into_bytes()).unwrap()
    }

    #[test]
    fn declarations_differ_by_version_capabilities_and_client_info() {
        let meta = |caps: serde_json::Value, name: &str| {
            serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
                "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"}})
        };
        let sampling = declaration(&request(meta(serde_json::json!({"sampling": {}}), "a")));
        let elicit = declaration(&request(meta(serde_json::json!({"elicitation": {}}), "a")));
        let other_name = declaration(&request(meta(serde_json::json!({"sampling": {}}), "b")));
        assert_ne!(sampling, elicit);
        assert_ne!(sampling, other_name);
        let again = declaration(&request(meta(serde_json::json!({"sampling": {}}), "a")));
        assert_eq!(sampling, again);
        assert_eq!(declaration(&request(serde_json::json!(null))), "");
    }

    #[test]
    fn past_the_limit_the_least_recently_used_idle_task_makes_room_and_busy_ones_stay() {
        let mut moderns = Moderns::default();
        let mut receivers = Vec::new();
        let mut spawn = || {
            let (tx, rx) = mpsc::unbounded_channel();
            receivers.push(rx);
            tx
        };
        let mut held = Vec::new();
        for i in 0..MAX_DECLARATIONS {
            held.push(moderns.task(i.to_string(), &mut spawn).unwrap());
        }
        // Every one busy: a new declaration is refused, and nothing is ended.
        assert!(moderns.task("new".into(), &mut spawn).is_err());
        assert!(held.iter().all(|(tx, _)| !tx.is_closed()));
        // 0 and 1 go idle, 0 used since: 1 makes room.
        held.drain(..2);
        drop(moderns.task("0".into(), &mut spawn).unwrap());
        let (new, _hold) = moderns.task("new".into(), &mut spawn).unwrap();
        assert!(!new.is_closed());
        assert!(moderns.existing("1").is_none());
        assert!(moderns.existing("0").is_some());
        assert_eq!(moderns.tasks.len(), MAX_DECLARATIONS);
    }
}
