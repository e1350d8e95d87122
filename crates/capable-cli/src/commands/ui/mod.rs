//! `capable ui`: a local web inspector in the same binary.
//!
//! It connects the servers given at start (every server of the config, or the one
//! `--server NAME`, `--url URL` or `-- CMD …` names), serves one page on
//! `127.0.0.1` (a random port unless `--port`), prints the page's URL with a random
//! token and opens the browser (unless `--no-open`, or there is no display). The page
//! shows each server's state, era, version, capability matrix and allowed actions, its
//! resources (read, watch), tools (a form from the input schema, progress, tasks,
//! cancel, an MCP Apps view), prompts, requests for input, skills, the audit, every
//! message on the wire and the server's stderr — live, over one event stream.
//!
//! | file | concern |
//! |---|---|
//! | `security.rs` | the gate before every route: `Host`, `Origin`, the token and its cookie |
//! | `events.rs` | the numbered, resumable event stream (`GET /api/events`) |
//! | `servers.rs` | the servers: connect, disconnect, their state and lists, the message-log tap |
//! | `api.rs` | the commands (`POST /api/…`) and `GET /api/servers` |
//! | `calls.rs` | tool calls: checked arguments, progress, tasks, cancel |
//! | `watches.rs` | watches started from the page |
//! | `schema_check.rs` | a tool's arguments against its `inputSchema`, before sending |
//! | `skills.rs` | skills: the entries, one loaded and verified |
//! | `apps.rs` | MCP Apps: a tool's `ui://` view, framed in a sandbox under its own policy |
//! | `audit.rs` | the audit on a session of its own |
//! | `elicitations.rs` | a server's requests for input, answered in the page |
//! | `assets/` | the page: HTML, CSS and plain JavaScript, embedded in the binary |
//!
//! No request can start a process or add a server: the list is fixed at start.

mod api;
mod apps;
mod audit;
mod calls;
mod elicitations;
mod events;
mod schema_check;
mod security;
mod servers;
mod skills;
mod watches;

use std::io::Write;
use std::sync::Arc;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use capable::config::{ConfigEntry, ConfigFile, ServerTarget};

use super::Context;
use crate::exit::CliError;
use crate::flags::UiArgs;

/// The page, embedded: its path, its bytes, its type. Plain modules, no build step.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "/",
        include_str!("assets/index.html"),
        "text/html; charset=utf-8",
    ),
    (
        "/app.css",
        include_str!("assets/app.css"),
        "text/css; charset=utf-8",
    ),
    ("/app.js", include_str!("assets/app.js"), JS),
    ("/dom.js", include_str!("assets/dom.js"), JS),
    ("/form.js", include_str!("assets/form.js"), JS),
    ("/overview.js", include_str!("assets/overview.js"), JS),
    ("/resources.js", include_str!("assets/resources.js"), JS),
    ("/tools.js", include_str!("assets/tools.js"), JS),
    ("/monitor.js", include_str!("assets/monitor.js"), JS),
    ("/elicit.js", include_str!("assets/elicit.js"), JS),
    ("/tasks.js", include_str!("assets/tasks.js"), JS),
    ("/skills.js", include_str!("assets/skills.js"), JS),
    ("/apps.js", include_str!("assets/apps.js"), JS),
];
const JS: &str = "text/javascript; charset=utf-8";

/// Serves the inspector until Ctrl-C (exit 0) or another signal.
pub async fn run(ctx: &Context, args: &UiArgs) -> Result<(), CliError> {
    let entries = entries(ctx, args)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| CliError::Usage(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = listener
        .local_addr()
        .map_err(|e| CliError::Usage(format!("cannot read the bound port: {e}")))?
        .port();
    let gate = security::Gate::new(port)
        .map_err(|e| CliError::Usage(format!("no random numbers for the token: {e}")))?;
    crate::secrets::keep(|s| s.add(gate.token()));

    let bus = events::Bus::new(events::RING, events::RING_BYTES);
    let servers = servers::Servers::new(
        entries,
        bus.clone(),
        ctx.options(),
        ctx.global.timeout,
        Some(ctx.host_oauth()),
    );
    let app = Arc::new(api::App::new(servers, bus.clone()));
    for entry in app.servers.all() {
        app.servers.connect(entry).await;
    }
    let router = router(app.clone(), bus, gate.clone());

    let url = gate.url();
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

    let served = tokio::select! {
        served = axum::serve(listener, router) => served
            .map_err(|e| CliError::Usage(format!("the inspector stopped: {e}"))),
        signal = ctx.signals.received() => match signal {
            libc::SIGINT => Ok(()),
            other => Err(CliError::Interrupted(other)),
        },
    };
    app.servers.shutdown().await;
    served
}

/// The servers to show: the one named on the command line, else the config's.
fn entries(ctx: &Context, args: &UiArgs) -> Result<Vec<ConfigEntry>, CliError> {
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
        return Ok(vec![ConfigEntry {
            name,
            target: Ok(target),
        }]);
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
    Ok(file.servers)
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

fn router(app: Arc<api::App>, bus: events::Bus, gate: security::Gate) -> Router {
    let events = Router::new()
        .route("/api/events", get(events::handler))
        .with_state(bus);
    let mut pages = Router::new();
    for (path, body, kind) in ASSETS {
        pages = pages.route(path, get(move || async move { asset(body, kind) }));
    }
    Router::new()
        .route("/api/servers", get(api::servers))
        .route("/api/connect", post(api::connect))
        .route("/api/disconnect", post(api::disconnect))
        .route("/api/read", post(api::read))
        .route("/api/watch", post(api::watch))
        .route("/api/unwatch", post(api::unwatch))
        .route("/api/call", post(calls::call))
        .route("/api/cancel", post(calls::cancel))
        .route("/api/tasks", post(calls::tasks))
        .route("/api/task", post(calls::task))
        .route("/api/prompt", post(api::prompt))
        .route("/api/ping", post(api::ping))
        .route("/api/audit", post(api::audit))
        .route("/api/elicit", post(api::elicit))
        .route("/api/app", post(apps::read))
        .route("/app/{id}", get(apps::frame))
        .route("/api/skills", post(skills::list))
        .route("/api/skill", post(skills::show))
        .with_state(app)
        .merge(events)
        .merge(pages)
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .layer(axum::middleware::from_fn_with_state(
            gate,
            security::middleware,
        ))
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}
