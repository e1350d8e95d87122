//! Time, as the core sees it: given, never read.
//!
//! The core keeps every timing rule (how long the probe may go unanswered, when a
//! request times out, how far progress may extend it) but owns no clock. The shell
//! passes the time in with every event, the way quinn-proto does: [`Now`] where a
//! message arrives (a monotonic instant for deadlines and the wall-clock time for
//! evidence), a plain [`Instant`] where only deadlines matter. It then asks the core
//! when to wake it next (`poll_timeout`) and tells it when that time came
//! (`handle_timeout`). Tests drive the same rules with a made-up clock.

use std::time::{Duration, Instant, SystemTime};

/// The moment an event happened, on both clocks: `instant` orders deadlines,
/// `wall` stamps evidence (a violation's `at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// Monotonic time, for deadlines.
    pub instant: Instant,
    /// Wall-clock time, for records a person reads.
    pub wall: SystemTime,
}

impl Now {
    /// A moment on both clocks.
    pub fn new(instant: Instant, wall: SystemTime) -> Now {
        Now { instant, wall }
    }
}

/// A deadline `after` from `now` that never overflows: an absurd duration (a host's
/// `Duration::MAX`, say) means "as good as never", not a panic.
pub fn deadline(now: Instant, after: Duration) -> Instant {
    /// About 30 years: later than any session lives.
    const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);
    now.checked_add(after.min(FAR))
        .or_else(|| now.checked_add(Duration::from_secs(24 * 3600)))
        .unwrap_or(now)
}

/// The longest `ttlMs` a server's answer is taken at its word for: one day. Longer
/// values (a server's `1e30`) are capped to it, so that no schedule built on a TTL
/// can overflow or stall for ever.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// A server's `ttlMs` as a duration, capped at [`MAX_TTL`]; `None` for a value that
/// is not a positive finite number of milliseconds.
pub fn ttl(ttl_ms: f64) -> Option<Duration> {
    if !ttl_ms.is_finite() || ttl_ms <= 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(ttl_ms / 1000.0).map_or(MAX_TTL, |d| d.min(MAX_TTL)))
}

/// A wall-clock time as RFC 3339 in UTC with milliseconds (`2026-11-29T22:04:05.123Z`);
/// a time before 1970 reads as the epoch.
pub fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// A duration as people write it: `2s`, `500ms`, `1m`, `1.5s`, `2h`, `90` (seconds).
/// At most a year: a longer one is a mistake, not a timeout; never a panic.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const MAX: Duration = Duration::from_secs(365 * 24 * 3600);
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (try 2s, 500ms, 1m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use ms, s, m or h)")),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("{s:?}: a duration must be positive"));
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= MAX => Ok(d),
        _ => Err(format!("{s:?}: a duration may be at most a year")),
    }
}

/// A duration as people write it: `250ms`, `1.5s`, `2s`, `2m30s`.
pub fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(1000) && ms < 120_000 {
        format!("{}s", ms / 1000)
    } else if ms < 120_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}m{}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_never_overflows() {
        let now = Instant::now();
        assert_eq!(
            deadline(now, Duration::from_secs(2)),
            now + Duration::from_secs(2)
        );
        assert!(deadline(now, Duration::MAX) > now + Duration::from_secs(365 * 24 * 3600));
    }

    #[test]
    fn durations_parse_as_people_write_them_and_absurd_ones_are_refused() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        for bad in [
            "0s",
            "fast",
            "2 weeks",
            "1e300s",
            "10000000000000000000",
            "400d",
            "-1s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("8760h").is_ok(), "a year is allowed");
    }

    #[test]
    fn wall_clock_times_read_as_rfc_3339() {
        let at = |secs: u64, ms: u64| {
            rfc3339(SystemTime::UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(at(1_800_000_000, 123), "2027-01-15T08:00:00.123Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
        assert_eq!(
            rfc3339(SystemTime::UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(humanize(Duration::from_millis(250)), "250ms");
        assert_eq!(humanize(Duration::from_secs(2)), "2s");
        assert_eq!(humanize(Duration::from_millis(1500)), "1.5s");
        assert_eq!(humanize(Duration::from_secs(150)), "2m30s");
    }

    #[test]
    fn a_servers_ttl_is_capped_and_nonsense_is_ignored() {
        assert_eq!(ttl(1500.0), Some(Duration::from_millis(1500)));
        for huge in [1e19, 1e22, 1e30, 1e300, f64::MAX] {
            assert_eq!(ttl(huge), Some(MAX_TTL), "{huge}");
        }
        for nonsense in [0.0, -5.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(ttl(nonsense), None, "{nonsense}");
        }
    }
}
