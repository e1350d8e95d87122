//! A legacy host's resource subscriptions, kept for its session where every replica sees
//! them: the set of URIs it subscribed to, under a key derived from its sealed session
//! id ([`key`](super::key), never the id itself), and a word to the replica holding
//! the host's standalone `GET` whenever the set changes.
//!
//! Why a store: the state cannot live at the server when the bridge subscribes for the
//! host itself — a 2026-07-28 server (a `subscriptions/listen` stream of the bridge's),
//! several servers behind a `--config` (each replica its own sessions to them), a stdio
//! server (each replica runs its own). The
//! replica that took a `resources/subscribe` records it here; the one holding the
//! host's stream subscribes upstream to the whole set and delivers the updates; when
//! the host's stream moves (its replica died, the host reconnected elsewhere), the new
//! holder reads the set and subscribes to it.
//!
//! In Redis ([`RedisStore`](super::RedisStore)):
//!
//! | what | how | why |
//! |---|---|---|
//! | [`SharedSubscriptions::change`] | a Lua script: `SADD` (refused past [`MAX_URIS`]) or `SREM`, `PEXPIRE`, then `PUBLISH` on a channel named as the key | atomic: the word goes out once the set holds the change |
//! | [`SharedSubscriptions::members`] | `SMEMBERS` | read by the replica taking the host's stream, and at each word |
//! | [`SharedSubscriptions::watch`] | one `PSUBSCRIBE capable:subs:*` connection a replica, reconnected after a failure | a word carries nothing but its channel (the set is read anew): bounded, and a word lost while reconnecting is made up by a read of every watched set once back |

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use super::Answer;

/// The most URIs one session's set holds: a subscribe past it stays with the replica
/// that took it (said in the audit).
pub const MAX_URIS: usize = 256;

/// The longest URI kept (in bytes): a longer one stays with the replica that took it.
pub const MAX_URI_LEN: usize = 2048;

/// How long a session's set is kept after its last change: a sealed session's life.
pub const KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// The kind of key a session's set is kept under (`capable:subs:…`).
pub const KIND: &str = "subs";

/// A store's keeping of hosts' subscriptions (see the module documentation).
pub trait SharedSubscriptions: Send + Sync {
    /// `uri` added to (`subscribed`) or taken from the set under `key`, kept
    /// [`KEPT`] from now, and the replica watching `key` told. `true`: added (or
    /// held already), taken (it was there); `false`: the set is full, or the URI was
    /// not in it.
    fn change(&self, key: &str, uri: &str, subscribed: bool) -> Answer<bool>;

    /// The URIs of the set under `key` (at most [`MAX_URIS`]).
    fn members(&self, key: &str) -> Answer<Vec<String>>;

    /// Told whenever the set under `key` may have changed, while the watch is held.
    fn watch(&self, key: &str) -> Watch;
}

/// The watches of each key: each one's number and what wakes it.
type Watching = HashMap<String, Vec<(u64, Arc<Notify>)>>;

/// Who watches which set on this replica: the sessions whose host's `GET` is here.
#[derive(Default)]
pub struct Watchers {
    watching: Mutex<Watching>,
    next: AtomicU64,
}

impl Watchers {
    /// A watch of `key`, counted here until dropped.
    pub fn watch(self: &Arc<Self>, key: &str) -> Watch {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        self.lock()
            .entry(key.to_owned())
            .or_default()
            .push((id, notify.clone()));
        Watch {
            notify,
            key: key.to_owned(),
            id,
            watchers: Arc::downgrade(self),
        }
    }

    /// The set under `key` may have changed: its watchers are told.
    pub fn changed(&self, key: &str) {
        if let Some(watching) = self.lock().get(key) {
            for (_, notify) in watching {
                notify.notify_one();
            }
        }
    }

    /// Any set may have changed (words may have been lost): every watcher is told.
    pub fn all_changed(&self) {
        for (_, notify) in self.lock().values().flatten() {
            notify.notify_one();
        }
    }

    /// Whether anyone watches.
    pub fn any(&self) -> bool {
        !self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watching> {
        self.watching.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A session's watch of its set ([`SharedSubscriptions::watch`]); dropped, it ends.
pub struct Watch {
    notify: Arc<Notify>,
    key: String,
    id: u64,
    watchers: Weak<Watchers>,
}

impl Watch {
    /// Resolves once the set may have changed since the last time it did (changes in
    /// between are told once).
    pub async fn changed(&self) {
        self.notify.notified().await;
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let Some(watchers) = self.watchers.upgrade() else {
            return;
        };
        let mut watching = watchers.lock();
        if let Some(list) = watching.get_mut(&self.key) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                watching.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_watch_is_told_of_its_own_key_once_for_many_changes_and_forgotten_when_dropped() {
        let watchers = Arc::new(Watchers::default());
        let a = watchers.watch("capable:subs:a");
        let b = watchers.watch("capable:subs:b");
        watchers.changed("capable:subs:a");
        watchers.changed("capable:subs:a");
        a.changed().await;
        // Two changes, one word: nothing more is waiting for a.
        let more = tokio::time::timeout(Duration::from_millis(20), a.changed()).await;
        assert!(more.is_err());
        // b was not told.
        let b_told = tokio::time::timeout(Duration::from_millis(20), b.changed()).await;
        assert!(b_told.is_err());
        watchers.all_changed();
        b.changed().await;
        drop(a);
        drop(b);
        assert!(!watchers.any());
    }
}
