//! The `capable` command line. Thin: flags, then one command module, then output.

mod commands;
mod config;
mod elicit;
mod exit;
mod flags;
mod output;

use clap::Parser;

use commands::Context;
use exit::CliError;
use flags::{Cli, Command, PromptsAction, ToolsAction};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    init_logging();
    if let Command::Fixture(args) = &cli.command {
        // The fixture is a plain blocking stdio server: no runtime needed.
        std::process::exit(capable_fixture::serve(args));
    }
    let json = cli.global.json;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("capable: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(run(cli));
    if let Err(e) = result {
        report(&e, json);
        std::process::exit(e.exit_code());
    }
}

async fn run(cli: Cli) -> Result<(), CliError> {
    let ctx = Context { global: cli.global };
    match cli.command {
        Command::Inspect(server) => commands::inspect::run(&ctx, &server).await,
        Command::Bench(args) => commands::bench::run(&ctx, &args).await,
        Command::Read { uri, server } => commands::read::run(&ctx, &uri, &server).await,
        Command::Resources { templates, server } => {
            commands::resources::run(&ctx, templates, &server).await
        }
        Command::Tools { action, server } => match action {
            None => commands::tools::list(&ctx, &server).await,
            Some(ToolsAction::Call {
                name,
                args,
                server: inner,
            }) => commands::tools::call(&ctx, &name, &args, &merge(server, inner)).await,
        },
        Command::Prompts { action, server } => match action {
            None => commands::prompts::list(&ctx, &server).await,
            Some(PromptsAction::Get {
                name,
                args,
                server: inner,
            }) => commands::prompts::get(&ctx, &name, &args, &merge(server, inner)).await,
        },
        Command::Demo => commands::demo::run(&ctx).await,
        Command::Watch {
            uri,
            poll,
            updates,
            server,
        } => commands::watch::run(&ctx, &uri, poll, updates, &server).await,
        Command::Auth { action } => commands::auth::run(&ctx, &action).await,
        Command::Audit { report, server } => {
            commands::audit::run(&ctx, report.as_deref(), &server).await
        }
        Command::Fixture(_) => unreachable!("handled before the runtime starts"),
    }
}

/// The server command may follow the inner subcommand (`tools call echo -- cmd`).
fn merge(outer: flags::ServerArgs, inner: flags::ServerArgs) -> flags::ServerArgs {
    if inner.command.is_empty() {
        outer
    } else {
        inner
    }
}

fn report(e: &CliError, json: bool) {
    eprintln!("capable: {e}");
    if let Some(hint) = e.hint() {
        eprintln!("  hint: {hint}");
    }
    // A verdict the command already printed (audit) gets no second JSON document.
    if json && !matches!(e, CliError::Violations(_)) {
        // One line: valid after the JSON lines of `watch --json` too.
        output::json_line(
            &serde_json::json!({"error": {"kind": e.kind(), "message": e.to_string(), "exitCode": e.exit_code()}}),
        );
    }
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("CAPABLE_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}
