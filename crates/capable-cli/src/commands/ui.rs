//! `capable ui`: the local web inspector ([`capable_ui`]) over the servers the command
//! line names (every server of the config, or the one `--server NAME`, `--url URL` or
//! `-- CMD …` names). It prints the page's URL with its token, opens the browser
//! (unless `--no-open`, or there is no display) and serves until Ctrl-C (exit 0).
//!
//! Over a config, the file is followed as `capable bridge` follows its own
//! ([`Follow`]: its directory watched unless `--no-watch`, and `SIGHUP`): each read
//! goes to the page ([`capable_ui::Reloader`]) — servers added, removed or changed
//! follow, the others keep their sessions; a file that cannot be used changes nothing
//! and the page says why.

use std::io::Write;

use capable::config::{ConfigEntry, ConfigFile, ServerTarget};
use capable::host::{PinPolicy, PinStore};
use capable_bridge::Follow;
use capable_ui::{Reloader, Ui, UiOptions};

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
    // Over a config: SIGHUP reads it anew rather than stopping the inspector.
    let follows = config.is_some();
    if let Some(path) = config {
        let watch = (!args.no_watch).then(|| std::path::PathBuf::from(&path));
        let follow = Follow::new(watch, Some(ctx.signals.hangups())).map_err(CliError::Usage)?;
        tokio::spawn(follow_config(
            follow,
            path,
            ctx.global.inherit_env,
            ui.reloader(),
        ));
    }

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

    let stop: std::pin::Pin<Box<dyn std::future::Future<Output = i32> + Send>> = if follows {
        Box::pin(ctx.signals.stopping())
    } else {
        Box::pin(ctx.signals.received())
    };
    match ui.serve(stop).await.map_err(usage)? {
        libc::SIGINT => Ok(()),
        other => Err(CliError::Interrupted(other)),
    }
}

/// Reads the config at `path` anew each time `follow` says to, and hands it to the
/// page: its servers, with the secrets they bring; or why the file cannot be used.
async fn follow_config(mut follow: Follow, path: String, inherit_env: bool, page: Reloader) {
    while let Some(forced) = follow.next().await {
        let file = path.clone();
        let read = follow
            .read(move || {
                let mut file = ConfigFile::load(Some(std::path::Path::new(&file)))
                    .map_err(|e| e.to_string())?;
                kept(&mut file.servers, inherit_env);
                Ok(file.servers)
            })
            .await;
        match read {
            Ok(servers) => {
                // What came of it is the page's to say.
                let _ = page.apply(servers, &crate::secrets::kept(), forced).await;
            }
            Err(why) => page.refused(&why, forced),
        }
    }
}

/// Each entry's secrets kept (cut out of every output), its environment as the run's.
fn kept(servers: &mut [ConfigEntry], inherit_env: bool) {
    for entry in servers {
        if let Ok(target) = &mut entry.target {
            crate::secrets::keep_target(target);
            if let ServerTarget::Stdio(c) = target {
                c.inherit_env = inherit_env;
            }
        }
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
    kept(&mut file.servers, g.inherit_env);
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
