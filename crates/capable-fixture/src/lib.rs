//! The fixture server: a small stdio MCP server built from the same core types as the
//! client, with profiles that reproduce how real servers declare (and mis-declare)
//! their capabilities. It is the embedded default `capable demo` runs against
//! (`capable fixture`), and the peer for tests that need a server to misbehave on
//! purpose (the `capable-fixture` binary).
//!
//! It serves one document, [`MANUAL`] ("the current acceptance instructions"), plus
//! [`ARCHIVE`], and an `echo` tool where the profile declares tools.

use std::time::Duration;

mod profile;
mod server;

pub use profile::Profile;
pub use server::{run, ARCHIVE, MANUAL};

/// The fixture's flags, shared by `capable fixture` and the `capable-fixture` binary.
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Which server behaviour to reproduce.
    #[arg(long, value_enum, default_value = "read-only")]
    pub profile: Profile,
    /// How often the content changes once someone subscribed.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "500ms")]
    pub update_interval: Duration,
}

/// Runs the fixture with `args` on stdin/stdout until stdin closes and returns the
/// process's exit code: 0, or 1 after an I/O error (reported on stderr).
pub fn serve(args: &Args) -> i32 {
    match run(args.profile, args.update_interval) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("capable fixture: {e}");
            1
        }
    }
}

/// `2s`, `500ms`, `1m`, `1.5s`, `90` (seconds): the durations the `capable` command
/// line reads.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
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
    Ok(Duration::from_secs_f64(secs))
}
