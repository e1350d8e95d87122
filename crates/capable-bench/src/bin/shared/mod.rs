//! What the bench binaries that run others share: finding a sibling binary, reading a
//! count from the command line, the median of a run's figures.

use std::path::PathBuf;

/// A binary next to this one (cargo builds them into the same directory).
pub fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.join(name)))
        .unwrap_or_else(|| PathBuf::from(name))
}

/// `value` as a count.
pub fn number(value: String) -> Result<usize, String> {
    value
        .parse::<usize>()
        .map_err(|_| format!("{value:?} is not a number"))
}

/// The median of `v`, `None` for none.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(match v.len() % 2 {
        1 => v[m],
        _ => (v[m - 1] + v[m]) / 2.0,
    })
}
