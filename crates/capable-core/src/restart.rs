//! When to restart a server that went away, as a decision with no I/O and no clock.
//!
//! A host keeps servers alive: a stdio server that crashed is started again, an HTTP
//! server whose session was lost is reconnected. Done naively this is the reconnect
//! storm users complain about (a server that dies at once, restarted in a tight loop),
//! or a session that stays dead for ever after one failure. [`Restarts`] decides for
//! one server:
//!
//! - **What is worth retrying.** A crash, a broken transport, a timeout, an HTTP 5xx,
//!   a lost session (404) or a 429 may pass; a refused protocol version, a contract
//!   violation, a refused `initialize`, a broken config entry or a 401/403 will not
//!   (the next attempt would end the same way). See [`Failure::is_retryable`].
//! - **How long to wait.** A doubling delay from [`RestartPolicy::initial_delay`],
//!   capped at [`RestartPolicy::max_delay`], each delay shortened by a random part of
//!   up to [`RestartPolicy::jitter`] of itself (from a seed the caller gives, so a test
//!   replays it exactly, and servers started together do not retry together).
//! - **When to stop.** After [`RestartPolicy::max_attempts`] restarts in a row the
//!   decision is [`Decision::GiveUp`]. Only a connection that stayed up for
//!   [`RestartPolicy::healthy_after`] starts the count anew: a server that comes up and
//!   crashes a moment later, again and again, is given up like one that never starts.
//!
//! The caller tells it what happened ([`Restarts::ready`], [`Restarts::failed`]) and
//! at what time; it answers with a [`Decision`].
//!
//! ```
//! use std::time::{Duration, Instant};
//! use capable_core::internal::restart::{Decision, Failure, RestartPolicy, Restarts};
//!
//! let policy = RestartPolicy { jitter: 0.0, max_attempts: 2, ..RestartPolicy::default() };
//! let mut restarts = Restarts::new(policy, 7);
//! let t0 = Instant::now();
//! // It crashed: wait the initial delay, then restart.
//! assert_eq!(restarts.failed(t0, Failure::Exited), Decision::RetryAfter(policy.initial_delay));
//! // It came up, and crashed again a second later: twice the delay.
//! restarts.ready(t0 + Duration::from_secs(1));
//! let again = restarts.failed(t0 + Duration::from_secs(2), Failure::Exited);
//! assert_eq!(again, Decision::RetryAfter(policy.initial_delay * 2));
//! // A third crash in a row: two restarts were tried, that is enough.
//! assert!(matches!(
//!     restarts.failed(t0 + Duration::from_secs(3), Failure::Exited),
//!     Decision::GiveUp { attempts: 2, .. }
//! ));
//! ```

use std::time::{Duration, Instant};

/// How a server is restarted: delays, jitter, bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RestartPolicy {
    /// The delay before the first restart. Default 500 ms.
    pub initial_delay: Duration,
    /// The longest delay (the doubling stops here). Default 30 s.
    pub max_delay: Duration,
    /// The most restarts in a row before giving up; 0 never restarts. Default 5.
    pub max_attempts: u32,
    /// How long a connection must stay up before its failures count anew. Default
    /// 60 s.
    pub healthy_after: Duration,
    /// The most each delay is shortened by, as a fraction of it (0 to 1; a delay `d`
    /// becomes one in `(d × (1 − jitter), d]`). Default 0.2.
    pub jitter: f64,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_attempts: 5,
            healthy_after: Duration::from_secs(60),
            jitter: 0.2,
        }
    }
}

impl RestartPolicy {
    /// A policy that never restarts: the first failure is the last (a one-shot check
    /// such as `capable servers`).
    pub fn never() -> RestartPolicy {
        RestartPolicy {
            max_attempts: 0,
            ..RestartPolicy::default()
        }
    }

    /// The delay before restart `attempt` (1-based), before jitter: the initial delay
    /// doubled `attempt − 1` times, capped at the maximum.
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        self.initial_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay)
    }

    fn jitter_fraction(&self) -> f64 {
        if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// What made a server go away, as far as restarting is concerned. The shell maps its
/// errors onto these (`capable::Error::failure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Failure {
    /// The server process exited or closed its output (a crash).
    Exited,
    /// The transport failed: a broken pipe, a refused or reset connection, a stream
    /// that ended.
    Transport,
    /// The handshake or a request got no answer in time.
    Timeout,
    /// An HTTP status without a JSON-RPC answer (a 404 is a lost session, a 5xx the
    /// server's own failure, a 401 or 403 a missing authorization).
    Http(u16),
    /// The server refused or answered a protocol version capable does not speak.
    VersionRefused,
    /// The server broke the protocol or its own declaration (a malformed handshake, a
    /// message too large, a declared method refused).
    Violation,
    /// The server refused `initialize` with an error, or requires a client capability
    /// the host did not declare.
    Refused,
    /// The server's config entry cannot be used (no command, a command that cannot
    /// be started, a bad URL, invalid options).
    Config,
}

impl Failure {
    /// Whether trying again may end differently: a crash, a broken transport, a
    /// timeout, an HTTP 5xx, 404 (a lost session), 408 or 429 may; a version refusal,
    /// a violation, a refusal, a config error, a 401/403 or another HTTP 4xx will not.
    pub fn is_retryable(self) -> bool {
        match self {
            Failure::Exited | Failure::Transport | Failure::Timeout => true,
            Failure::Http(status) => matches!(status, 404 | 408 | 429 | 500..=599),
            Failure::VersionRefused | Failure::Violation | Failure::Refused | Failure::Config => {
                false
            }
        }
    }

    /// A short name: `exited`, `transport`, `timeout`, `http-503`, …
    pub fn name(self) -> String {
        match self {
            Failure::Exited => "exited".into(),
            Failure::Transport => "transport".into(),
            Failure::Timeout => "timeout".into(),
            Failure::Http(status) => format!("http-{status}"),
            Failure::VersionRefused => "version-refused".into(),
            Failure::Violation => "violation".into(),
            Failure::Refused => "refused".into(),
            Failure::Config => "config".into(),
        }
    }
}

/// Why [`Restarts`] gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// The failure is not one a restart can cure ([`Failure::is_retryable`]).
    NotRetryable(Failure),
    /// [`RestartPolicy::max_attempts`] restarts in a row failed too.
    Exhausted {
        /// The bound.
        max_attempts: u32,
    },
}

/// What to do after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start the server again after this delay.
    RetryAfter(Duration),
    /// Leave it stopped.
    GiveUp {
        /// How many restarts in a row were tried (0: none).
        attempts: u32,
        /// Why no more.
        why: GiveUpReason,
    },
}

/// The restart state of one server: its failures in a row, and since when it is up.
#[derive(Clone, Debug)]
pub struct Restarts {
    policy: RestartPolicy,
    rng: u64,
    /// Restarts decided since the count last started anew.
    attempts: u32,
    ready_since: Option<Instant>,
}

impl Restarts {
    /// A fresh state; `seed` drives the jitter (give each server its own, such as a
    /// hash of its name and the time the host started).
    pub fn new(policy: RestartPolicy, seed: u64) -> Restarts {
        Restarts {
            policy,
            rng: splitmix(seed),
            attempts: 0,
            ready_since: None,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &RestartPolicy {
        &self.policy
    }

    /// How many restarts in a row were decided so far (since the last healthy
    /// period).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// When the count starts anew if the connection that came up stays up until then.
    pub fn healthy_at(&self) -> Option<Instant> {
        let since = self.ready_since?;
        Some(crate::time::deadline(since, self.policy.healthy_after))
    }

    /// The server is connected and ready at `now`.
    pub fn ready(&mut self, now: Instant) {
        self.ready_since = Some(now);
    }

    /// The server failed at `now` (to connect, or its connection ended): restart it
    /// after a delay, or give up.
    pub fn failed(&mut self, now: Instant, failure: Failure) -> Decision {
        if let Some(healthy) = self.healthy_at() {
            if now >= healthy {
                self.attempts = 0;
            }
        }
        self.ready_since = None;
        if !failure.is_retryable() {
            return Decision::GiveUp {
                attempts: self.attempts,
                why: GiveUpReason::NotRetryable(failure),
            };
        }
        if self.attempts >= self.policy.max_attempts {
            return Decision::GiveUp {
                attempts: self.attempts,
                why: GiveUpReason::Exhausted {
                    max_attempts: self.policy.max_attempts,
                },
            };
        }
        self.attempts += 1;
        let delay = self.policy.delay(self.attempts);
        let factor = 1.0 - self.policy.jitter_fraction() * self.unit();
        // In floating point a huge delay may round past `Duration::MAX`: keep it whole.
        let jittered = Duration::try_from_secs_f64(delay.as_secs_f64() * factor)
            .map_or(delay, |d| d.min(delay));
        Decision::RetryAfter(jittered)
    }

    /// A number in `[0, 1)` (xorshift64, seeded through splitmix64).
    fn unit(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Spreads a seed over all bits (and never leaves xorshift the all-zero state).
fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn exact(max_attempts: u32) -> RestartPolicy {
        RestartPolicy {
            initial_delay: 100 * MS,
            max_delay: 1000 * MS,
            max_attempts,
            healthy_after: Duration::from_secs(10),
            jitter: 0.0,
        }
    }

    /// Fails `n` times in a row, each a moment after the last, without ever coming up.
    fn delays(r: &mut Restarts, t0: Instant, n: u32) -> Vec<Decision> {
        (0..n)
            .map(|i| r.failed(t0 + MS * i, Failure::Exited))
            .collect()
    }

    #[test]
    fn delays_double_from_the_initial_one_up_to_the_cap() {
        let mut r = Restarts::new(exact(6), 1);
        let got = delays(&mut r, Instant::now(), 6);
        let want: Vec<Decision> = [100, 200, 400, 800, 1000, 1000]
            .map(|ms| Decision::RetryAfter(ms * MS))
            .into();
        assert_eq!(got, want);
        assert_eq!(r.attempts(), 6);
    }

    #[test]
    fn it_gives_up_after_the_bounded_attempts() {
        let mut r = Restarts::new(exact(3), 1);
        let t0 = Instant::now();
        let got = delays(&mut r, t0, 4);
        assert!(got[..3]
            .iter()
            .all(|d| matches!(d, Decision::RetryAfter(_))));
        let gave_up = Decision::GiveUp {
            attempts: 3,
            why: GiveUpReason::Exhausted { max_attempts: 3 },
        };
        assert_eq!(got[3], gave_up);
        // And it stays given up.
        assert_eq!(
            r.failed(t0 + Duration::from_secs(1), Failure::Exited),
            gave_up
        );
    }

    #[test]
    fn zero_attempts_never_restarts() {
        let mut r = Restarts::new(RestartPolicy::never(), 1);
        assert!(matches!(
            r.failed(Instant::now(), Failure::Exited),
            Decision::GiveUp {
                attempts: 0,
                why: GiveUpReason::Exhausted { max_attempts: 0 }
            }
        ));
    }

    #[test]
    fn what_a_restart_cannot_cure_is_not_retried() {
        for failure in [
            Failure::VersionRefused,
            Failure::Violation,
            Failure::Refused,
            Failure::Config,
            Failure::Http(401),
            Failure::Http(403),
            Failure::Http(400),
        ] {
            let mut r = Restarts::new(exact(5), 1);
            assert_eq!(
                r.failed(Instant::now(), failure),
                Decision::GiveUp {
                    attempts: 0,
                    why: GiveUpReason::NotRetryable(failure)
                },
                "{failure:?}"
            );
        }
        for failure in [
            Failure::Exited,
            Failure::Transport,
            Failure::Timeout,
            Failure::Http(404),
            Failure::Http(429),
            Failure::Http(500),
            Failure::Http(503),
        ] {
            let mut r = Restarts::new(exact(5), 1);
            assert_eq!(
                r.failed(Instant::now(), failure),
                Decision::RetryAfter(100 * MS),
                "{failure:?}"
            );
        }
    }

    #[test]
    fn only_a_healthy_period_starts_the_count_anew() {
        let mut r = Restarts::new(exact(2), 1);
        let t0 = Instant::now();
        // Up for a second each time, then a crash: the count goes on, then stops.
        let mut t = t0;
        let mut decisions = Vec::new();
        for _ in 0..3 {
            r.ready(t);
            t += Duration::from_secs(1);
            decisions.push(r.failed(t, Failure::Exited));
        }
        assert_eq!(decisions[0], Decision::RetryAfter(100 * MS));
        assert_eq!(decisions[1], Decision::RetryAfter(200 * MS));
        assert!(matches!(decisions[2], Decision::GiveUp { attempts: 2, .. }));

        // Up for the healthy period: the next crash is a first one again.
        let mut r = Restarts::new(exact(2), 1);
        assert_eq!(
            r.failed(t0, Failure::Exited),
            Decision::RetryAfter(100 * MS)
        );
        assert_eq!(
            r.failed(t0, Failure::Exited),
            Decision::RetryAfter(200 * MS)
        );
        r.ready(t0);
        assert_eq!(r.healthy_at(), Some(t0 + Duration::from_secs(10)));
        let later = t0 + Duration::from_secs(10);
        assert_eq!(
            r.failed(later, Failure::Exited),
            Decision::RetryAfter(100 * MS)
        );
        assert_eq!(r.attempts(), 1);
        assert_eq!(r.healthy_at(), None, "down again");
    }

    #[test]
    fn jitter_only_shortens_and_replays_from_its_seed() {
        let policy = RestartPolicy {
            jitter: 0.5,
            ..exact(8)
        };
        let run = |seed| {
            let mut r = Restarts::new(policy, seed);
            delays(&mut r, Instant::now(), 8)
        };
        let first = run(42);
        assert_eq!(first, run(42), "the same seed, the same delays");
        assert_ne!(first, run(43), "another seed, other delays");
        for (i, d) in first.iter().enumerate() {
            let Decision::RetryAfter(d) = *d else {
                panic!("{d:?}")
            };
            let full = policy.delay(i as u32 + 1);
            assert!(d <= full && d > full / 2, "{d:?} against {full:?}");
        }
        // A nonsense fraction is no fraction.
        let nan = RestartPolicy {
            jitter: f64::NAN,
            ..exact(1)
        };
        let mut r = Restarts::new(nan, 1);
        assert_eq!(
            r.failed(Instant::now(), Failure::Exited),
            Decision::RetryAfter(100 * MS)
        );
    }

    #[test]
    fn an_absurd_policy_neither_overflows_nor_panics() {
        let policy = RestartPolicy {
            initial_delay: Duration::MAX,
            max_delay: Duration::MAX,
            max_attempts: u32::MAX,
            healthy_after: Duration::MAX,
            jitter: 2.0,
        };
        let mut r = Restarts::new(policy, 0);
        let t0 = Instant::now();
        for i in 0..100 {
            assert!(matches!(
                r.failed(t0 + MS * i, Failure::Transport),
                Decision::RetryAfter(_)
            ));
        }
        r.ready(t0);
        assert!(r.healthy_at().is_some());
    }
}
