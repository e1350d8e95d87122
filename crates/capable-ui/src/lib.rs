//! # capable-ui
//!
//! capable's local web inspector: a host of the servers given at start, shown in one
//! page on `127.0.0.1` — each server's state, era, version, capability matrix and
//! allowed actions, its resources (read, watch, two revisions diffed), tools (a form
//! from the input schema, progress, tasks, cancel, an MCP Apps view), prompts (with
//! completions), what it asks of the person (forms, sampling), its roots, skills, an
//! OAuth login, the history of calls (with replay), the audit, every message on the
//! wire and the server's stderr — live, over one event stream; and a session's report
//! as one HTML file. `capable ui` is this crate behind a command line.
//!
//! ```no_run
//! # async fn run() -> Result<(), capable_ui::UiError> {
//! use capable::config::ConfigFile;
//! use capable_ui::{Ui, UiOptions};
//!
//! let servers = ConfigFile::load(None).map(|f| f.servers).unwrap_or_default();
//! let ui = Ui::start(UiOptions::new(servers)).await?;
//! println!("open {}", ui.url()); // carries the token: show it to the user only
//! ui.serve(async { tokio::signal::ctrl_c().await.ok(); }).await?;
//! # Ok(()) }
//! ```
//!
//! No request can start a process or add a server: the list is the one given at start
//! (or by a config read anew, [`Ui::reloader`]), and the page reaches the servers only
//! through capable's gating table.
//!
//! The crate is an [axum] application in the usual shape:
//!
//! | file | concern |
//! |---|---|
//! | `lib.rs` | [`Ui`]: bind, start the servers, serve until told to stop |
//! | `options.rs` | [`UiOptions`]: the servers, how to connect them, what to keep secret |
//! | `router.rs` | every route in one table, the gate and the scrubbing around them |
//! | `state.rs` | what the handlers share (`AppState`) |
//! | `extract.rs` | a command's typed JSON body (`Command<T>`) and a JSON answer (`Reply`) |
//! | `error.rs` | `ApiError`: every failure as `{"error": {kind, message, exitCode}}` with its status |
//! | `handlers/` | one file per area of the page; handlers use the state, never each other |
//! | `security.rs` | the gate before every route: `Host`, `Origin`, the token, its cookie and the page's secret |
//! | `bus.rs` | the numbered, resumable event stream behind `GET /api/events` |
//! | `servers.rs` | the one [`Host`](capable::host::Host) of every server, its events onto the bus, the message-log tap |
//! | `reload.rs` | a config read anew applied while the page runs ([`Reloader`]) |
//! | `calls.rs`, `watches.rs`, `views.rs`, `asks.rs` | tool calls in flight, open watches, MCP Apps views, what servers ask of the person (forms, sampling) |
//! | `pages.rs` | which pages are open, by their event streams: a page gone without a word leaves no watch behind |
//! | `schema_check.rs` | a tool's arguments against its `inputSchema`, before sending |
//! | `history.rs` | every command that reached a server, with its timing (recorded around the handlers) |
//! | `logins.rs` | OAuth logins started from the page, their redirect received here |
//! | `export.rs`, `report.rs` | a server as an `mcpServers` entry and a command; a session as one HTML report |
//! | `assets.rs`, `assets/` | the page: HTML, CSS and plain JavaScript modules, embedded, no build step |

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::future::Future;
use std::sync::Arc;

mod asks;
mod assets;
mod bus;
mod calls;
mod error;
mod exchange;
mod export;
mod extract;
mod handlers;
mod history;
mod logins;
mod options;
mod pages;
mod reload;
mod report;
mod router;
mod schema_check;
mod security;
mod servers;
mod state;
mod views;
mod watches;

pub use options::UiOptions;
pub use reload::Reloader;

/// Why the inspector could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UiError {
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// No random numbers for the token.
    #[error("no random numbers for the token: {0}")]
    Random(getrandom::Error),
    /// The server failed while serving.
    #[error("the inspector stopped: {0}")]
    Serve(std::io::Error),
}

/// The inspector, bound and with its servers connecting (see the [crate]).
pub struct Ui {
    listener: tokio::net::TcpListener,
    gate: security::Gate,
    state: Arc<state::AppState>,
}

impl Ui {
    /// Binds `127.0.0.1:PORT`, makes the run's secrets and starts connecting every
    /// server (in the background: the page shows them as they come up).
    pub async fn start(options: UiOptions) -> Result<Ui, UiError> {
        let port = options.port;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| UiError::Bind { port, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| UiError::Bind { port, source })?
            .port();
        let gate = security::Gate::new(bound).map_err(UiError::Random)?;
        let mut secrets = options.secrets.clone();
        secrets.add(gate.token());
        let state = state::AppState::start(options, secrets, bound);
        Ok(Ui {
            listener,
            gate,
            state,
        })
    }

    /// The URL to open: the page, with the token it exchanges for its cookie. It is
    /// the run's one credential: show it to the user, write it nowhere else.
    pub fn url(&self) -> String {
        self.gate.url()
    }

    /// What applies a config read anew to this inspector while it serves (its servers
    /// added, removed or changed; or why the file cannot be used, shown on the page).
    pub fn reloader(&self) -> Reloader {
        Reloader::new(self.state.clone())
    }

    /// The token alone (in the [URL](Ui::url); scripts may send it as
    /// `Authorization: Bearer TOKEN`).
    pub fn token(&self) -> &str {
        self.gate.token()
    }

    /// Serves the page until `shutdown` resolves, then disconnects every server (each
    /// session closed in order, its process group with it); `shutdown`'s output is the
    /// answer.
    pub async fn serve<T>(self, shutdown: impl Future<Output = T>) -> Result<T, UiError> {
        let router = router::router(self.state.clone(), self.gate);
        let served = tokio::select! {
            served = axum::serve(self.listener, router) => Err(match served {
                Err(e) => UiError::Serve(e),
                Ok(()) => UiError::Serve(std::io::ErrorKind::UnexpectedEof.into()),
            }),
            stop = shutdown => Ok(stop),
        };
        self.state.shutdown().await;
        served
    }
}
