//! A sealed legacy session's log level shared by the replicas through the gateway's
//! store ([`crate::store::levels`]), where the server behind cannot keep it for the
//! host: a 2026-07-28 server (the level goes in the `_meta` of each request the
//! replica sends), the servers of a `--config` (each replica's own sessions) or a
//! stdio server (each replica runs its own). One legacy HTTP server behind (`--url`)
//! needs none of this: every replica re-attaches to its one session, whose record is
//! the host's ([`Host::keeps_state_upstream`](crate::host::Host::keeps_state_upstream)).
//!
//! | when | this session's task |
//! |---|---|
//! | the host's `logging/setLevel`, on any replica | sent on as it came (to each server, or into the `_meta` of later requests); answered with a result, the level's name is kept in the store before the host has its answer, and every replica holding the session is told |
//! | the session is taken up here (restored from its seal, or begun here) | the level watched, then read once the host's `initialize` is replayed: a level kept is applied here |
//! | told the level changed (another replica took a `setLevel`) | read anew; a level other than the one applied here is applied |
//! | applying a level | a `logging/setLevel` of the bridge's own, answered to nobody: what a host's does on this replica (the servers told, the `_meta` level, the bridge's filtering of log lines) |
//! | the store cannot be reached | `whenDown: open` (default): the level stays this replica's, as without a store, and `store_down` in the audit says so; `closed`: the host's `setLevel` is answered with an error (`-32603`, saying why). A read that failed is made again once the store's pub/sub connection is back |
//!
//! Only the level's name is kept (a level is one of eight), for
//! [`KEPT`](crate::store::levels::KEPT) after it was last set, under a key hashed from
//! the session id. Nothing is read per request: a replica reads the level when it takes
//! the session up and when told it changed.

use std::collections::HashMap;
use std::sync::Arc;

use capable::config::WhenDown;
use capable::internal::jsonrpc::{Incoming, Payload, RequestId, RpcError};
use capable::internal::method::Method;
use capable::internal::server::LogLevel;
use serde_json::{json, Value};

use crate::audit::Audit;
use crate::store::levels::KIND;
use crate::store::subscriptions::Watch;
use crate::store::{Store, StoreError};

/// One session's part in the shared log level (see the module documentation).
pub struct Level {
    store: Arc<dyn Store>,
    when_down: WhenDown,
    audit: Arc<Audit>,
    /// The session's key in the store, once its id is sealed.
    key: Option<String>,
    /// The level watched for, once the id is sealed.
    watch: Option<Watch>,
    /// The level to be read (taken up, told of a change) once the host is ready.
    unread: bool,
    /// The session was begun here: nothing can be kept for it yet, and the first read
    /// is spared.
    begun_here: bool,
    /// The level applied on this replica last (the host's, or read from the store).
    applied: Option<LogLevel>,
    /// The host's `setLevel`s in flight here, by the stream of their answer.
    pending: HashMap<u64, LogLevel>,
    /// The ids of the bridge's own requests.
    next: u64,
    /// The bridge's own `setLevel` to send.
    queued: Option<Incoming>,
}

impl Level {
    /// A session's part, when the gateway's store shares log levels.
    pub fn new(
        store: Option<&Arc<dyn Store>>,
        when_down: WhenDown,
        audit: Arc<Audit>,
    ) -> Option<Level> {
        let store = store?;
        store.levels()?;
        Some(Level {
            store: store.clone(),
            when_down,
            audit,
            key: None,
            watch: None,
            unread: false,
            begun_here: false,
            applied: None,
            pending: HashMap::new(),
            next: 0,
            queued: None,
        })
    }

    /// The session is known by sealed id `id` from now on: its level is watched once
    /// the host is ready ([`Level::refresh`]), and read then when the session was
    /// `restored` here (one begun here has nothing kept yet: its id is not out).
    pub fn sealed(&mut self, id: &str, restored: bool) {
        self.key = Some(crate::store::key(KIND, &[id]));
        self.unread = true;
        self.begun_here = !restored;
    }

    /// The session's key, when the host's level is kept in the store: it is sealed, and
    /// the server behind does not keep it itself (`upstream_keeps`).
    fn active(&self, upstream_keeps: bool) -> Option<&str> {
        self.key.as_deref().filter(|_| !upstream_keeps)
    }

    /// The level `message` asks for, when it is a host's `logging/setLevel` whose level
    /// is to be kept once answered ([`Level::wait`]); `upstream_keeps` as for
    /// [`Level::active`].
    pub fn before(&self, upstream_keeps: bool, message: &Incoming) -> Option<LogLevel> {
        let Incoming::Request { method, params, .. } = message else {
            return None;
        };
        if method != Method::SetLoggingLevel.as_str() {
            return None;
        }
        self.active(upstream_keeps)?;
        // A level that is none is refused by the engine, and nothing kept.
        let params: Value = params.decode().ok()?;
        params.get("level")?.as_str()?.parse().ok()
    }

    /// A host's `setLevel` that went on in `stream`, asking for `level`.
    pub fn wait(&mut self, stream: u64, level: Option<LogLevel>) {
        if let Some(level) = level {
            self.pending.insert(stream, level);
        }
    }

    /// The answer `data` ends `stream`: a host's `setLevel` taken is kept in the store
    /// before the host has its answer (turned into an error when the store is down and
    /// `whenDown` is `closed`).
    pub async fn answered(&mut self, stream: u64, data: &mut bytes::Bytes) {
        let Some(level) = self.pending.remove(&stream) else {
            return;
        };
        let answer: Value = serde_json::from_slice(data).unwrap_or_default();
        if answer.get("result").is_none() {
            return;
        }
        self.applied = Some(level);
        let (Some(key), Some(levels)) = (self.key.clone(), self.store.levels()) else {
            return;
        };
        if let Err(e) = levels.set(&key, level.as_str()).await {
            if let Some(error) = self.down(&e, true) {
                let id = answer.get("id").cloned().unwrap_or(Value::Null);
                let refused = json!({"jsonrpc": "2.0", "id": id, "error": error});
                *data = refused.to_string().into();
            }
        }
    }

    /// Resolves when the level may have changed while it is watched; never otherwise.
    pub async fn changed(&self) {
        match &self.watch {
            Some(watch) => watch.changed().await,
            None => std::future::pending().await,
        }
    }

    /// Told the level may have changed: it is read anew when the host is ready.
    pub fn told(&mut self) {
        self.unread = self.watch.is_some();
    }

    /// The level read, if it is to be and the host is `ready` (its `initialize`
    /// answered here): a level other than the one applied here is applied
    /// ([`Level::take_replay`]). The first time, the level is watched from then on —
    /// unless the server behind keeps it (`upstream_keeps`, as for [`Level::active`]),
    /// when nothing of it is kept here ever.
    pub async fn refresh(&mut self, ready: bool, upstream_keeps: bool) {
        if !self.unread || !ready {
            return;
        }
        self.unread = false;
        let (Some(key), Some(levels)) = (self.key.clone(), self.store.levels()) else {
            return;
        };
        if upstream_keeps {
            self.key = None;
            return;
        }
        if self.watch.is_none() {
            // Watched before it is read: no change is missed in between.
            self.watch = Some(levels.watch(&key));
        }
        if std::mem::take(&mut self.begun_here) {
            return;
        }
        let kept = match levels.level(&key).await {
            Ok(kept) => kept,
            Err(e) => {
                self.down(&e, false);
                return;
            }
        };
        let Some(level) = kept.and_then(|name| name.parse::<LogLevel>().ok()) else {
            return;
        };
        if self.applied == Some(level) {
            return;
        }
        self.applied = Some(level);
        self.audit.record(
            "level",
            json!({"side": "bridge", "from": "store", "level": level.as_str()}),
        );
        self.next += 1;
        self.queued = Some(Incoming::Request {
            id: RequestId::String(format!("capable/level/{}", self.next)),
            method: Method::SetLoggingLevel.as_str().into(),
            params: Payload::from_json(json!({ "level": level.as_str() }).to_string()),
        });
    }

    /// The `logging/setLevel` of the bridge's own to send now, if any: answered to
    /// nobody.
    pub fn take_replay(&mut self) -> Option<Incoming> {
        self.queued.take()
    }

    /// The store could not be reached (`e`) to keep (`keeping`) or read the level:
    /// said, and the error the host gets when `whenDown` is `closed` (`None`: served as
    /// without a store).
    fn down(&self, e: &StoreError, keeping: bool) -> Option<RpcError> {
        let closed = keeping && self.when_down == WhenDown::Closed;
        let then = match (keeping, closed) {
            (true, true) => "the host's setLevel is answered with an error",
            (true, false) => "the host's log level holds on the replica that took it only",
            (false, _) => {
                "the host's log level is not known on this replica: read again once the \
                 store is back"
            }
        };
        self.audit.record(
            "store_down",
            json!({"side": "bridge", "use": "log level", "error": e.to_string(),
                   "notice": then}),
        );
        closed.then(|| RpcError {
            code: -32603,
            message: format!(
                "the store that keeps this session's log level for every replica cannot be \
                 reached ({e}): the level is set on this replica only; try again"
            ),
            data: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use super::*;
    use crate::store::levels::memory::MemoryLevels;
    use crate::store::{Answer, Gcra, SharedLevels};

    /// A store shared by "replicas" in one process: only its levels are used here.
    #[derive(Default)]
    struct Levels(MemoryLevels);

    impl Store for Levels {
        fn rate(&self, _: &str, _: Gcra) -> Answer<Option<Duration>> {
            Box::pin(async { Err(StoreError::Down) })
        }
        fn enter(&self, _: &str, _: NonZeroU32, _: Duration) -> Answer<bool> {
            Box::pin(async { Err(StoreError::Down) })
        }
        fn leave(&self, _: &str) -> Answer<()> {
            Box::pin(async { Err(StoreError::Down) })
        }
        fn spend_once(&self, _: &str, _: Duration) -> Answer<bool> {
            Box::pin(async { Err(StoreError::Down) })
        }
        fn ping(&self) -> Answer<()> {
            Box::pin(async { Ok(()) })
        }
        fn kind(&self) -> &'static str {
            "test"
        }
        fn levels(&self) -> Option<&dyn SharedLevels> {
            Some(&self.0)
        }
    }

    fn audit(name: &str) -> (Arc<Audit>, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!(
            "capable-level-{name}-{}-{}.log",
            std::process::id(),
            crate::random_hex::<4>()
        ));
        let audit = Audit::open(Some(&path), Default::default(), None, Default::default());
        (Arc::new(audit.unwrap()), path)
    }

    fn set_level(id: &str, level: &str) -> Incoming {
        Incoming::Request {
            id: RequestId::String(id.into()),
            method: Method::SetLoggingLevel.as_str().into(),
            params: Payload::from_json(json!({ "level": level }).to_string()),
        }
    }

    /// What a replica sends for the host once told: the level of its own `setLevel`.
    fn replayed(level: &mut Level) -> Option<String> {
        let Incoming::Request { method, params, .. } = level.take_replay()? else {
            return None;
        };
        assert_eq!(method, Method::SetLoggingLevel.as_str());
        let params: Value = params.decode().unwrap();
        Some(params["level"].as_str()?.to_owned())
    }

    #[tokio::test]
    async fn a_level_set_on_one_replica_is_kept_by_name_and_applied_once_by_another() {
        let store: Arc<dyn Store> = Arc::new(Levels::default());
        let (log, path) = audit("applied");
        let mut a = Level::new(Some(&store), WhenDown::Open, log.clone()).unwrap();
        let mut b = Level::new(Some(&store), WhenDown::Open, log).unwrap();
        a.sealed("sealed-id", true);
        b.sealed("sealed-id", true);
        // Taken up with nothing kept: nothing applied.
        a.refresh(true, false).await;
        b.refresh(true, false).await;
        assert_eq!(replayed(&mut a), None);
        assert_eq!(replayed(&mut b), None);

        // The host's setLevel on A, answered: kept before the host has its answer.
        let asks = a.before(false, &set_level("1", "error"));
        assert_eq!(asks, Some(LogLevel::Error));
        a.wait(7, asks);
        let mut answer = bytes::Bytes::from(r#"{"jsonrpc":"2.0","id":"1","result":{}}"#);
        a.answered(7, &mut answer).await;
        assert!(answer.ends_with(b"\"result\":{}}"), "unchanged");
        let key = crate::store::key(KIND, &["sealed-id"]);
        assert!(!key.contains("sealed-id"));
        let kept = store.levels().unwrap().level(&key).await.unwrap();
        assert_eq!(kept.as_deref(), Some("error"));

        // B is told, reads it, and applies it once; A, told of its own, sends nothing.
        b.changed().await;
        b.told();
        b.refresh(true, false).await;
        assert_eq!(replayed(&mut b).as_deref(), Some("error"));
        b.told();
        b.refresh(true, false).await;
        assert_eq!(replayed(&mut b), None, "the same level again: nothing");
        a.changed().await;
        a.told();
        a.refresh(true, false).await;
        assert_eq!(replayed(&mut a), None, "A applied it itself");
        let said = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert!(said.contains(r#""from":"store""#), "{said}");
    }

    #[tokio::test]
    async fn nothing_is_kept_before_the_host_is_ready_for_a_refused_level_or_a_server_that_keeps_it(
    ) {
        let store: Arc<dyn Store> = Arc::new(Levels::default());
        let (log, path) = audit("kept");
        let mut a = Level::new(Some(&store), WhenDown::Open, log.clone()).unwrap();
        a.sealed("s", true);
        let key = crate::store::key(KIND, &["s"]);
        store.levels().unwrap().set(&key, "debug").await.unwrap();
        // Restored, the host's `initialize` not answered yet: not read.
        a.refresh(false, false).await;
        assert_eq!(replayed(&mut a), None);
        a.refresh(true, false).await;
        assert_eq!(replayed(&mut a).as_deref(), Some("debug"));
        // A session begun here is not read as it is taken up (nothing can be kept for
        // it yet; "debug" is there only because this test put it there), but when told.
        let mut begun = Level::new(Some(&store), WhenDown::Open, log.clone()).unwrap();
        begun.sealed("s", false);
        begun.refresh(true, false).await;
        assert_eq!(replayed(&mut begun), None);
        begun.told();
        begun.refresh(true, false).await;
        assert_eq!(replayed(&mut begun).as_deref(), Some("debug"));
        // One legacy HTTP server keeps the host's level itself: nothing here, ever.
        assert_eq!(a.before(true, &set_level("1", "error")), None);
        let mut kept_upstream = Level::new(Some(&store), WhenDown::Open, log.clone()).unwrap();
        kept_upstream.sealed("s", true);
        kept_upstream.refresh(true, true).await;
        assert!(kept_upstream.watch.is_none());
        assert_eq!(replayed(&mut kept_upstream), None);
        assert_eq!(kept_upstream.before(false, &set_level("1", "error")), None);
        // A refused setLevel is not kept; nor a level that is none.
        a.wait(1, a.before(false, &set_level("1", "error")));
        let mut refused = bytes::Bytes::from(
            r#"{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"no"}}"#,
        );
        a.answered(1, &mut refused).await;
        assert_eq!(a.before(false, &set_level("2", "loud")), None);
        let kept = store.levels().unwrap().level(&key).await.unwrap();
        assert_eq!(kept.as_deref(), Some("debug"));
        // A session not sealed (one replica's own) keeps nothing.
        let b = Level::new(Some(&store), WhenDown::Open, log).unwrap();
        assert_eq!(b.before(false, &set_level("1", "error")), None);
        let _ = std::fs::remove_file(&path);
    }

    #[tokio::test]
    async fn the_store_down_is_said_and_closed_refuses_the_hosts_set_level() {
        let levels = Levels::default();
        levels.0.down.store(true, Ordering::Relaxed);
        let store: Arc<dyn Store> = Arc::new(levels);
        let (log, path) = audit("down");
        let mut open = Level::new(Some(&store), WhenDown::Open, log.clone()).unwrap();
        let mut closed = Level::new(Some(&store), WhenDown::Closed, log).unwrap();
        for level in [&mut open, &mut closed] {
            level.sealed("s", true);
            level.wait(3, level.before(false, &set_level("9", "warning")));
        }
        let ok = r#"{"jsonrpc":"2.0","id":"9","result":{}}"#;
        let mut answer = bytes::Bytes::from(ok);
        open.answered(3, &mut answer).await;
        assert_eq!(answer, ok, "open: the host has its answer");
        let mut answer = bytes::Bytes::from(ok);
        closed.answered(3, &mut answer).await;
        let refused: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(refused["id"], "9");
        assert_eq!(refused["error"]["code"], -32603);
        // A read that fails is said, and nothing is applied.
        open.refresh(true, false).await;
        assert_eq!(replayed(&mut open), None);
        let said = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert_eq!(said.matches(r#""event":"store_down""#).count(), 3, "{said}");
        assert!(said.contains(r#""use":"log level""#), "{said}");
    }
}
