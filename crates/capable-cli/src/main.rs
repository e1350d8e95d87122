//! The `capable` command line. Thin: flags, then one command module, then output.

mod colour;
mod commands;
mod disk_cache;
mod elicit;
mod elicit_form;
mod exit;
mod flags;
mod media;
mod output;
mod schema_outline;
mod secrets;
mod signals;

use clap::{CommandFactory, FromArgMatches};

use colour::ColorFlag;
use commands::Context;
use exit::CliError;
use flags::{Cli, Command, PromptsAction, SkillsAction, TasksAction, ToolsAction};

fn main() {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            if !refused_without_value(&e) {
                let _ = e.print();
            }
            std::process::exit(code);
        }
    };
    give_back_parser_memory();
    init_logging(cli.global.color);
    secrets::keep(|s| {
        for (_, value) in &cli.global.headers {
            s.add_header_value(value);
        }
        if let Some(url) = &cli.global.url {
            s.add_url_text(url);
        }
        if let Some(secret) = &cli.global.auth.client_secret {
            s.add(secret);
        }
    });
    // Neither the fixture (a plain blocking stdio server) nor the shell's files need
    // the runtime.
    let offline = match &cli.command {
        Command::Fixture(args) => std::process::exit(capable_fixture::serve(args)),
        Command::Completions { shell } => Some(commands::shell::completions(*shell)),
        Command::Man { dir } => Some(commands::shell::man(dir)),
        _ => None,
    };
    if let Some(result) = offline {
        if let Err(e) = &result {
            report(e, cli.global.json);
        }
        std::process::exit(result.map_or_else(|e| e.exit_code(), |()| 0));
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

async fn run(mut cli: Cli) -> Result<(), CliError> {
    commands::tools::address_across_config(&mut cli.global, &mut cli.command);
    let ctx = Context {
        global: cli.global,
        signals: signals::Signals::install(),
    };
    match cli.command {
        Command::Inspect(server) => commands::inspect::run(&ctx, &server).await,
        Command::Bench(args) => commands::bench::run(&ctx, &args).await,
        Command::Read { uri, save, server } => {
            commands::read::run(&ctx, &uri, save.as_deref(), &server).await
        }
        Command::Resources { templates, server } => {
            commands::resources::run(&ctx, templates, &server).await
        }
        Command::Tools {
            all: true,
            action: None,
            server,
        } if server.command.is_empty() => commands::tools_all::run(&ctx).await,
        Command::Tools { all: true, .. } => Err(CliError::Usage(
            "--all lists every server of the config: give no server and no subcommand".into(),
        )),
        Command::Tools { action, server, .. } => match action {
            None => commands::tools::list(&ctx, &server).await,
            Some(ToolsAction::Call {
                name,
                args,
                task,
                task_timeout,
                save,
                server: inner,
            }) => {
                let call = commands::tools::Call {
                    name: &name,
                    arguments: &args,
                    task,
                    task_timeout,
                    save: save.as_deref(),
                };
                commands::tools::call(&ctx, call, &merge(server, inner)).await
            }
            Some(ToolsAction::Show {
                name,
                server: inner,
            }) => commands::tools_show::run(&ctx, &name, &merge(server, inner)).await,
        },
        Command::Tasks { action, server } => match action {
            TasksAction::List => commands::tasks::list(&ctx, &server).await,
            TasksAction::Get { id, server: inner } => {
                commands::tasks::get(&ctx, &id, &merge(server, inner)).await
            }
            TasksAction::Cancel { id, server: inner } => {
                commands::tasks::cancel(&ctx, &id, &merge(server, inner)).await
            }
        },
        Command::Skills { action, server } => match action {
            None => commands::skills::list(&ctx, &server).await,
            Some(SkillsAction::Show {
                skill,
                file,
                server: inner,
            }) => {
                commands::skills::show(&ctx, &skill, file.as_deref(), &merge(server, inner)).await
            }
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
        Command::Servers => commands::servers::run(&ctx).await,
        Command::Pins { action, file } => commands::pins::run(&ctx, action, file).await,
        Command::Watch {
            uri,
            poll,
            updates,
            reconnect,
            max_restarts,
            healthy_after,
            server,
        } => {
            let reconnect = reconnect.then(|| capable::internal::restart::RestartPolicy {
                max_attempts: max_restarts,
                healthy_after,
                ..Default::default()
            });
            let args = commands::watch::WatchArgs {
                poll,
                updates,
                reconnect,
            };
            commands::watch::run(&ctx, &uri, args, &server).await
        }
        Command::Ui(args) => commands::ui::run(&ctx, &args).await,
        Command::Bridge(args) => commands::bridge::run(&ctx, &args).await,
        Command::Auth { action } => commands::auth::run(&ctx, &action).await,
        Command::Audit { report, server } => {
            commands::audit::run(&ctx, report.as_deref(), &server).await
        }
        Command::Fixture(_) | Command::Completions { .. } | Command::Man { .. } => {
            unreachable!("handled before the runtime starts")
        }
    }
}

/// The command line, parsed with clap's help and errors coloured as `--color` and
/// NO_COLOR say (see [`colour`]).
fn parse() -> Result<Cli, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut cmd = Cli::command().color(ColorFlag::from_args(&args).for_clap());
    cmd.try_get_matches_from_mut(args)
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches))
        .map_err(|e| e.format(&mut cmd))
}

/// Hands the memory the command-line parser used back to the system. clap builds every
/// subcommand with a copy of each global flag (about 0.5 MiB here) and frees it once the
/// command line is read; glibc keeps freed memory in the middle of its heap, so a
/// process that then runs for hours (a bridge in front of a host, `ui`, `watch`) would
/// hold it resident all along.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn give_back_parser_memory() {
    // SAFETY: malloc_trim only releases free memory of glibc's own heap; it takes no
    // pointer and may be called at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Elsewhere the allocator keeps what it keeps.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back_parser_memory() {}

/// The server command may follow the inner subcommand (`tools call echo -- cmd`).
fn merge(outer: flags::ServerArgs, inner: flags::ServerArgs) -> flags::ServerArgs {
    if inner.command.is_empty() {
        outer
    } else {
        inner
    }
}

fn report(e: &CliError, json: bool) {
    if matches!(e, CliError::OutputClosed) {
        // Nobody is reading: nothing to say, and nowhere to say it.
        return;
    }
    // One write: the message, then the hint (a server's words in it are escaped).
    let mut text = format!("capable: {e}");
    if let Some(hint) = e.hint() {
        text.push_str(&format!("\n  hint: {hint}"));
    }
    output::eprint_line(&text);
    // A verdict the command already printed (audit, a tool's result with isError)
    // gets no second JSON document.
    let printed = matches!(
        e,
        CliError::Violations(_) | CliError::Unhealthy { .. } | CliError::ToolError { .. }
    );
    if json && !printed {
        // One line: valid after the JSON lines of `watch --json` too.
        let _ = output::json_line(
            &serde_json::json!({"error": {"kind": e.kind(), "message": e.to_string(), "exitCode": e.exit_code()}}),
        );
    }
}

/// A flag whose value may be a credential and was refused: the error says why without
/// repeating the value (clap's own message would). Returns whether it was printed.
fn refused_without_value(e: &clap::Error) -> bool {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation {
        return false;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return false;
    };
    if !["--header", "--client-secret", "--url"]
        .iter()
        .any(|f| arg.starts_with(f))
    {
        return false;
    }
    let why = std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_else(|| "it cannot be used".into());
    output::eprint_line(&format!(
        "error: invalid value for '{arg}' (not shown): {why}\n\nFor more information, try '--help'."
    ));
    true
}

fn init_logging(colour: ColorFlag) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("CAPABLE_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(secrets::log_writer)
        // By default colours for a person at a terminal only, never into a file or a pipe.
        .with_ansi(colour.stderr())
        .with_target(false)
        .without_time()
        .try_init();
}
