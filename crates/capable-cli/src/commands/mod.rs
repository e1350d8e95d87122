//! One file per command. Each connects through [`Context`], does its work with the
//! library, and hands values to [`crate::output`].

pub mod demo;
pub mod inspect;
pub mod prompts;
pub mod read;
pub mod resources;
pub mod tools;

use std::io::Write;

use capable::{ClientOptions, GatePolicy, ServerCommand, Session, Tap};
use serde_json::Value;

use crate::config;
use crate::exit::CliError;
use crate::flags::{Global, ServerArgs};

/// What every server command needs: the global flags.
pub struct Context {
    pub global: Global,
}

impl Context {
    /// Client options from the global flags.
    pub fn options(&self) -> ClientOptions {
        let mut options = ClientOptions {
            request_timeout: self.global.timeout,
            ..Default::default()
        };
        options.config.protocol = self.global.protocol;
        if self.global.lenient {
            options.config.gate_policy = GatePolicy::Lenient;
        }
        options.handlers = crate::elicit::handlers(&self.global);
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

    /// The server the user named: a command after `--`, or `--server NAME`.
    pub fn server(&self, args: &ServerArgs) -> Result<ServerCommand, CliError> {
        match (&self.global.server, args.command.split_first()) {
            (Some(_), Some(_)) => Err(CliError::Usage(
                "give either --server NAME or a command after `--`, not both".into(),
            )),
            (Some(name), None) => Ok(config::find_server(name, self.global.config.as_deref())?),
            (None, Some((program, rest))) => Ok(ServerCommand::new(program.clone(), rest.iter().cloned())),
            (None, None) => Err(CliError::Usage(
                "no server: give a stdio command after `--` (capable inspect -- node server.js) or --server NAME".into(),
            )),
        }
    }

    /// Connects to the server the user named.
    pub async fn connect(&self, args: &ServerArgs) -> Result<Session, CliError> {
        let command = self.server(args)?;
        Ok(capable::connect_stdio(&command, self.options()).await?)
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

/// Runs `work` on a connected session and closes it whatever happens.
pub async fn with_session<T>(
    session: Session,
    work: impl AsyncFnOnce(&Session) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let result = work(&session).await;
    session.close().await;
    result
}
