//! The figures of a bench's rotating rounds (one map of rows a round, each row its
//! metrics), read the one way every report reads them: a row's median of each metric,
//! and a figure taken round by round (a ratio or a difference of two rows in the same
//! round) before its median.

use serde_json::{json, Map, Value};

use crate::shared::median;

/// One round: each row's figures.
pub type Round = Map<String, Value>;

/// `metric` of `row` in `round`.
pub fn value(round: &Round, row: &str, metric: &str) -> Option<f64> {
    round.get(row)?[metric].as_f64()
}

/// Each of `rows`' median of each of `metrics` over `rounds`.
pub fn medians(rounds: &[Round], rows: &[&str], metrics: &[&str]) -> Value {
    let mut medians = Map::new();
    for row in rows {
        let mut m = Map::new();
        for metric in metrics {
            let values = rounds.iter().filter_map(|r| value(r, row, metric));
            m.insert((*metric).into(), json!(median(values.collect())));
        }
        medians.insert((*row).into(), Value::Object(m));
    }
    Value::Object(medians)
}

/// The median over `rounds` of what `f` makes of each (rounds it makes nothing of left
/// out).
pub fn per_round(rounds: &[Round], f: impl Fn(&Round) -> Option<f64>) -> Option<f64> {
    median(rounds.iter().filter_map(f).collect())
}
