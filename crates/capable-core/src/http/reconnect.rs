//! How broken streams are retried: the server's `retry` when it gave one, else a
//! doubling delay; a bounded number of attempts in a row; a bounded number of
//! re-issues of a modern request.

use std::time::Duration;

/// Reconnection of broken SSE streams: the server's `retry` when it gave one (but never
/// sooner than [`Reconnect::MIN_SERVER_RETRY`]), else a doubling delay from `initial`
/// capped at `max`; at most `attempts` tries in a row. Only a stream that stayed up for
/// `healthy` and delivered a message resets the count: a server that sends one event and
/// closes, again and again, is given up like one that sends nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconnect {
    /// First delay when the server gave no `retry`.
    pub initial: Duration,
    /// Largest delay.
    pub max: Duration,
    /// Most attempts in a row.
    pub attempts: u32,
    /// How many times a modern request whose stream broke is re-issued.
    pub reissues: u32,
    /// How long a stream must stay up (and deliver) before its reconnects count anew.
    pub healthy: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(8),
            attempts: 5,
            reissues: 2,
            healthy: Duration::from_secs(30),
        }
    }
}

impl Reconnect {
    /// The longest `retry` a server may ask for; longer values are taken as this.
    pub const MAX_SERVER_RETRY: Duration = Duration::from_secs(60);

    /// The shortest `retry` taken: a server's `retry: 0` would be a reconnect storm.
    pub const MIN_SERVER_RETRY: Duration = Duration::from_millis(250);

    /// The delay before attempt `attempt` (0-based), given the server's `retry`.
    pub fn delay(&self, attempt: u32, retry: Option<Duration>) -> Duration {
        match retry {
            // The server's `retry` is honoured (MUST), within reason.
            Some(r) => r.clamp(Self::MIN_SERVER_RETRY, Self::MAX_SERVER_RETRY),
            None => self
                .initial
                .saturating_mul(1 << attempt.min(16))
                .min(self.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_delays_follow_retry_or_a_capped_doubling() {
        let r = Reconnect::default();
        assert_eq!(
            r.delay(0, Some(Duration::from_millis(500))),
            Duration::from_millis(500)
        );
        assert_eq!(r.delay(0, None), Duration::from_millis(500));
        assert_eq!(r.delay(2, None), Duration::from_millis(2000));
        assert_eq!(r.delay(10, None), r.max);
        assert_eq!(
            r.delay(0, Some(Duration::from_secs(3600))),
            Reconnect::MAX_SERVER_RETRY
        );
        assert_eq!(
            r.delay(3, Some(Duration::ZERO)),
            Reconnect::MIN_SERVER_RETRY,
            "retry: 0 is no reason for a storm"
        );
    }
}
