//! A legacy host's log level (`logging/setLevel`), kept for its session where every
//! replica sees it: the level's name, under a key derived from its sealed session id
//! ([`key`](super::key), never the id itself), and a word to every replica holding
//! the session whenever it is set.
//!
//! Why a store: the level cannot live at the server when the bridge sets it for the
//! host itself — a 2026-07-28 server (the level goes in the `_meta` of each request of
//! the replica's), several servers behind a `--config` (each replica its own sessions
//! to them), a stdio server (each replica runs its own). The replica that took a
//! `logging/setLevel` keeps the level here before the host has its answer; every
//! replica holding the session (restored from its seal, or holding it already) reads
//! it when it takes the session up and again at each word, and applies it as it would
//! a `logging/setLevel` of the host's.
//!
//! In Redis ([`RedisStore`](super::RedisStore)):
//!
//! | what | how | why |
//! |---|---|---|
//! | [`SharedLevels::set`] | a Lua script: `SET key level PX ttl`, then `PUBLISH` on a channel named as the key | atomic: the word goes out once the level is kept |
//! | [`SharedLevels::level`] | `GETRANGE key 0 16`: a level's name and one byte more at most | read by a replica taking the session up, and at each word: never per request; bounded whatever the key holds |
//! | [`SharedLevels::watch`] | the subscriptions' pub/sub connection ([`subscriptions`](super::subscriptions)), `PSUBSCRIBE capable:level:*` on it too | a word carries nothing but its channel (the level is read anew); a word lost while reconnecting is made up by a read of every watched level once back |

use std::time::Duration;

use super::subscriptions::Watch;
use super::Answer;

/// How long a session's level is kept after it was last set: a sealed session's life.
pub const KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// The kind of key a session's level is kept under (`capable:level:…`).
pub const KIND: &str = "level";

/// The longest value read back as a level: a level's name is shorter (`emergency`);
/// anything longer is no level of ours.
pub const MAX_LEN: usize = 16;

/// A store's keeping of hosts' log levels (see the module documentation).
pub trait SharedLevels: Send + Sync {
    /// `level` (a level's name) kept under `key` for [`KEPT`], and every replica
    /// watching `key` told.
    fn set(&self, key: &str, level: &str) -> Answer<()>;

    /// The level's name kept under `key` (`None`: none, or its time is up).
    fn level(&self, key: &str) -> Answer<Option<String>>;

    /// Told whenever the level under `key` may have changed, while the watch is held.
    fn watch(&self, key: &str) -> Watch;
}

/// Levels kept in this process's memory, as Redis keeps them for many: the reference
/// the session's part is tested against.
#[cfg(test)]
pub mod memory {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use futures_util::FutureExt;

    use super::super::subscriptions::{Watch, Watchers};
    use super::super::{Answer, StoreError};
    use super::SharedLevels;

    /// Levels in memory; `down` makes every call fail as an unreachable store does.
    #[derive(Default)]
    pub struct MemoryLevels {
        levels: Mutex<HashMap<String, String>>,
        watchers: Arc<Watchers>,
        /// Set: every call fails, as an unreachable store's does.
        pub down: std::sync::atomic::AtomicBool,
    }

    impl MemoryLevels {
        fn up(&self) -> Result<(), StoreError> {
            match self.down.load(std::sync::atomic::Ordering::Relaxed) {
                true => Err(StoreError::Down),
                false => Ok(()),
            }
        }
    }

    impl SharedLevels for MemoryLevels {
        fn set(&self, key: &str, level: &str) -> Answer<()> {
            let done = self.up().map(|()| {
                let mut levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
                levels.insert(key.to_owned(), level.to_owned());
                self.watchers.changed(key);
            });
            async move { done }.boxed()
        }

        fn level(&self, key: &str) -> Answer<Option<String>> {
            let read = self.up().map(|()| {
                let levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
                levels.get(key).cloned()
            });
            async move { read }.boxed()
        }

        fn watch(&self, key: &str) -> Watch {
            self.watchers.watch(key)
        }
    }
}
