//! The audit under a flood. A server that sends 200,000 notifications it did not
//! declare would write 200,000 `withheld` lines — tens of megabytes on stderr and in the
//! audit file, and the one line that matters lost among them. So lines that repeat are
//! summarised, per kind:
//!
//! - a kind is the event with the server and the method (or, for a notice, its side);
//! - in each window (10 s) the first [`BURST`] lines of a kind are written; the rest are
//!   counted, and when the window has passed one `suppressed` line says how many, and
//!   when the first and the last came;
//! - a contract violation is never held back: it is the evidence the audit is for;
//! - at most [`MAX_KINDS`] kinds are followed at once; past that, the rest share one.
//!
//! Time is given, never read: [`Limiter::judge`] and [`Limiter::due`] take it.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

/// How many lines of one kind a window lets through.
pub const BURST: u32 = 20;
/// How long a window lasts.
pub const WINDOW: Duration = Duration::from_secs(10);
/// How many kinds are followed at once.
pub const MAX_KINDS: usize = 1024;

/// The kind every line past [`MAX_KINDS`] kinds shares.
const OTHERS: &str = "*";

/// Lines of one kind held back in a window: how many, and when the first and last came.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// How many.
    pub count: u64,
    /// When the first came.
    pub first: SystemTime,
    /// When the last came.
    pub last: SystemTime,
}

#[derive(Debug)]
struct Kind {
    since: Instant,
    written: u32,
    held: Option<Held>,
}

/// Which lines are written (see the module documentation).
#[derive(Debug, Default)]
pub struct Limiter {
    kinds: HashMap<String, Kind>,
}

impl Limiter {
    /// Whether a line of `kind` at `now` (`wall`: the same instant as a date) is
    /// written; also what was held back of that kind in a window that has passed.
    pub fn judge(&mut self, kind: &str, now: Instant, wall: SystemTime) -> (bool, Option<Held>) {
        let kind = match self.kinds.contains_key(kind) || self.kinds.len() < MAX_KINDS {
            true => kind,
            false => OTHERS,
        };
        let entry = self.kinds.entry(kind.to_owned()).or_insert(Kind {
            since: now,
            written: 0,
            held: None,
        });
        let mut passed = None;
        if now.saturating_duration_since(entry.since) >= WINDOW {
            passed = entry.held.take();
            entry.since = now;
            entry.written = 0;
        }
        if entry.written < BURST {
            entry.written += 1;
            return (true, passed);
        }
        match &mut entry.held {
            Some(held) => {
                held.count += 1;
                held.last = wall;
            }
            None => {
                entry.held = Some(Held {
                    count: 1,
                    first: wall,
                    last: wall,
                })
            }
        }
        (false, passed)
    }

    /// What was held back in windows that have passed by `now` (every kind's, when
    /// `all`: the bridge stops), and the kinds forgotten that hold nothing.
    pub fn due(&mut self, now: Instant, all: bool) -> Vec<(String, Held)> {
        let mut due = Vec::new();
        self.kinds.retain(|kind, k| {
            let passed = all || now.saturating_duration_since(k.since) >= WINDOW;
            if passed {
                if let Some(held) = k.held.take() {
                    due.push((kind.clone(), held));
                }
            }
            !passed
        });
        due.sort_by_key(|d| d.1.first);
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_one_kind_is_a_burst_then_one_summary_per_window() {
        let t0 = Instant::now();
        let w0 = SystemTime::UNIX_EPOCH;
        let mut limiter = Limiter::default();
        let mut written = 0;
        for n in 0..10_000u64 {
            let at = Duration::from_micros(n);
            let (write, passed) = limiter.judge("withheld x/y", t0 + at, w0 + at);
            written += u32::from(write);
            assert_eq!(passed, None);
        }
        assert_eq!(written, BURST);
        // Another kind is not held back by this one.
        assert!(limiter.judge("withheld x/z", t0, w0).0);
        assert!(limiter.due(t0 + Duration::from_secs(1), false).is_empty());
        // The window passes: one summary, with the first and last held back.
        let later = t0 + WINDOW;
        let due = limiter.due(later, false);
        assert_eq!(due.len(), 1, "{due:?}");
        let (kind, held) = &due[0];
        assert_eq!(kind, "withheld x/y");
        assert_eq!(held.count, 10_000 - u64::from(BURST));
        assert_eq!(held.first, w0 + Duration::from_micros(u64::from(BURST)));
        assert_eq!(held.last, w0 + Duration::from_micros(9_999));
        // A new window writes again.
        assert!(limiter.judge("withheld x/y", later, w0).0);
    }

    #[test]
    fn a_line_after_the_window_brings_its_summary_and_stopping_brings_every_one() {
        let t0 = Instant::now();
        let w0 = SystemTime::UNIX_EPOCH;
        let mut limiter = Limiter::default();
        for _ in 0..=BURST {
            limiter.judge("k", t0, w0);
        }
        let (write, passed) = limiter.judge("k", t0 + WINDOW, w0);
        assert!(write);
        assert_eq!(passed.map(|h| h.count), Some(1));
        for _ in 0..=BURST {
            limiter.judge("k", t0 + WINDOW, w0);
        }
        let due = limiter.due(t0 + WINDOW, true);
        assert_eq!(due.len(), 1);
    }

    #[test]
    fn kinds_past_the_limit_share_one() {
        let t0 = Instant::now();
        let w0 = SystemTime::UNIX_EPOCH;
        let mut limiter = Limiter::default();
        for n in 0..MAX_KINDS {
            limiter.judge(&n.to_string(), t0, w0);
        }
        let mut written = 0;
        for n in 0..1000 {
            written += u32::from(limiter.judge(&format!("new {n}"), t0, w0).0);
        }
        assert_eq!(written, BURST);
        assert_eq!(limiter.kinds.len(), MAX_KINDS + 1);
    }
}
