//! One file per command. Each connects through [`Context`], does its work with the
//! library, and hands values to [`crate::output`].

pub mod audit;
pub mod bench;
pub mod config_host;
pub mod demo;
pub mod inspect;
pub mod prompts;
pub mod read;
pub mod resources;
pub mod servers;
pub mod skills;
pub mod tasks;
pub mod tools;
pub mod tools_all;
pub mod watch;

use std::io::Write;

use capable::{ClientOptions, GatePolicy, HttpConfig, ServerCommand, Session, Tap};
use serde_json::Value;

use crate::config::{self, ServerTarget};
use crate::exit::CliError;
use crate::flags::{Global, ServerArgs};

/// What every server command needs: the global flags, and the signals that stop it.
pub struct Context {
    pub global: Global,
    pub signals: crate::signals::Signals,
}

impl Context {
    /// Client options from the global flags.
    pub fn options(&self) -> ClientOptions {
        let progress_cap = self
            .global
            .progress_cap
            .unwrap_or(self.global.timeout.saturating_mul(10));
        let mut options = ClientOptions::default()
            .with_request_timeout(self.global.timeout)
            .with_progress_cap(progress_cap)
            .with_protocol(self.global.protocol);
        if self.global.lenient {
            options.config.gate_policy = GatePolicy::Lenient;
        }
        options.handlers = crate::elicit::handlers(&self.global);
        options.max_message_size = self.global.max_message;
        options.max_pages = self.global.max_pages.max(1);
        options.max_list_items = self.global.max_items;
        if self.global.trace {
            options.tap = Some(Tap::new(|dir, line| {
                let arrow = match dir {
                    capable::Direction::Sent => '>',
                    capable::Direction::Received => '<',
                };
                let text = String::from_utf8_lossy(line);
                let shown = crate::output::one_line(&text, 4000);
                let _ = writeln!(std::io::stderr().lock(), "{arrow} {shown}");
            }));
        }
        options
    }

    /// The server the user named: a command after `--`, `--url URL`, or `--server NAME`.
    pub fn target(&self, args: &ServerArgs) -> Result<ServerTarget, CliError> {
        let given = [
            self.global.server.is_some(),
            self.global.url.is_some(),
            !args.command.is_empty(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(CliError::Usage(
                "give one server: a command after `--`, --url URL, or --server NAME".into(),
            ));
        }
        if let Some(name) = &self.global.server {
            return Ok(config::find_server(name, self.global.config.as_deref())?);
        }
        if let Some(url) = &self.global.url {
            return Ok(ServerTarget::Http {
                url: url.clone(),
                headers: Vec::new(),
            });
        }
        match args.command.split_first() {
            Some((program, rest)) => Ok(ServerTarget::Stdio(ServerCommand::new(
                program.clone(),
                rest.iter().cloned(),
            ))),
            None => Err(CliError::Usage(
                "no server: give a stdio command after `--` (capable inspect -- node server.js), --url URL or --server NAME"
                    .into(),
            )),
        }
    }

    /// The on-disk cache of the server the user named (see [`crate::disk_cache`]).
    pub fn cache(&self, args: &ServerArgs) -> Result<crate::disk_cache::ServerCache, CliError> {
        use crate::disk_cache::{ServerCache, Use};
        let mode = match (self.global.no_cache, self.global.refresh) {
            (true, _) => Use::Off,
            (false, true) => Use::Refresh,
            (false, false) => Use::Normal,
        };
        Ok(ServerCache::new(
            &self.target(args)?,
            &self.global.headers,
            mode,
        ))
    }

    /// Connects to the server the user named. A signal during the handshake stops it
    /// (the half-started server's process group is killed as the transport is dropped).
    pub async fn connect(&self, args: &ServerArgs) -> Result<Session, CliError> {
        self.connect_with(args, self.options()).await
    }

    /// Connects with options the command adjusted (e.g. an extra tap).
    pub async fn connect_with(
        &self,
        args: &ServerArgs,
        options: ClientOptions,
    ) -> Result<Session, CliError> {
        tokio::select! {
            connected = self.connect_target(args, options) => connected,
            signal = self.signals.received() => Err(CliError::Interrupted(signal)),
        }
    }

    async fn connect_target(
        &self,
        args: &ServerArgs,
        options: ClientOptions,
    ) -> Result<Session, CliError> {
        match self.target(args)? {
            ServerTarget::Stdio(mut command) => {
                command.inherit_env = self.global.inherit_env;
                Ok(capable::connect_stdio(&command, options).await?)
            }
            ServerTarget::Http { url, headers } => {
                let parsed = reqwest_url(&url)?;
                let mut config = HttpConfig::new(parsed);
                config.headers = headers;
                config.headers.extend(self.global.headers.iter().cloned());
                Ok(capable::connect_http(config, options).await?)
            }
        }
    }
}

fn reqwest_url(url: &str) -> Result<capable::transport::http::Url, CliError> {
    let parsed = capable::transport::http::Url::parse(url)
        .map_err(|e| CliError::Usage(format!("{url:?} is not a URL: {e}")))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(CliError::Usage(format!(
            "{url:?}: the scheme must be http or https, not {other}"
        ))),
    }
}

/// Parses a `--args` JSON object.
pub fn parse_args(text: &str) -> Result<serde_json::Map<String, Value>, CliError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(CliError::Usage(format!(
            "--args must be a JSON object, not {other}"
        ))),
        Err(e) => Err(CliError::Usage(format!("--args is not valid JSON: {e}"))),
    }
}

/// Runs `work` on a connected session and closes it in order whatever happens — the
/// work's end, its failure, or a signal (which stops the work where it is).
pub async fn with_session<T>(
    ctx: &Context,
    session: Session,
    work: impl AsyncFnOnce(&Session) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let result = tokio::select! {
        done = work(&session) => done,
        signal = ctx.signals.received() => Err(CliError::Interrupted(signal)),
    };
    session.close().await;
    result
}
