//! A host of every server of the config, as `capable servers` and `capable tools
//! --all` use it: the global flags applied to each server, no restarts (a check sees
//! each server once), every server settled or the command interrupted.

use std::io::Write;
use std::time::Duration;

use capable::config::{ConfigFile, ServerTarget};
use capable::host::{
    Host, HostOptions, Pending, PinPolicy, PinStore, ServerError, ServerState, ServerStatus,
};
use capable::internal::restart::RestartPolicy;
use capable::Tap;

use super::Context;
use crate::exit::CliError;

/// How a config host judges its servers' definitions against their pins (the lock
/// file beside the config, or `file`).
pub enum Pinning {
    /// Pinned on first sight (written), changes withheld.
    Write(Option<std::path::PathBuf>),
    /// Judged, nothing written.
    Look(Option<std::path::PathBuf>),
}

/// Every server of the config (`--config FILE` or the default search), connected
/// concurrently and settled; `run` gets the host, which is shut down afterwards
/// whatever happens (a signal included).
pub async fn with_config_host<T>(
    ctx: &Context,
    command: &str,
    pinning: Pinning,
    run: impl AsyncFnOnce(&Host) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let g = &ctx.global;
    if g.server.is_some() || g.url.is_some() {
        return Err(CliError::Usage(format!(
            "{command} covers every server of the config; --server and --url name one server"
        )));
    }
    if !g.headers.is_empty() {
        return Err(CliError::Usage(format!(
            "--header goes with one server (--url or --server); for {command}, give each server its `headers` in the config"
        )));
    }
    let mut file = ConfigFile::load(g.config.as_deref())?;
    for entry in &mut file.servers {
        if let Ok(ServerTarget::Stdio(command)) = &mut entry.target {
            command.inherit_env = g.inherit_env;
        }
    }
    // Each server's connection is bounded by --timeout, the probe included: half of it
    // at most goes to the probe, so that a legacy server that ignores the probe still
    // has the time to answer `initialize`.
    let client = |ctx: &Context| {
        let mut options = ctx.options();
        let probe = &mut options.config.timeouts.probe;
        *probe = (*probe).min(g.timeout / 2);
        options
    };
    let pins = match pinning {
        Pinning::Write(lock) => open_pins(lock, &file)?,
        Pinning::Look(lock) => open_pins(lock, &file)?.looking_only(),
    };
    let options = HostOptions {
        client: client(ctx),
        restart: RestartPolicy::never(),
        connect_timeout: Some(g.timeout),
        shutdown_timeout: Duration::from_secs(10),
        oauth: Some(ctx.host_oauth()),
        pins: Some(pins),
        ..HostOptions::default()
    };
    let host = Host::new(options);
    for entry in &file.servers {
        let added = match (&entry.target, g.trace) {
            (Ok(target), true) => {
                let mut options = client(ctx);
                options.tap = Some(trace(&entry.name));
                host.add_with(&entry.name, target.clone(), options)
            }
            _ => host.add_entry(entry),
        };
        if let Err(e) = added {
            // A name the host refuses is shown as that server's failure.
            return Err(CliError::Usage(e.to_string()));
        }
    }
    let result = tokio::select! {
        result = async {
            host.settled().await;
            run(&host).await
        } => result,
        signal = ctx.signals.received() => Err(CliError::Interrupted(signal)),
    };
    host.shutdown().await;
    result
}

/// The pins of `config`'s servers: at `lock`, else beside the config.
fn open_pins(lock: Option<std::path::PathBuf>, config: &ConfigFile) -> Result<PinStore, CliError> {
    let path = lock.unwrap_or_else(|| PinStore::beside(std::path::Path::new(&config.path)));
    PinStore::open(path, PinPolicy::default())
        .map_err(|e| CliError::Usage(format!("pinned definitions: {e}")))
}

/// What the host's pins hold back, said on stderr, as the command's verdict: exit 6
/// when a definition differs from its pin (the evidence is `capable pins diff`).
pub fn pins_verdict(pending: &[Pending]) -> Option<CliError> {
    for p in pending {
        let (server, kind, name) = p.key();
        let what = match p {
            Pending::Changed(_) => "differs from its pinned definition: withheld",
            _ => "is new and held until accepted",
        };
        crate::output::eprint_line(&format!(
            "capable: server {server}: {} {name} {what} (`capable pins diff` shows it, `capable pins accept {server}/{name}` accepts it)",
            kind.said()
        ));
    }
    pending
        .iter()
        .any(|p| matches!(p, Pending::Changed(_)))
        .then(|| {
            CliError::Violations("a server's definitions changed since they were pinned".into())
        })
}

/// `--trace` for one of many servers: each line says whose it is.
fn trace(name: &str) -> Tap {
    let name = name.to_owned();
    Tap::new(move |dir, line| {
        let arrow = match dir {
            capable::Direction::Sent => '>',
            capable::Direction::Received => '<',
        };
        let text = String::from_utf8_lossy(line);
        let shown = crate::output::one_line(&text, 4000);
        let line = capable::internal::text::printable(&format!("{name} {arrow} {shown}"), false)
            .into_owned();
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    })
}

/// Why a server is unhealthy, as the CLI's error (its exit code and `--json` kind):
/// its state's reason, else a list it could not read. `None` for a healthy server.
pub fn trouble(status: &ServerStatus) -> Option<CliError> {
    if let Some(error) = status.state.error() {
        return Some(cli_error(error));
    }
    if let Some((_, error)) = status.list_errors.first() {
        return Some(CliError::Client(error.clone()));
    }
    match status.state {
        ServerState::Ready => None,
        // Stopped before it settled (a signal): it was not seen healthy.
        _ => Some(CliError::Client(capable::Error::Closed)),
    }
}

fn cli_error(error: &ServerError) -> CliError {
    match error {
        ServerError::Config(e) => CliError::Config(e.clone()),
        ServerError::Session(e) => CliError::Client(e.clone()),
        other => CliError::Usage(other.to_string()),
    }
}

/// The exit code of many servers' check: 0 when every one is healthy, else the highest
/// code among the unhealthy (a contract violation, 6, outranks a crash, 3).
pub fn worst_code(servers: &[ServerStatus]) -> i32 {
    servers
        .iter()
        .filter_map(trouble)
        .map(|e| e.exit_code())
        .max()
        .unwrap_or(0)
}
