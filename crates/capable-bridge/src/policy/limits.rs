//! How much one caller may ask (a config's `rateLimit`): requests per interval, and
//! tool calls at once — kept per caller, for every server together (the `gateway`
//! section) or for one server (its entry). Nobody logged in is one caller (a stdio
//! host, a listener without an issuer).
//!
//! The request rate is governor's GCRA (a burst of `requests`, one more each
//! `per / requests`), one keyed limiter per scope. Both key spaces are bounded: the
//! limiter keeps at most [`MAX_CALLERS`] callers (past it, those whose state is as if
//! new are let go; if every one is still limited, the limiter starts afresh, which
//! lets them all through sooner, never later), and the count of calls in flight keeps
//! only callers that have one.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use capable::config::RateLimit;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};

/// The most callers one limiter keeps.
pub const MAX_CALLERS: usize = 10_000;

type Keyed<C> =
    RateLimiter<String, HashMapStateStore<String>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// One scope's limits (the gateway's, or a server's), per caller.
pub struct Limit<C: Clock = DefaultClock> {
    rate: Option<Rate<C>>,
    calls: Option<Calls>,
    /// What the limits are and where the config sets them, for the words of a refusal.
    scope: String,
}

struct Rate<C: Clock> {
    limiter: RwLock<Keyed<C>>,
    quota: Quota,
    clock: C,
    requests: NonZeroU32,
    per: Duration,
    max_callers: usize,
}

struct Calls {
    max: NonZeroU32,
    in_flight: Mutex<HashMap<String, u32>>,
}

impl Limit {
    /// The limits `limit` says, on the standard clock; `scope` says where they hold
    /// (`server "docs"`, `every server`).
    pub fn new(limit: &RateLimit, scope: String) -> Limit {
        Limit::with_clock(limit, scope, DefaultClock::default(), MAX_CALLERS)
    }
}

impl<C: Clock + Clone> Limit<C> {
    /// The same on `clock`, keeping at most `max_callers`.
    pub fn with_clock(limit: &RateLimit, scope: String, clock: C, max_callers: usize) -> Limit<C> {
        let rate = limit.requests.and_then(|(requests, per)| {
            let quota = Quota::with_period(per / requests.get())?.allow_burst(requests);
            Some(Rate {
                limiter: RwLock::new(RateLimiter::hashmap_with_clock(quota, clock.clone())),
                quota,
                clock,
                requests,
                per,
                max_callers: max_callers.max(1),
            })
        });
        let calls = limit.concurrent.map(|max| Calls {
            max,
            in_flight: Mutex::new(HashMap::new()),
        });
        Limit { rate, calls, scope }
    }

    /// Whether the caller `key` may make one more request now; if not, how long until
    /// it may, and why.
    pub fn request(&self, key: &str) -> Result<(), (Duration, String)> {
        let Some(rate) = &self.rate else {
            return Ok(());
        };
        let key = key.to_owned();
        let checked = {
            let limiter = rate.limiter.read().unwrap_or_else(|e| e.into_inner());
            let checked = limiter.check_key(&key);
            (checked, limiter.len())
        };
        if checked.1 > rate.max_callers {
            rate.bound();
        }
        checked.0.map_err(|not_until| {
            let wait = not_until.wait_time_from(rate.clock.now());
            (wait, self.rate_why(wait))
        })
    }

    /// The request rate's words, `wait` to go.
    pub fn rate_why(&self, wait: Duration) -> String {
        let (requests, per) = self
            .rate
            .as_ref()
            .map_or((0, Duration::ZERO), |r| (r.requests.get(), r.per));
        format!(
            "rate limit: at most {requests} requests per {} for each caller ({}); retry in {}",
            capable::internal::time::humanize(per),
            self.scope,
            capable::internal::time::humanize(wait),
        )
    }

    /// The calls-at-once limit's words.
    pub fn calls_why(&self) -> String {
        let max = self.calls.as_ref().map_or(0, |c| c.max.get());
        format!(
            "rate limit: at most {max} tool calls at once for each caller ({}); retry when one ends",
            self.scope
        )
    }

    /// The request rate, if it is limited.
    pub fn rate_rule(&self) -> Option<crate::store::Gcra> {
        let rate = self.rate.as_ref()?;
        Some(crate::store::Gcra {
            requests: rate.requests,
            per: rate.per,
        })
    }

    /// The most calls at once, if they are limited.
    pub fn calls_max(&self) -> Option<NonZeroU32> {
        self.calls.as_ref().map(|c| c.max)
    }

    /// Where the config sets these limits.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// Whether the caller `key` may start one more tool call now (it is counted in
    /// until [`call_ended`](Self::call_ended)); if not, why.
    pub fn call(&self, key: &str) -> Result<(), String> {
        let Some(calls) = &self.calls else {
            return Ok(());
        };
        let mut in_flight = calls.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        match in_flight.get_mut(key) {
            Some(n) if *n >= calls.max.get() => Err(self.calls_why()),
            Some(n) => {
                *n += 1;
                Ok(())
            }
            None => {
                in_flight.insert(key.to_owned(), 1);
                Ok(())
            }
        }
    }

    /// A call [`call`](Self::call) let in has ended.
    pub fn call_ended(&self, key: &str) {
        let Some(calls) = &self.calls else {
            return;
        };
        let mut in_flight = calls.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = in_flight.get_mut(key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                in_flight.remove(key);
            }
        }
    }

    /// Whether calls at once are limited.
    pub fn limits_calls(&self) -> bool {
        self.calls.is_some()
    }

    /// How many callers the scope keeps (limited, or with a call in flight).
    #[cfg(test)]
    fn kept(&self) -> (usize, usize) {
        let rate = self.rate.as_ref().map_or(0, |r| {
            r.limiter.read().unwrap_or_else(|e| e.into_inner()).len()
        });
        let calls = self.calls.as_ref().map_or(0, |c| {
            c.in_flight.lock().unwrap_or_else(|e| e.into_inner()).len()
        });
        (rate, calls)
    }
}

impl<C: Clock + Clone> Rate<C> {
    /// Keeps the limiter within its callers: those as if new are let go; if that is
    /// not enough, it starts afresh.
    fn bound(&self) {
        let mut limiter = self.limiter.write().unwrap_or_else(|e| e.into_inner());
        if limiter.len() <= self.max_callers {
            return;
        }
        limiter.retain_recent();
        limiter.shrink_to_fit();
        if limiter.len() > self.max_callers {
            *limiter = RateLimiter::hashmap_with_clock(self.quota, self.clock.clone());
        }
    }
}

impl<C: Clock> std::fmt::Debug for Limit<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limit")
            .field("scope", &self.scope)
            .field("requests", &self.rate.as_ref().map(|r| (r.requests, r.per)))
            .field("calls", &self.calls.as_ref().map(|c| c.max))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    fn limit(
        requests: u32,
        per: Duration,
        calls: Option<u32>,
    ) -> (Limit<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        let limit = RateLimit {
            requests: Some((NonZeroU32::new(requests).unwrap(), per)),
            concurrent: calls.and_then(NonZeroU32::new),
        };
        let made = Limit::with_clock(&limit, "server \"docs\"".into(), clock.clone(), 3);
        (made, clock)
    }

    #[test]
    fn a_caller_gets_its_burst_then_waits_and_others_are_untouched() {
        let (limit, clock) = limit(2, Duration::from_secs(10), None);
        assert!(limit.request("alice").is_ok());
        assert!(limit.request("alice").is_ok());
        let (wait, why) = limit.request("alice").unwrap_err();
        assert_eq!(wait, Duration::from_secs(5), "one more each 10s / 2");
        assert!(why.contains("at most 2 requests per 10s"), "{why}");
        assert!(why.contains("server \"docs\""), "{why}");
        // Bob has his own.
        assert!(limit.request("bob").is_ok());
        clock.advance(Duration::from_secs(5));
        assert!(limit.request("alice").is_ok());
        assert!(limit.request("alice").is_err());
    }

    #[test]
    fn calls_at_once_are_counted_per_caller_and_forgotten_when_none_is_left() {
        let (limit, _) = limit(1000, Duration::from_secs(1), Some(2));
        assert!(limit.call("alice").is_ok() && limit.call("alice").is_ok());
        let why = limit.call("alice").unwrap_err();
        assert!(why.contains("at most 2 tool calls at once"), "{why}");
        assert!(limit.call("bob").is_ok());
        limit.call_ended("alice");
        assert!(limit.call("alice").is_ok());
        for who in ["alice", "alice", "bob", "bob", "nobody"] {
            limit.call_ended(who);
        }
        assert_eq!(limit.kept().1, 0, "no caller kept without a call in flight");
    }

    #[test]
    fn the_callers_kept_are_bounded_whatever_many_come() {
        let (limit, clock) = limit(1, Duration::from_secs(60), None);
        // Every caller limited at once: the limiter starts afresh past 3.
        for n in 0..100 {
            assert!(limit.request(&format!("caller-{n}")).is_ok());
            assert!(limit.kept().0 <= 3 + 1);
        }
        // Callers whose state is as if new are let go first.
        clock.advance(Duration::from_secs(120));
        for n in 0..4 {
            let _ = limit.request(&format!("again-{n}"));
        }
        assert!(limit.kept().0 <= 4);
    }
}
