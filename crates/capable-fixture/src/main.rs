//! `capable-fixture --profile P [--update-interval D]`: the fixture server on stdio,
//! the same as `capable fixture`, as a binary of its own for the tests.

#![forbid(unsafe_code)]

use clap::Parser;

/// Run a built-in stdio MCP server (one profile of how servers declare themselves).
#[derive(Debug, Parser)]
#[command(name = "capable-fixture", version)]
struct Cli {
    #[command(flatten)]
    args: capable_fixture::Args,
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(capable_fixture::serve(&cli.args));
}
