//! A legacy host's tasks, listed for its session where every replica sees them: each
//! task the host started through any replica (a server's, or the bridge's own), under
//! a key derived from its sealed session id ([`key`](super::key), never the id
//! itself), oldest first, so that its `tasks/list` on any replica lists them all (the
//! relay's `task_list.rs`).
//!
//! In Redis ([`RedisStore`](super::RedisStore)):
//!
//! | what | how | why |
//! |---|---|---|
//! | [`TaskLists::add`] | a Lua script: `ZADD NX` scored by the store's `TIME` (µs), `ZREMRANGEBYRANK` past [`MAX_TASKS`], `PEXPIRE` [`KEPT`] | atomic; ordered by when each task was made, whichever replica's clock; the oldest let go first, as one replica's own list does |
//! | [`TaskLists::members`] | `ZRANGE 0 -1` | oldest first, at most [`MAX_TASKS`] |
//! | [`TaskLists::remove`] | `ZREM` | a task the server no longer knows, or a task of the bridge's whose ttl ran out, leaves the list |

use std::time::Duration;

use super::Answer;

/// The most tasks one session's list holds: the oldest let go first (the same bound as
/// the tasks a replica keeps for a host, the core's `Started::KEPT`).
pub const MAX_TASKS: usize = capable::internal::task_started::Started::KEPT;

/// The longest entry kept (in bytes): a task whose id is longer is listed by the
/// replica that started it alone.
pub const MAX_ENTRY_LEN: usize = 1024;

/// How long a session's list is kept after its last task was added: a sealed
/// session's life (no task outlives the session that lists it).
pub const KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// The kind of key a session's list is kept under (`capable:tasks:…`).
pub const KIND: &str = "tasks";

/// A store's keeping of legacy hosts' task lists (see the module documentation).
/// Entries are the relay's to make (short, at most [`MAX_ENTRY_LEN`] bytes).
pub trait TaskLists: Send + Sync {
    /// `entry` added to the list under `key` (where it is already, it keeps its place),
    /// the oldest let go past [`MAX_TASKS`], the list kept [`KEPT`] from now.
    fn add(&self, key: &str, entry: &str) -> Answer<()>;

    /// The entries of the list under `key`, oldest first (at most [`MAX_TASKS`]).
    fn members(&self, key: &str) -> Answer<Vec<String>>;

    /// `entries` taken from the list under `key`.
    fn remove(&self, key: &str, entries: Vec<String>) -> Answer<()>;
}
