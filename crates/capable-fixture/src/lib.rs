//! The fixture server: a small stdio MCP server built from the same core types as the
//! client, with profiles that reproduce how real servers declare (and mis-declare)
//! their capabilities. It is the embedded default `capable demo` runs against
//! (`capable fixture`), and the peer for tests that need a server to misbehave on
//! purpose (the `capable-fixture` binary).
//!
//! It serves one document, [`MANUAL`] ("the current acceptance instructions"), plus
//! [`ARCHIVE`], and an `echo` tool where the profile declares tools (a call of a name it
//! does not serve is answered as SDK servers answer it: a tool error, `isError: true`).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::time::Duration;

mod fault;
mod profile;
mod server;

pub use fault::Fault;
pub use profile::Profile;
pub use server::{run, ARCHIVE, MANUAL};

/// The fixture's flags, shared by `capable fixture` and the `capable-fixture` binary.
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// Which server behaviour to reproduce.
    #[arg(long, value_enum, default_value = "read-only")]
    pub profile: Profile,
    /// How often the content changes once someone subscribed.
    #[arg(long, value_name = "DURATION", value_parser = capable_core::internal::time::parse_duration, default_value = "500ms")]
    pub update_interval: Duration,
    /// A fault to add to the profile: where and how the server breaks.
    #[arg(long, value_enum, value_name = "FAULT")]
    pub fault: Option<Fault>,
}

/// Runs the fixture with `args` on stdin/stdout until stdin closes and returns the
/// process's exit code: 0, or 1 after an I/O error (reported on stderr).
pub fn serve(args: &Args) -> i32 {
    match run(args.profile, args.update_interval, args.fault) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("capable fixture: {e}");
            1
        }
    }
}
