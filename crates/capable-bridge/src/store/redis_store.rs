//! The store in Redis (or any service speaking its protocol), through the client's
//! tokio connection manager: connected on first use, reconnected after a failure. Each
//! call is bounded by the store's timeout; after a failure the store rests a second
//! ([`REST`]) before it is asked again, so that while Redis is gone a request pays
//! nothing for it, and at most one timeout when it just went.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{IntoConnectionInfo, Script};
use tokio::time::Instant;

use super::levels::{self, SharedLevels};
use super::subscriptions::{self, SharedSubscriptions, Watch, Watchers, MAX_URIS};
use super::task_lists::{self, TaskLists, MAX_TASKS};
use super::{Answer, Gcra, Store, StoreError};

/// How long the store is let rest after a failure before it is asked again.
pub const REST: Duration = Duration::from_secs(1);

/// GCRA (the theoretical arrival time of the caller's next request, in µs of the
/// server's clock): 0 if the request passes (and is counted), else the µs to wait.
const RATE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + emission
local allow_at = new_tat - period
if allow_at > now then return allow_at - now end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
return 0
";

/// One more call in flight if fewer than `ARGV[1]` are (1), else none (0); the count
/// fades `ARGV[2]` ms after the last call entered.
const ENTER: &str = r"
local n = redis.call('INCR', KEYS[1])
if n > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
";

/// One call less in flight; the key gone at zero.
const LEAVE: &str = r"
local n = redis.call('DECR', KEYS[1])
if n <= 0 then redis.call('DEL', KEYS[1]) end
return n
";

/// A URI added to (`ARGV[1]` `+`, unless the set holds `ARGV[3]` already) or taken
/// from (`-`) a session's set, kept `ARGV[4]` ms, and a word on the channel named as
/// the key: 1 done, 0 not (full, or not there).
const CHANGE: &str = r"
local done
if ARGV[1] == '+' then
  if redis.call('SISMEMBER', KEYS[1], ARGV[2]) == 0
     and redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[3]) then
    return 0
  end
  redis.call('SADD', KEYS[1], ARGV[2])
  done = 1
else
  done = redis.call('SREM', KEYS[1], ARGV[2])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
redis.call('PUBLISH', KEYS[1], ARGV[1])
return done
";

/// A session's log level (`ARGV[1]`) kept `ARGV[2]` ms, and a word on the channel
/// named as the key.
const LEVEL: &str = r"
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('PUBLISH', KEYS[1], '=')
return 1
";

/// An entry (`ARGV[1]`) added to a session's task list where it is not yet, scored by
/// the server's clock (µs), the oldest let go past `ARGV[2]` entries, the list kept
/// `ARGV[3]` ms.
const ADD_TASK: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[2]) + 1))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// The Lua scripts the store runs, each loaded once (by its digest) and named here:
/// `Inner::scripts` holds them in this order.
#[derive(Clone, Copy)]
enum Lua {
    Rate,
    Enter,
    Leave,
    Change,
    Level,
    AddTask,
}

impl Lua {
    const ALL: [Lua; 6] = [
        Lua::Rate,
        Lua::Enter,
        Lua::Leave,
        Lua::Change,
        Lua::Level,
        Lua::AddTask,
    ];

    fn source(self) -> &'static str {
        match self {
            Lua::Rate => RATE,
            Lua::Enter => ENTER,
            Lua::Leave => LEAVE,
            Lua::Change => CHANGE,
            Lua::Level => LEVEL,
            Lua::AddTask => ADD_TASK,
        }
    }
}

/// A store in Redis.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    manager: ConnectionManager,
    timeout: Duration,
    /// Not asked before this, after a failure.
    resting_until: Mutex<Option<Instant>>,
    /// [`Lua::ALL`]'s, in its order.
    scripts: [Script; 6],
    /// For the subscriptions' and levels' channels: a connection of its own, opened
    /// once a session watches.
    client: redis::Client,
    watchers: Arc<Watchers>,
    following: std::sync::Once,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL is left out: it may name a user, and the password is in the client.
        f.debug_struct("RedisStore")
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// `SET key value PX ttl` (with `only_new`, `NX`): whether it was set.
    fn set(&self, key: &str, value: Vec<u8>, ttl: Duration, only_new: bool) -> Answer<bool> {
        let mut set = redis::cmd("SET");
        set.arg(key).arg(value);
        if only_new {
            set.arg("NX");
        }
        set.arg("PX").arg(millis(ttl).max(1));
        self.query::<Option<String>>(set)
            .map(|set| set.map(|set| set.is_some()))
            .boxed()
    }

    /// The store at `url` (`redis://host:port/db`; its password, if any, `password`),
    /// each call bounded by `timeout`. Nothing is connected yet: the first call does,
    /// so a gateway starts while Redis is away. Call within a tokio runtime.
    pub fn new(
        url: &str,
        password: Option<&str>,
        timeout: Duration,
    ) -> Result<RedisStore, StoreError> {
        let info = url
            .into_connection_info()
            .map_err(|e| StoreError::Failed(format!("not a Redis URL: {}", e.category())))?;
        let info = match password {
            Some(password) => {
                let settings = info.redis_settings().clone().set_password(password);
                info.set_redis_settings(settings)
            }
            None => info,
        };
        let client = redis::Client::open(info).map_err(failed)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(REST);
        let manager =
            ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(failed)?;
        Ok(RedisStore {
            inner: Arc::new(Inner {
                manager,
                timeout,
                resting_until: Mutex::new(None),
                scripts: Lua::ALL.map(|lua| Script::new(lua.source())),
                client,
                watchers: Arc::new(Watchers::default()),
                following: std::sync::Once::new(),
            }),
        })
    }

    /// `call` on a connection, bounded by the timeout; a failure lets the store rest.
    async fn call<T, F, Fut>(&self, call: F) -> Result<T, StoreError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let inner = &self.inner;
        {
            let mut resting = inner
                .resting_until
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match *resting {
                Some(until) if Instant::now() < until => return Err(StoreError::Down),
                Some(_) => *resting = None,
                None => {}
            }
        }
        let answer = match tokio::time::timeout(inner.timeout, call(inner.manager.clone())).await {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(e)) => failed(e),
            Err(_) => StoreError::TimedOut(inner.timeout),
        };
        *inner
            .resting_until
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + REST);
        Err(answer)
    }

    /// Script `lua` on `key`, with the arguments `args` adds (`ARGV`, in order).
    fn script<T: redis::FromRedisValue + Send + 'static>(
        &self,
        lua: Lua,
        key: &str,
        args: impl FnOnce(&mut redis::ScriptInvocation<'_>) + Send + 'static,
    ) -> Answer<T> {
        let store = self.clone();
        let key = key.to_owned();
        let script = store.inner.scripts[lua as usize].clone();
        async move {
            store
                .call(|mut c| async move {
                    let mut invocation = script.key(&key);
                    args(&mut invocation);
                    invocation.invoke_async::<T>(&mut c).await
                })
                .await
        }
        .boxed()
    }

    /// Command `cmd`, its answer read as `T`.
    fn query<T: redis::FromRedisValue + Send + 'static>(&self, cmd: redis::Cmd) -> Answer<T> {
        let store = self.clone();
        async move {
            store
                .call(|mut c| async move { cmd.query_async::<T>(&mut c).await })
                .await
        }
        .boxed()
    }
}

/// `d` in whole milliseconds, as Redis takes a `PX` (saturating).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// At most `max` of `members` (a set someone else wrote may hold more).
fn bounded(mut members: Vec<String>, max: usize) -> Vec<String> {
    members.truncate(max);
    members
}

/// A client's error in words that name neither the URL nor its password.
fn failed(e: redis::RedisError) -> StoreError {
    let detail = match e.detail() {
        Some(detail) if !e.is_io_error() => format!("{}: {detail}", e.category()),
        _ => e.category().to_owned(),
    };
    StoreError::Failed(detail)
}

impl Store for RedisStore {
    fn rate(&self, key: &str, rate: Gcra) -> Answer<Option<Duration>> {
        let (emission, period) = (rate.emission_us(), rate.period_us());
        self.script::<u64>(Lua::Rate, key, move |s| {
            s.arg(emission).arg(period);
        })
        .map(|wait| wait.map(|us| (us > 0).then(|| Duration::from_micros(us))))
        .boxed()
    }

    fn enter(&self, key: &str, max: NonZeroU32, fade: Duration) -> Answer<bool> {
        let fade = millis(fade).max(1);
        self.script::<u64>(Lua::Enter, key, move |s| {
            s.arg(max.get()).arg(fade);
        })
        .map(|entered| entered.map(|n| n == 1))
        .boxed()
    }

    fn leave(&self, key: &str) -> Answer<()> {
        self.script::<i64>(Lua::Leave, key, |_| {})
            .map(|left| left.map(|_| ()))
            .boxed()
    }

    fn spend_once(&self, key: &str, ttl: Duration) -> Answer<bool> {
        self.set(key, b"1".to_vec(), ttl, true)
    }

    fn keep(&self, key: &str, value: Vec<u8>, ttl: Duration) -> Answer<()> {
        self.set(key, value, ttl, false)
            .map(|set| set.map(|_| ()))
            .boxed()
    }

    fn read(&self, key: &str) -> Answer<Option<Vec<u8>>> {
        let mut get = redis::cmd("GET");
        get.arg(key);
        self.query(get)
    }

    fn ping(&self) -> Answer<()> {
        self.query::<String>(redis::cmd("PING"))
            .map(|pong| pong.map(|_| ()))
            .boxed()
    }

    fn kind(&self) -> &'static str {
        "redis"
    }

    fn subscriptions(&self) -> Option<&dyn SharedSubscriptions> {
        Some(self)
    }

    fn levels(&self) -> Option<&dyn SharedLevels> {
        Some(self)
    }
    fn task_lists(&self) -> Option<&dyn TaskLists> {
        Some(self)
    }
}

impl TaskLists for RedisStore {
    fn add(&self, key: &str, entry: &str) -> Answer<()> {
        let entry = entry.to_owned();
        let kept = millis(task_lists::KEPT);
        self.script::<i64>(Lua::AddTask, key, move |s| {
            s.arg(entry).arg(MAX_TASKS).arg(kept);
        })
        .map(|added| added.map(|_| ()))
        .boxed()
    }

    fn members(&self, key: &str) -> Answer<Vec<String>> {
        let mut range = redis::cmd("ZRANGE");
        range.arg(key).arg(0).arg(-1);
        self.query::<Vec<String>>(range)
            .map(|members| members.map(|m| bounded(m, MAX_TASKS)))
            .boxed()
    }

    fn remove(&self, key: &str, entries: Vec<String>) -> Answer<()> {
        if entries.is_empty() {
            return futures_util::future::ready(Ok(())).boxed();
        }
        let mut remove = redis::cmd("ZREM");
        remove.arg(key).arg(entries);
        self.query::<i64>(remove).map(|n| n.map(|_| ())).boxed()
    }
}

impl SharedSubscriptions for RedisStore {
    fn change(&self, key: &str, uri: &str, subscribed: bool) -> Answer<bool> {
        let uri = uri.to_owned();
        let kept = millis(subscriptions::KEPT);
        self.script::<i64>(Lua::Change, key, move |s| {
            s.arg(if subscribed { "+" } else { "-" })
                .arg(uri)
                .arg(MAX_URIS)
                .arg(kept);
        })
        .map(|done| done.map(|done| done == 1))
        .boxed()
    }

    fn members(&self, key: &str) -> Answer<Vec<String>> {
        let mut members = redis::cmd("SMEMBERS");
        members.arg(key);
        self.query::<Vec<String>>(members)
            .map(|members| members.map(|m| bounded(m, MAX_URIS)))
            .boxed()
    }

    fn watch(&self, key: &str) -> Watch {
        self.watch_channel(key)
    }
}

impl SharedLevels for RedisStore {
    fn set(&self, key: &str, level: &str) -> Answer<()> {
        let level = level.to_owned();
        let kept = millis(levels::KEPT);
        self.script::<i64>(Lua::Level, key, move |s| {
            s.arg(level).arg(kept);
        })
        .map(|set| set.map(|_| ()))
        .boxed()
    }

    fn level(&self, key: &str) -> Answer<Option<String>> {
        // Bounded: at most one byte more than a level's name is read, and a value
        // longer than a name is none of ours (none at all reads as empty).
        let mut range = redis::cmd("GETRANGE");
        range.arg(key).arg(0).arg(levels::MAX_LEN);
        self.query::<Vec<u8>>(range)
            .map(|value| {
                value.map(|value| {
                    let ours = !value.is_empty() && value.len() <= levels::MAX_LEN;
                    ours.then(|| String::from_utf8(value).ok()).flatten()
                })
            })
            .boxed()
    }

    fn watch(&self, key: &str) -> Watch {
        self.watch_channel(key)
    }
}

impl RedisStore {
    /// A watch of `key`'s channel; the replica's one pub/sub connection started first.
    fn watch_channel(&self, key: &str) -> Watch {
        let inner = &self.inner;
        inner.following.call_once(|| {
            let follow = follow(
                inner.client.clone(),
                Arc::downgrade(&inner.watchers),
                inner.timeout,
            );
            tokio::spawn(follow);
        });
        inner.watchers.watch(key)
    }
}

/// Tells the watchers of each set or level the word on its channel says changed, on a
/// pub/sub connection of its own (`PSUBSCRIBE capable:subs:* capable:level:*`),
/// reconnected a [`REST`] after it fails; once (re)connected every watcher is told,
/// for the words it may have missed. Ends with the store.
async fn follow(client: redis::Client, watchers: std::sync::Weak<Watchers>, timeout: Duration) {
    use futures_util::StreamExt;
    let patterns = [subscriptions::KIND, levels::KIND].map(|kind| format!("capable:{kind}:*"));
    loop {
        let connect = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.psubscribe(&patterns[..]).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        // Connecting is bounded as every call is (at least a second: it is no request's).
        let bound = timeout.max(REST);
        if let Ok(Ok(pubsub)) = tokio::time::timeout(bound, connect).await {
            match watchers.upgrade() {
                Some(watchers) => watchers.all_changed(),
                None => return,
            }
            let mut words = pubsub.into_on_message();
            while let Some(word) = words.next().await {
                match watchers.upgrade() {
                    Some(watchers) => watchers.changed(word.get_channel_name()),
                    None => return,
                }
            }
        }
        if watchers.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(REST).await;
    }
}
