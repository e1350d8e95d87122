//! `capable ui`: the local web inspector ([`capable_ui`]) over the servers the command
//! line names (every server of the config, or the one `--server NAME`, `--url URL` or
//! `-- CMD …` names). It prints the page's URL with its token, opens the browser
//! (unless `--no-open`, or there is no display) and serves until Ctrl-C (exit 0).

use std::io::Write;

use capable::config::{ConfigEntry, ConfigFile, ServerTarget};
use capable::host::{PinPolicy, PinStore};
use capable_ui::{Ui, UiOptions};

use super::Context;
use crate::exit::CliError;
use crate::flags::UiArgs;

/// Serves the inspector until Ctrl-C (exit 0) or another signal.
pub async fn run(ctx: &Context, args: &UiArgs) -> Result<(), CliError> {
    let (servers, config) = entries(ctx, args)?;
    let mut options = UiOptions::new(servers);
    options.pins = pins(args, config.as_deref())?;
    options.client = ctx.options();
    options.timeout = ctx.global.timeout;
    options.oauth = Some(ctx.host_oauth());
    options.secrets = crate::secrets::kept();
    options.port = args.port;
    let ui = Ui::start(options).await.map_err(usage)?;
    crate::secrets::keep(|s| s.add(ui.token()));

    let url = ui.url();
    // The one place the token is written: the user needs it to open the page.
    let line = if ctx.global.json {
        serde_json::json!({"url": url}).to_string()
    } else {
        format!("capable ui: {url}\n  (open it in a browser; Ctrl-C stops the inspector and its servers)")
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    if !args.no_open && has_display() && webbrowser::open(&url).is_err() {
        crate::output::eprint_line("capable ui: could not open a browser; open the URL above");
    }

    match ui.serve(ctx.signals.received()).await.map_err(usage)? {
        libc::SIGINT => Ok(()),
        other => Err(CliError::Interrupted(other)),
    }
}

fn usage(e: capable_ui::UiError) -> CliError {
    CliError::Usage(e.to_string())
}

/// The pins the page judges definitions against: `--pins FILE`, else beside the
/// config (none for a server named on the command line, or with `--no-pins`).
fn pins(args: &UiArgs, config: Option<&str>) -> Result<Option<PinStore>, CliError> {
    if args.no_pins {
        return Ok(None);
    }
    let path = match (&args.pins, config) {
        (Some(file), _) => file.clone(),
        (None, Some(config)) => PinStore::beside(std::path::Path::new(config)),
        (None, None) => return Ok(None),
    };
    PinStore::open(path, PinPolicy::default())
        .map(Some)
        .map_err(|e| CliError::Usage(format!("pinned definitions: {e}")))
}

/// The servers to show: the one named on the command line, else the config's (and
/// the config file's path).
fn entries(ctx: &Context, args: &UiArgs) -> Result<(Vec<ConfigEntry>, Option<String>), CliError> {
    let g = &ctx.global;
    let named = g.server.is_some() || g.url.is_some() || !args.server.command.is_empty();
    if named {
        let mut target = ctx.target(&args.server)?;
        let name = match (&g.server, &target) {
            (Some(name), _) => name.clone(),
            (None, ServerTarget::Http { url, .. }) => capable::transport::http::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| "http".into()),
            (None, ServerTarget::Stdio(c)) => std::path::Path::new(&c.program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .unwrap_or_else(|| "server".into()),
        };
        if let ServerTarget::Stdio(c) = &mut target {
            c.inherit_env = g.inherit_env;
        }
        let entry = ConfigEntry {
            name,
            target: Ok(target),
        };
        return Ok((vec![entry], None));
    }
    let mut file = ConfigFile::load(g.config.as_deref())?;
    for entry in &mut file.servers {
        if let Ok(target) = &mut entry.target {
            crate::secrets::keep_target(target);
            if let ServerTarget::Stdio(c) = target {
                c.inherit_env = g.inherit_env;
            }
        }
    }
    Ok((file.servers, Some(file.path)))
}

/// Whether a browser could show a window here.
fn has_display() -> bool {
    if cfg!(target_os = "linux") {
        ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
    } else {
        true
    }
}
