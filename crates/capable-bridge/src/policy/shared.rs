//! The config's limits counted in a store the replicas share (`gateway.store`): each
//! caller's request rate and tool calls at once, per scope (the gateway's, a
//! server's), seen by every replica at once — so a caller whose requests a load
//! balancer spreads over many replicas gets its limit once, not once per replica.
//!
//! While the store cannot be reached (its timeout passed, or it failed a moment ago)
//! the config's `whenDown` holds: `open` (the default) counts on this replica alone,
//! as without a store — a limit is a guard against one caller's excess, and losing
//! Redis should not become an outage of every caller; `closed` refuses what a limit
//! applies to (`429`, `Retry-After: 1`). Either way the audit says so
//! (`store_down`, counted in the metrics' events).

use std::sync::Arc;
use std::time::Duration;

use capable::config::WhenDown;

use super::limits::Limit;
use super::Verdict;
use crate::store::{self, Store, StoreError};

/// How long a caller's count of calls at once outlives the last call it entered: a
/// replica that dies mid-call never counts its calls out, and they fade then.
pub const CALLS_FADE: Duration = Duration::from_secs(300);

/// What the shared part of a request's judgment says
/// ([`Policy::on_request_shared`](super::Policy::on_request_shared)).
#[non_exhaustive]
pub struct Shared {
    /// Whether the request goes on.
    pub verdict: Verdict,
    /// Kept while the request runs, dropped as it ends (a call counted in, counted
    /// out on drop).
    pub held: Option<Box<dyn Send + Sync>>,
    /// Why the store was not asked, or did not answer, and what was done instead:
    /// audited (`store_down`).
    pub fallback: Option<String>,
}

impl Shared {
    /// `verdict`, nothing held, the store answered.
    pub fn new(verdict: Verdict) -> Shared {
        Shared {
            verdict,
            held: None,
            fallback: None,
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("verdict", &self.verdict)
            .field("held", &self.held.is_some())
            .field("fallback", &self.fallback)
            .finish()
    }
}

/// The store the limits are counted in, and what holds while it is down.
#[derive(Clone)]
pub(super) struct SharedLimits {
    pub store: Arc<dyn Store>,
    pub when_down: WhenDown,
}

impl std::fmt::Debug for SharedLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLimits")
            .field("store", &self.store.kind())
            .field("when_down", &self.when_down)
            .finish()
    }
}

/// A call counted in, in the store or (the store down, `open`) on this replica.
enum Entered {
    Store(String),
    Local(Arc<Limit>),
}

/// The calls a request was counted in for; counted out when it is dropped.
struct Held {
    store: Arc<dyn Store>,
    caller: String,
    entered: Vec<Entered>,
}

impl Drop for Held {
    fn drop(&mut self) {
        for entered in self.entered.drain(..) {
            match entered {
                Entered::Local(limit) => limit.call_ended(&self.caller),
                Entered::Store(key) => {
                    // Bounded by the store's timeout; if it fails, the count fades.
                    let leave = self.store.leave(&key);
                    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                        runtime.spawn(leave);
                    }
                }
            }
        }
    }
}

impl SharedLimits {
    /// `caller`'s request under `limits` (the gateway's, the server's; `call`: a tool
    /// call, counted in while it runs), counted in the store.
    pub async fn admit(&self, limits: Vec<Arc<Limit>>, caller: String, call: bool) -> Shared {
        let mut fallback = None;
        for limit in &limits {
            let Some(rate) = limit.rate_rule() else {
                continue;
            };
            let key = store::key("rate", &[limit.scope(), &caller]);
            match self.store.rate(&key, rate).await {
                Ok(None) => {}
                Ok(Some(wait)) => {
                    let why = limit.rate_why(wait);
                    let verdict = Verdict::Limited {
                        retry_after: wait,
                        why,
                    };
                    return Shared {
                        fallback,
                        ..Shared::new(verdict)
                    };
                }
                Err(e) => {
                    let (local, why) = self.down(&e, limit, || limit.request(&caller));
                    fallback = Some(why);
                    if let Err((retry_after, why)) = local {
                        let verdict = Verdict::Limited { retry_after, why };
                        return Shared {
                            fallback,
                            ..Shared::new(verdict)
                        };
                    }
                }
            }
        }
        if !call {
            return Shared {
                fallback,
                ..Shared::new(Verdict::Allow)
            };
        }
        let mut held = Held {
            store: self.store.clone(),
            caller: caller.clone(),
            entered: Vec::new(),
        };
        for limit in &limits {
            let Some(max) = limit.calls_max() else {
                continue;
            };
            let key = store::key("calls", &[limit.scope(), &caller]);
            let refused = match self.store.enter(&key, max, CALLS_FADE).await {
                Ok(true) => {
                    held.entered.push(Entered::Store(key));
                    None
                }
                Ok(false) => Some(limit.calls_why()),
                Err(e) => {
                    let (local, why) = self.down(&e, limit, || {
                        limit
                            .call(&caller)
                            .map_err(|why| (Duration::from_secs(1), why))
                    });
                    fallback = Some(why);
                    match local {
                        Ok(()) => {
                            held.entered.push(Entered::Local(limit.clone()));
                            None
                        }
                        Err((_, why)) => Some(why),
                    }
                }
            };
            if let Some(why) = refused {
                // `held` dropped: the calls counted in so far are counted out.
                let verdict = Verdict::Limited {
                    retry_after: Duration::from_secs(1),
                    why,
                };
                return Shared {
                    fallback,
                    ..Shared::new(verdict)
                };
            }
        }
        Shared {
            verdict: Verdict::Allow,
            held: Some(Box::new(held)),
            fallback,
        }
    }

    /// The store failed with `e` for `limit`: `open`, what `local` (this replica's
    /// count) says; `closed`, refused. With the words for the audit.
    fn down(
        &self,
        e: &StoreError,
        limit: &Limit,
        local: impl FnOnce() -> Result<(), (Duration, String)>,
    ) -> (Result<(), (Duration, String)>, String) {
        match self.when_down {
            WhenDown::Open => {
                let why = format!("{e}: {} counted on this replica alone", limit.scope());
                (local(), why)
            }
            _ => {
                let why = format!("{e}: {} refuses until it answers", limit.scope());
                let refusal = format!(
                    "rate limit: the store that counts {} cannot be reached; retry in 1s",
                    limit.scope()
                );
                (Err((Duration::from_secs(1), refusal)), why)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use capable::config::{GatewayPolicy, RateLimit, ServerPolicy};
    use capable::internal::Method;
    use futures_util::FutureExt;

    use super::*;
    use crate::policy::{ConfigPolicy, Policy};
    use crate::store::{Answer, Gcra, MemoryStore};

    /// A store that never answers in time.
    struct Away;

    impl Store for Away {
        fn rate(&self, _: &str, _: Gcra) -> Answer<Option<Duration>> {
            futures_util::future::ready(Err(StoreError::Down)).boxed()
        }
        fn enter(&self, _: &str, _: NonZeroU32, _: Duration) -> Answer<bool> {
            futures_util::future::ready(Err(StoreError::Down)).boxed()
        }
        fn leave(&self, _: &str) -> Answer<()> {
            futures_util::future::ready(Err(StoreError::Down)).boxed()
        }
        fn spend_once(&self, _: &str, _: Duration) -> Answer<bool> {
            futures_util::future::ready(Err(StoreError::Down)).boxed()
        }
        fn ping(&self) -> Answer<()> {
            futures_util::future::ready(Err(StoreError::Down)).boxed()
        }
        fn kind(&self) -> &'static str {
            "away"
        }
    }

    /// A replica's policy: `docs` with `docs_limit`, the gateway with 3 requests an
    /// hour, counted in `store`.
    fn replica(store: Arc<dyn Store>, when_down: WhenDown, calls: Option<u32>) -> ConfigPolicy {
        let docs = ServerPolicy {
            rate_limit: Some(RateLimit {
                requests: None,
                concurrent: calls.and_then(NonZeroU32::new),
            }),
            ..ServerPolicy::default()
        };
        let gateway = GatewayPolicy {
            rate_limit: Some(RateLimit {
                requests: Some((NonZeroU32::new(3).unwrap(), Duration::from_secs(3600))),
                concurrent: None,
            }),
            ..GatewayPolicy::default()
        };
        ConfigPolicy::new([("docs".to_owned(), docs)].into())
            .with_gateway(&gateway)
            .with_store(store, when_down)
    }

    async fn ask(p: &ConfigPolicy, method: Method) -> Shared {
        // The in-memory part lets it through: the store's part judges.
        let mut params = serde_json::Map::new();
        assert_eq!(
            p.on_request("docs", method, &mut params, None),
            Verdict::Allow
        );
        p.on_request_shared("docs", method, None).unwrap().await
    }

    #[tokio::test(start_paused = true)]
    async fn replicas_sharing_a_store_count_one_callers_requests_once() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let a = replica(store.clone(), WhenDown::Open, None);
        let b = replica(store, WhenDown::Open, None);
        for p in [&a, &b, &a] {
            assert_eq!(ask(p, Method::ReadResource).await.verdict, Verdict::Allow);
        }
        let over = ask(&b, Method::ReadResource).await;
        let Verdict::Limited { retry_after, why } = over.verdict else {
            panic!("{over:?}");
        };
        assert_eq!(retry_after, Duration::from_secs(1200));
        assert!(why.contains("gateway.rateLimit"), "{why}");
        assert!(over.fallback.is_none());
    }

    #[tokio::test]
    async fn calls_at_once_are_counted_out_as_what_is_held_is_dropped() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let a = replica(store.clone(), WhenDown::Open, Some(1));
        let b = replica(store, WhenDown::Open, Some(1));
        let first = ask(&a, Method::CallTool).await;
        assert_eq!(first.verdict, Verdict::Allow);
        let second = ask(&b, Method::CallTool).await;
        assert!(
            matches!(second.verdict, Verdict::Limited { .. }),
            "{second:?}"
        );
        drop(first.held);
        // Counted out off the request's way: its task runs first.
        tokio::task::yield_now().await;
        assert_eq!(ask(&b, Method::CallTool).await.verdict, Verdict::Allow);
    }

    #[tokio::test]
    async fn a_store_that_is_away_counts_on_this_replica_when_open_and_refuses_when_closed() {
        let open = replica(Arc::new(Away), WhenDown::Open, Some(1));
        for _ in 0..3 {
            let shared = ask(&open, Method::CallTool).await;
            assert_eq!(shared.verdict, Verdict::Allow);
            let why = shared.fallback.unwrap();
            assert!(why.contains("counted on this replica alone"), "{why}");
        }
        // This replica's own count: 3 requests an hour.
        let over = ask(&open, Method::ReadResource).await;
        assert!(matches!(over.verdict, Verdict::Limited { .. }), "{over:?}");

        let closed = replica(Arc::new(Away), WhenDown::Closed, None);
        let refused = ask(&closed, Method::ReadResource).await;
        let Verdict::Limited { retry_after, why } = refused.verdict else {
            panic!("{refused:?}");
        };
        assert_eq!(retry_after, Duration::from_secs(1));
        assert!(why.contains("cannot be reached"), "{why}");
        assert!(refused
            .fallback
            .unwrap()
            .contains("refuses until it answers"));
    }
}
