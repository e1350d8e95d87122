//! One replica's store, in its memory: the same operations as Redis's, with the same
//! arithmetic (GCRA in µs, counts that fade, keys spent once), for a gateway of one
//! replica and as the reference the Redis store is tested against. Bounded: at most
//! [`MemoryStore::MAX_KEYS`] keys; past them, those whose time is up are let go, and
//! if none is, the store refuses ([`StoreError::Full`]) rather than forget a key
//! spent once. Legacy hosts' task lists ([`TaskLists`]) are kept too, as many lists as
//! keys, each bounded as Redis's are.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::time::Instant;

use super::task_lists::{TaskLists, KEPT, MAX_TASKS};
use super::{Answer, Gcra, Store, StoreError};

/// A store in this process's memory.
#[derive(Debug)]
pub struct MemoryStore {
    keys: Mutex<Keys>,
    /// Each session's task list, oldest first, and until when it is kept.
    lists: Mutex<HashMap<String, (VecDeque<String>, Instant)>>,
    max_keys: usize,
}

#[derive(Debug)]
struct Keys {
    values: HashMap<String, (u64, Instant)>,
    /// The clock's origin: values that are times are µs since it.
    origin: Instant,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::with_max_keys(MemoryStore::MAX_KEYS)
    }
}

impl MemoryStore {
    /// The most keys the store keeps.
    pub const MAX_KEYS: usize = 100_000;

    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// An empty store that keeps at most `max_keys`.
    pub fn with_max_keys(max_keys: usize) -> MemoryStore {
        MemoryStore {
            keys: Mutex::new(Keys {
                values: HashMap::new(),
                origin: Instant::now(),
            }),
            lists: Mutex::new(HashMap::new()),
            max_keys: max_keys.max(1),
        }
    }

    /// `change` of the value of `key` (`None`: none, or its time is up), now in µs;
    /// it gives the value to keep (with how long) and what to answer.
    fn with<T>(
        &self,
        key: &str,
        change: impl FnOnce(Option<u64>, u64) -> (Option<(u64, Duration)>, T),
    ) -> Result<T, StoreError> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let now_us = u64::try_from(now.duration_since(keys.origin).as_micros()).unwrap_or(u64::MAX);
        let value = keys
            .values
            .get(key)
            .filter(|(_, until)| *until > now)
            .map(|(value, _)| *value);
        let (kept, answer) = change(value, now_us);
        match kept {
            Some((value, ttl)) => {
                if !keys.values.contains_key(key) && keys.values.len() >= self.max_keys {
                    keys.values.retain(|_, (_, until)| *until > now);
                    if keys.values.len() >= self.max_keys {
                        return Err(StoreError::Full);
                    }
                }
                keys.values.insert(key.to_owned(), (value, now + ttl));
            }
            None => {
                keys.values.remove(key);
            }
        }
        Ok(answer)
    }
}

impl Store for MemoryStore {
    fn rate(&self, key: &str, rate: Gcra) -> Answer<Option<Duration>> {
        let answer = self.with(key, |tat, now| {
            let tat = tat.unwrap_or(now).max(now);
            let new_tat = tat + rate.emission_us();
            let allow_at = new_tat.saturating_sub(rate.period_us());
            if allow_at > now {
                let wait = Duration::from_micros(allow_at - now);
                return (
                    Some((tat, Duration::from_micros(tat - now + 1))),
                    Some(wait),
                );
            }
            (Some((new_tat, Duration::from_micros(new_tat - now))), None)
        });
        futures_util::future::ready(answer).boxed()
    }

    fn enter(&self, key: &str, max: NonZeroU32, fade: Duration) -> Answer<bool> {
        let answer = self.with(key, |n, _| {
            let n = n.unwrap_or(0);
            if n >= u64::from(max.get()) {
                return (Some((n, fade)), false);
            }
            (Some((n + 1, fade)), true)
        });
        futures_util::future::ready(answer).boxed()
    }

    fn leave(&self, key: &str) -> Answer<()> {
        let answer = self.with(key, |n, _| match n {
            Some(n) if n > 1 => (Some((n - 1, Duration::from_secs(3600))), ()),
            _ => (None, ()),
        });
        futures_util::future::ready(answer).boxed()
    }

    fn spend_once(&self, key: &str, ttl: Duration) -> Answer<bool> {
        let answer = self.with(key, |spent, _| match spent {
            Some(_) => (Some((1, ttl)), false),
            None => (Some((1, ttl)), true),
        });
        futures_util::future::ready(answer).boxed()
    }

    fn ping(&self) -> Answer<()> {
        futures_util::future::ready(Ok(())).boxed()
    }

    fn kind(&self) -> &'static str {
        "memory"
    }

    fn task_lists(&self) -> Option<&dyn TaskLists> {
        Some(self)
    }
}

impl MemoryStore {
    fn lists(&self) -> std::sync::MutexGuard<'_, HashMap<String, (VecDeque<String>, Instant)>> {
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TaskLists for MemoryStore {
    fn add(&self, key: &str, entry: &str) -> Answer<()> {
        let answer = (|| {
            let mut lists = self.lists();
            let now = Instant::now();
            if !lists.contains_key(key) && lists.len() >= self.max_keys {
                lists.retain(|_, (_, until)| *until > now);
                if lists.len() >= self.max_keys {
                    return Err(StoreError::Full);
                }
            }
            let (list, until) = lists
                .entry(key.to_owned())
                .or_insert_with(|| (VecDeque::new(), now));
            if *until <= now {
                list.clear();
            }
            if !list.iter().any(|e| e == entry) {
                list.push_back(entry.to_owned());
            }
            while list.len() > MAX_TASKS {
                list.pop_front();
            }
            *until = now + KEPT;
            Ok(())
        })();
        futures_util::future::ready(answer).boxed()
    }

    fn members(&self, key: &str) -> Answer<Vec<String>> {
        let now = Instant::now();
        let members = match self.lists().get(key) {
            Some((list, until)) if *until > now => list.iter().cloned().collect(),
            _ => Vec::new(),
        };
        futures_util::future::ready(Ok(members)).boxed()
    }

    fn remove(&self, key: &str, entries: Vec<String>) -> Answer<()> {
        let mut lists = self.lists();
        if let Some((list, _)) = lists.get_mut(key) {
            list.retain(|e| !entries.contains(e));
            if list.is_empty() {
                lists.remove(key);
            }
        }
        futures_util::future::ready(Ok(())).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gcra(requests: u32, per: Duration) -> Gcra {
        Gcra {
            requests: NonZeroU32::new(requests).unwrap(),
            per,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_gives_its_burst_then_one_each_interval() {
        let store = MemoryStore::new();
        let rate = gcra(2, Duration::from_secs(10));
        assert_eq!(store.rate("a", rate).await.unwrap(), None);
        assert_eq!(store.rate("a", rate).await.unwrap(), None);
        assert_eq!(
            store.rate("a", rate).await.unwrap(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(store.rate("b", rate).await.unwrap(), None, "b has its own");
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(store.rate("a", rate).await.unwrap(), None);
        assert!(store.rate("a", rate).await.unwrap().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn calls_at_once_are_counted_and_fade() {
        let store = MemoryStore::new();
        let two = NonZeroU32::new(2).unwrap();
        let fade = Duration::from_secs(60);
        assert!(store.enter("a", two, fade).await.unwrap());
        assert!(store.enter("a", two, fade).await.unwrap());
        assert!(!store.enter("a", two, fade).await.unwrap());
        store.leave("a").await.unwrap();
        assert!(store.enter("a", two, fade).await.unwrap());
        // A replica that died never leaves: its counts fade.
        tokio::time::advance(fade).await;
        assert!(store.enter("a", two, fade).await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_is_spent_once_until_its_time_is_up() {
        let store = MemoryStore::new();
        let ttl = Duration::from_secs(30);
        assert!(store.spend_once("s", ttl).await.unwrap());
        assert!(!store.spend_once("s", ttl).await.unwrap());
        tokio::time::advance(ttl).await;
        assert!(store.spend_once("s", ttl).await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_sessions_task_list_keeps_its_order_its_bound_and_its_time() {
        let store = MemoryStore::with_max_keys(2);
        let lists = store.task_lists().expect("a memory store keeps task lists");
        for n in 0..MAX_TASKS + 2 {
            lists.add("s1", &format!("t{n}")).await.unwrap();
        }
        // Added again, a task keeps its place.
        lists.add("s1", "t5").await.unwrap();
        let listed = lists.members("s1").await.unwrap();
        assert_eq!(listed.len(), MAX_TASKS);
        assert_eq!(
            (listed[0].as_str(), listed[MAX_TASKS - 1].as_str()),
            ("t2", "t101"),
            "oldest first, the two oldest let go"
        );
        // Another session's list is its own.
        assert!(lists.members("s2").await.unwrap().is_empty());
        lists.add("s2", "t0").await.unwrap();
        assert_eq!(lists.members("s2").await.unwrap(), ["t0"]);
        lists
            .remove("s1", vec!["t2".into(), "t3".into()])
            .await
            .unwrap();
        assert_eq!(lists.members("s1").await.unwrap()[0], "t4");
        // As many lists as keys: a third session is refused while both live.
        assert!(matches!(lists.add("s3", "t0").await, Err(StoreError::Full)));
        // A list lives a sealed session's life after its last task.
        tokio::time::advance(KEPT).await;
        assert!(lists.members("s1").await.unwrap().is_empty());
        lists.add("s3", "t9").await.unwrap();
        assert_eq!(lists.members("s3").await.unwrap(), ["t9"]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_keys_kept_are_bounded_and_a_spent_one_is_never_forgotten_early() {
        let store = MemoryStore::with_max_keys(2);
        let ttl = Duration::from_secs(30);
        assert!(store.spend_once("a", ttl).await.unwrap());
        assert!(store.spend_once("b", ttl).await.unwrap());
        assert!(matches!(
            store.spend_once("c", ttl).await,
            Err(StoreError::Full)
        ));
        assert!(!store.spend_once("a", ttl).await.unwrap());
        tokio::time::advance(ttl).await;
        assert!(store.spend_once("c", ttl).await.unwrap());
    }
}
