//! What a gateway's replicas must see at once, kept where they all see it: each
//! caller's request rate, its tool calls at once, a `requestState` spent once, a
//! legacy host's subscriptions, log level and the tasks it started, the tasks the
//! bridge answers itself.
//!
//! One replica keeps all of it in its memory ([`MemoryStore`], and the policy's own
//! in-memory limits). Many replicas behind a load balancer name a shared store in the
//! config (`gateway.store`), and [`RedisStore`] keeps it in Redis (or any service that
//! speaks its protocol):
//!
//! | operation | in Redis | why that way |
//! |---|---|---|
//! | [`Store::rate`] | a Lua script: GCRA over one key per caller (its theoretical arrival time, in µs of the server's `TIME`) | the same algorithm as one replica's in-memory limiter, so a limit means the same with a store or without; one key of one number per caller; atomic; the store's clock, so the replicas' clocks do not matter |
//! | [`Store::enter`], [`Store::leave`] | a Lua script `INCR` (undone over the limit) with `PEXPIRE`; `DECR`, the key gone at zero | the count of a replica that dies mid-call fades with its key |
//! | [`Store::spend_once`] | `SET key 1 NX PX ttl` | the first to spend it wins, on any replica |
//! | [`Store::keep`], [`Store::read`] | `SET key value PX ttl`; `GET key` | a task of the bridge's own, kept for every replica for its ttl (the core's `kept_tasks`) |
//! | [`Store::subscriptions`] | a set per legacy session, and a word on a channel when it changes ([`subscriptions`]) | a host's subscriptions follow its stream to whichever replica holds it |
//! | [`Store::levels`] | a level's name per legacy session, and a word on a channel when it is set ([`levels`]) | a host's log level holds on every replica holding its session |
//! | [`Store::task_lists`] | a sorted set per legacy session ([`task_lists`]) | a host's `tasks/list` lists the tasks it started through any replica |
//!
//! Every call is bounded: past the store's `timeout` the call fails
//! ([`StoreError::TimedOut`]), and for a second after a failure the store is not asked
//! at all ([`StoreError::Down`]), so a Redis that hangs or is gone never holds a
//! request for longer than one timeout — what the replica does instead is the
//! config's `whenDown`.

pub mod levels;
mod memory;
mod redis_store;
pub mod subscriptions;
pub mod task_lists;

use std::num::NonZeroU32;
use std::time::Duration;

use futures_util::future::BoxFuture;

pub use self::levels::SharedLevels;
pub use self::memory::MemoryStore;
pub use self::redis_store::RedisStore;
pub use self::subscriptions::SharedSubscriptions;
pub use self::task_lists::TaskLists;

/// A request rate: a burst of `requests`, one more each `per / requests` (GCRA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    /// How many requests each interval.
    pub requests: NonZeroU32,
    /// The interval.
    pub per: Duration,
}

impl Gcra {
    /// The interval between two requests once the burst is spent, in µs (at least 1).
    pub(crate) fn emission_us(&self) -> u64 {
        (self.period_us() / u64::from(self.requests.get())).max(1)
    }

    /// The interval, in µs (at least 1).
    pub(crate) fn period_us(&self) -> u64 {
        u64::try_from(self.per.as_micros())
            .unwrap_or(u64::MAX / 4)
            .max(1)
    }
}

/// Why the store could not answer.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// It did not answer within its timeout.
    #[error("the shared store did not answer within {}", capable::internal::time::humanize(*.0))]
    TimedOut(Duration),
    /// It failed lately and is let rest a moment before it is asked again.
    #[error("the shared store failed a moment ago: not asked again yet")]
    Down,
    /// It answered with an error, or could not be reached.
    #[error("the shared store failed: {0}")]
    Failed(String),
    /// A store in memory holds as many keys as it may.
    #[error("the store in memory is full")]
    Full,
}

/// What a store answers, later.
pub type Answer<T> = BoxFuture<'static, Result<T, StoreError>>;

/// A store that every replica of a gateway shares (or one replica's own). Keys are
/// the caller's to make: short, and naming nobody (the policy hashes who is calling).
pub trait Store: Send + Sync + 'static {
    /// One request of `key` at `rate`: `None` if it may pass (and is counted),
    /// else how long until one may.
    fn rate(&self, key: &str, rate: Gcra) -> Answer<Option<Duration>>;

    /// One more call of `key` in flight, if fewer than `max` are: whether it is
    /// counted in. The count fades `fade` after the last call entered (a replica that
    /// dies never calls [`leave`](Store::leave)).
    fn enter(&self, key: &str, max: NonZeroU32, fade: Duration) -> Answer<bool>;

    /// A call [`enter`](Store::enter) counted in has ended.
    fn leave(&self, key: &str) -> Answer<()>;

    /// Spends `key`, good for `ttl`: `true` the first time, `false` every time after
    /// (on any replica sharing the store) until `ttl` has passed.
    fn spend_once(&self, key: &str, ttl: Duration) -> Answer<bool>;

    /// Keeps `value` under `key` for `ttl` (replacing what was there), for every
    /// replica to [`read`](Store::read). A store that is one replica's own keeps
    /// nothing of the kind (the default): it fails.
    fn keep(&self, key: &str, value: Vec<u8>, ttl: Duration) -> Answer<()> {
        let _ = (key, value, ttl);
        let kind = self.kind();
        Box::pin(async move {
            Err(StoreError::Failed(format!(
                "a {kind} store keeps no values"
            )))
        })
    }

    /// What [`keep`](Store::keep) kept under `key` (`None`: nothing, or its time is up).
    fn read(&self, key: &str) -> Answer<Option<Vec<u8>>> {
        let _ = key;
        let kind = self.kind();
        Box::pin(async move {
            Err(StoreError::Failed(format!(
                "a {kind} store keeps no values"
            )))
        })
    }

    /// Whether the store answers now.
    fn ping(&self) -> Answer<()>;

    /// The kind of store, for what the gateway says (`memory`, `redis`).
    fn kind(&self) -> &'static str;

    /// Where legacy hosts' subscriptions are kept for every replica to see; `None`
    /// (the default) for a store that is one replica's own, which has nobody to share
    /// them with.
    fn subscriptions(&self) -> Option<&dyn SharedSubscriptions> {
        None
    }

    /// Where legacy hosts' log levels are kept for every replica to see; `None` (the
    /// default) for a store that is one replica's own.
    fn levels(&self) -> Option<&dyn SharedLevels> {
        None
    }

    /// Where legacy hosts' task lists are kept for every replica to see; `None` (the
    /// default) for a store that keeps none.
    fn task_lists(&self) -> Option<&dyn TaskLists> {
        None
    }
}

/// A key of the store: `capable:{kind}:` and a hash of what it is about, so that a
/// key is short and names nobody, whoever the caller is.
pub fn key(kind: &str, parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    let mut key = format!("capable:{kind}:");
    for byte in &digest[..16] {
        key.push_str(&format!("{byte:02x}"));
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_short_and_names_nobody() {
        let k = key(
            "rate",
            &["gateway.rateLimit", "https://idp|alice@example.com"],
        );
        assert!(k.starts_with("capable:rate:") && k.len() == "capable:rate:".len() + 32);
        assert!(!k.contains("alice"));
        assert_ne!(k, key("rate", &["gateway.rateLimit", "https://idp|bob"]));
        // The parts are kept apart: ("ab", "c") is not ("a", "bc").
        assert_ne!(key("rate", &["ab", "c"]), key("rate", &["a", "bc"]));
    }

    #[test]
    fn a_rate_is_counted_in_microseconds() {
        let r = Gcra {
            requests: NonZeroU32::new(4).unwrap(),
            per: Duration::from_secs(1),
        };
        assert_eq!((r.emission_us(), r.period_us()), (250_000, 1_000_000));
    }
}
