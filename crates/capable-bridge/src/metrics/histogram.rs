//! A latency histogram of atomics: observed without a lock (one bucket's increment and
//! the sum's), read at a scrape without stopping anyone. prometheus-client's own
//! histogram takes a lock per observation; this one is encoded through its
//! [`MetricEncoder`] all the same.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use prometheus_client::encoding::{MetricEncoder, NoLabelSet};

/// The upper bounds of the buckets, in seconds: from half a millisecond (a relayed
/// read on one machine) to a minute (a tool that works); past the last, `+Inf`.
pub const BOUNDS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

/// The bounds in microseconds, as observations are compared.
const BOUNDS_MICROS: [u64; 14] = [
    500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 10_000_000, 60_000_000,
];

/// One histogram: a count per bucket (not cumulative; the last is past every bound)
/// and the sum in microseconds.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Counts one observation of `took`.
    pub fn observe(&self, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let at = BOUNDS_MICROS.partition_point(|&bound| bound < micros);
        self.buckets[at].fetch_add(1, Relaxed);
        self.sum_micros.fetch_add(micros, Relaxed);
    }

    /// How many were observed.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Relaxed)).sum()
    }

    /// Writes it to `encoder`: the count is the buckets' total as read, so the two
    /// always agree even while requests end during the scrape.
    pub fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut buckets = [(0.0, 0); BOUNDS.len() + 1];
        for (i, slot) in buckets.iter_mut().enumerate() {
            let bound = BOUNDS.get(i).copied().unwrap_or(f64::INFINITY);
            *slot = (bound, self.buckets[i].load(Relaxed));
        }
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = self.sum_micros.load(Relaxed) as f64 / 1e6;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observation_lands_in_the_first_bucket_that_holds_it() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_micros(501));
        h.observe(Duration::from_secs(3600));
        assert_eq!(h.buckets[0].load(Relaxed), 1);
        assert_eq!(h.buckets[1].load(Relaxed), 1);
        assert_eq!(h.buckets[BOUNDS.len()].load(Relaxed), 1);
        assert_eq!(h.count(), 3);
        assert_eq!(h.sum_micros.load(Relaxed), 500 + 501 + 3_600_000_000);
    }
}
