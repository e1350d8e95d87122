//! Request timeouts, quinn-style: the connection keeps every deadline, the shell only
//! sleeps.
//!
//! Each request is registered with its [`Timing`]. Its deadline is `timeout` after it
//! was sent; a progress notification for it (when it asked for progress) restarts the
//! timeout, but never past the cap — the longer of [`Timeouts::progress_cap`] and its
//! own timeout, counted from when it was sent. The shell sleeps until
//! [`Connection::poll_timeout`] and then calls [`Connection::handle_timeout`], which
//! fails every request past its deadline and tells the server with
//! `notifications/cancelled`.
//!
//! `poll_timeout` is a lower bound, kept in O(1) per request: answered requests and
//! extended deadlines do not move it, so a wake-up may find nothing due; it then
//! recomputes the bound from what is still in flight. With one timeout for every
//! request that is one scan per timeout period, never one timer per request.
//!
//! [`Timeouts::progress_cap`]: crate::config::Timeouts::progress_cap

use std::time::{Duration, Instant};

use crate::method::Method;
use crate::outbox::Outbox;
use crate::time;

use super::Connection;

/// How long one request may take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timeout {
    /// The connection's request timeout ([`Timeouts::request`](crate::config::Timeouts::request)).
    #[default]
    Default,
    /// This long.
    After(Duration),
    /// Never times out (a listen stream that lasts as long as the host wants).
    Never,
}

/// How a request is sent and timed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// How long it may take.
    pub timeout: Timeout,
    /// Whether it asks for progress notifications (its `progressToken` is its id);
    /// each one restarts its timeout, up to the cap.
    pub progress: bool,
}

impl Timing {
    /// The connection's default timeout, no progress.
    pub fn new() -> Timing {
        Timing::default()
    }

    /// With progress notifications.
    pub fn with_progress(self, progress: bool) -> Timing {
        Timing { progress, ..self }
    }

    /// With its own timeout (`None`: the connection's).
    pub fn with_timeout(self, timeout: Option<Duration>) -> Timing {
        Timing {
            timeout: timeout.map_or(Timeout::Default, Timeout::After),
            ..self
        }
    }
}

/// One request's deadline. Its cap is worked out when progress comes (from when it
/// started and the connection's `progress_cap`, which never changes), not kept for
/// every request.
#[derive(Clone, Copy, Debug)]
pub(super) struct Deadline {
    started: Instant,
    at: Instant,
    timeout: Duration,
}

/// A request that got no answer in time. `notifications/cancelled` was written for it.
#[derive(Debug)]
pub struct TimedOut<W> {
    /// Our request id.
    pub id: i64,
    /// The request's method.
    pub method: Method,
    /// The waiter it was registered with.
    pub waiter: W,
    /// How long the client waited (its timeout, stretched by any progress).
    pub after: Duration,
}

impl<W> Connection<W> {
    /// The deadline of a request sent at `now` with `timing`, arming the timer.
    pub(super) fn deadline_for(&mut self, timing: Timing, now: Instant) -> Option<Deadline> {
        let timeout = match timing.timeout {
            Timeout::Never => return None,
            Timeout::Default => self.config.timeouts.request,
            Timeout::After(d) => d,
        };
        let at = time::deadline(now, timeout);
        if self.timer_at.is_none_or(|t| at < t) {
            self.timer_at = Some(at);
        }
        Some(Deadline {
            started: now,
            at,
            timeout,
        })
    }

    /// Progress arrived at `now` for request `id`: its timeout starts again, up to its
    /// cap. Only a later deadline results, so the timer's lower bound still holds.
    pub(super) fn extend_for_progress(&mut self, id: i64, now: Instant) {
        let progress_cap = self.config.timeouts.progress_cap;
        if let Some(d) = self.pending.get_mut(id).and_then(|p| p.deadline.as_mut()) {
            let cap = time::deadline(d.started, progress_cap.max(d.timeout));
            d.at = time::deadline(now, d.timeout).min(cap).max(d.at);
        }
    }

    /// When [`Connection::handle_timeout`] should be called next: no request in flight
    /// times out before this instant. `None` when nothing is timed (or closed).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timer_at
    }

    /// The time is `now`: fails every request past its deadline, writing
    /// `notifications/cancelled` for each to `out`, and returns them with their
    /// waiters. Calling it early is harmless (nothing is due, the bound is refreshed).
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) -> Vec<TimedOut<W>> {
        if self.closed || self.timer_at.is_none_or(|t| now < t) {
            return Vec::new();
        }
        let due: Vec<i64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline.is_some_and(|d| d.at <= now))
            .map(|(id, _)| id)
            .collect();
        let mut expired = Vec::with_capacity(due.len());
        for id in due {
            let Some(p) = self.pending.remove(id) else {
                continue;
            };
            self.spares.recycle(p.request);
            self.write_cancelled(id, "timed out", out);
            let after = p.deadline.map_or(Duration::ZERO, |d| {
                d.at.saturating_duration_since(d.started)
            });
            expired.push(TimedOut {
                id,
                method: p.method,
                waiter: p.waiter,
                after,
            });
        }
        self.timer_at = self
            .pending
            .iter()
            .filter_map(|(_, p)| p.deadline.map(|d| d.at))
            .min();
        expired
    }
}
