//! Exit codes and how each failure is put into words.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | ok |
//! | 1 | unexpected failure |
//! | 2 | usage (bad flags, unknown server name, bad JSON argument, a file refused or unreadable) |
//! | 3 | transport failure, server crash, or timeout |
//! | 4 | protocol version refused |
//! | 5 | capability not offered (refused locally, nothing sent) |
//! | 6 | contract violation (the server broke its own declaration or the protocol) |
//! | 7 | JSON-RPC error from the server (a task that failed with one included) |
//! | 8 | authorization required (no usable token and no way to log in here) or failed |
//! | 9 | tool error: the tool ran and its result says `isError: true` (the result is printed, on stdout as JSON with `--json`) |
//! | 128+N | stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; a task in progress is cancelled first) |

use capable::auth::AuthError;
use capable::internal::{Flag, NegotiationError, Refusal};
use capable::{Error, ErrorKind};

use capable::config::ConfigError;

/// A failure of a command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// From the client library.
    #[error(transparent)]
    Client(#[from] Error),
    /// From the config file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Bad usage.
    #[error("{0}")]
    Usage(String),
    /// A file the command was given could not be read, or was refused for what it is
    /// (a FIFO, a device, a directory, a symlink loop, too large): `what` says which
    /// file it was (`--args`, `oauth.privateKeyFile`).
    #[error("{what}: {error}")]
    File {
        /// Which file, in the user's words.
        what: String,
        /// Why.
        #[source]
        error: capable::file::FileError,
    },
    /// Not offered by the server, in words that say what to pass instead (nothing
    /// was sent).
    #[error("{0}")]
    NotOffered(String),
    /// The command's verdict: the server broke its contract (the evidence is already
    /// printed).
    #[error("{0}")]
    Violations(String),
    /// The tool ran and reported its own failure (`isError: true`); its result is
    /// printed already, as the command's output.
    #[error("the tool {tool} reported an error (isError: true)")]
    ToolError {
        /// The tool's name.
        tool: String,
    },
    /// The bridge's host broke its side of the transport (a line past
    /// `--max-message`, its input unreadable): the bridge ended, its server shut down.
    #[error("{0}")]
    Host(String),
    /// A signal stopped the command; the session was closed in order.
    #[error("stopped by signal {0}; the server was shut down")]
    Interrupted(i32),
    /// A signal stopped a command that talks to no server of its own (`auth`).
    #[error("stopped by signal {0}")]
    Stopped(i32),
    /// Nobody reads stdout any more (`| head`): the command stopped quietly.
    #[error("the output was closed")]
    OutputClosed,
    /// A check of many servers found some unhealthy (each one's failure is printed
    /// already): the highest exit code among them.
    #[error("{summary}")]
    Unhealthy {
        /// What was found, in words.
        summary: String,
        /// The exit code.
        code: i32,
    },
}

impl From<AuthError> for CliError {
    fn from(e: AuthError) -> Self {
        CliError::Client(Error::Auth(e))
    }
}

impl CliError {
    /// A failure of the credential store: a refused file as the library reports it
    /// (the message names the file), anything else with the store's name.
    pub fn store(store: &dyn capable::auth::CredentialStore, e: std::io::Error) -> CliError {
        match capable::file::Refused::within(&e) {
            Some(refused) => CliError::File {
                what: "the token store".into(),
                error: capable::file::FileError::Refused(refused.clone()),
            },
            None => CliError::Usage(format!("the token store {}: {e}", store.describe())),
        }
    }

    /// What kind of failure it is: the library's [`ErrorKind`] of a client error, the
    /// kind each of the CLI's own failures amounts to. One place decides both the exit
    /// code and the `--json` kind, from the error's type alone (never from its words).
    pub fn error_kind(&self) -> ErrorKind {
        match self {
            CliError::Usage(_) | CliError::Config(_) | CliError::File { .. } => ErrorKind::Usage,
            CliError::NotOffered(_) => ErrorKind::NotOffered,
            CliError::Violations(_) => ErrorKind::Violation,
            CliError::ToolError { .. } => ErrorKind::ToolError,
            CliError::Host(_) => ErrorKind::Transport,
            CliError::Client(e) => e.kind(),
            CliError::Interrupted(_)
            | CliError::Stopped(_)
            | CliError::OutputClosed
            | CliError::Unhealthy { .. } => ErrorKind::Unexpected,
        }
    }

    /// The process exit code: `128 + signal` after a signal, 0 when nobody reads the
    /// output any more.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Interrupted(signal) | CliError::Stopped(signal) => {
                crate::signals::exit_code(*signal)
            }
            CliError::OutputClosed => 0,
            CliError::Unhealthy { code, .. } => *code,
            _ => self.error_kind().exit_code(),
        }
    }

    /// A stable machine-readable kind for `--json`.
    pub fn kind(&self) -> &'static str {
        match self {
            CliError::Interrupted(_) | CliError::Stopped(_) => "interrupted",
            CliError::OutputClosed => "output_closed",
            CliError::Unhealthy { .. } => "unhealthy",
            _ => self.error_kind().as_str(),
        }
    }

    /// What the user can do about it, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        let CliError::Client(e) = self else {
            return match self {
                CliError::Config(ConfigError::NoFile { .. }) => {
                    Some("pass --config FILE, or give the server command after `--`".into())
                }
                _ => None,
            };
        };
        Some(match e {
            Error::Refused(Refusal::FlagNotDeclared { flag: Flag::Subscribe, .. }) => {
                "reading needs only `resources`: use `capable read URI` instead".into()
            }
            Error::Refused(Refusal::MarkedBroken { .. }) => return None,
            Error::Refused(_) => "`capable inspect` shows what the server declares; --lenient sends undeclared methods anyway".into(),
            Error::Negotiation(NegotiationError::UnsupportedVersion { .. }) => {
                "the server must answer one of the supported versions; pin one with --protocol VERSION if the server needs it".into()
            }
            Error::Timeout { .. } | Error::Negotiation(NegotiationError::Timeout { .. }) => {
                "raise --timeout if the server is just slow".into()
            }
            Error::Transport(capable::transport::TransportError::MessageTooLarge { .. }) => {
                "raise --max-message if the server's messages are really that large".into()
            }
            Error::Violation(_) => "report it to the server's author with `capable --json` output as evidence".into(),
            Error::ListTooLong { .. } => "raise --max-pages or --max-items if the list is really that long".into(),
            Error::Auth(a) if a.is_authorization_required() => {
                "log in on a terminal with `capable auth login` and the same --url or --server (or --login paste|headless|device here)".into()
            }
            Error::Auth(capable::auth::AuthError::InsufficientScope(_)) => {
                "log in again asking for the scope the server needs: `capable auth login --scope SCOPE` with the same --url or --server (--scope adds to what the server lists)".into()
            }
            Error::Http { status: 401 | 403, .. } => {
                "`capable auth login` with the same --url or --server stores a token, or pass --header 'Authorization: …'".into()
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use capable::internal::Method;

    use super::*;

    #[test]
    fn a_client_error_has_the_library_kind_and_its_exit_code() {
        let e = CliError::Client(Error::Refused(Refusal::MarkedBroken {
            method: Method::Subscribe,
        }));
        assert_eq!((e.exit_code(), e.kind()), (5, "capability_not_offered"));
        let usage = CliError::Usage("no".into());
        assert_eq!((usage.exit_code(), usage.kind()), (2, "usage"));
        assert_eq!(CliError::OutputClosed.exit_code(), 0);
        let tool = CliError::ToolError {
            tool: "nope".into(),
        };
        assert_eq!((tool.exit_code(), tool.kind()), (9, "tool_error"));
        let stopped = CliError::Interrupted(libc::SIGINT);
        assert_eq!((stopped.exit_code(), stopped.kind()), (130, "interrupted"));
    }

    #[test]
    fn authorization_required_says_how_to_log_in() {
        let required = Error::Auth(capable::auth::AuthError::AuthorizationRequired {
            server: "https://mcp.test/mcp".into(),
            why: capable::auth::Required::NoToken,
        });
        assert!(CliError::Client(required)
            .hint()
            .unwrap()
            .contains("capable auth login"));
        let scope = Error::Auth(capable::auth::AuthError::InsufficientScope(
            capable::auth::ScopeRefusal {
                challenged: vec![],
                held: vec!["mcp:read".into()],
                description: Some("Required scope: mcp:write".into()),
                step_ups: 0,
            },
        ));
        assert!(CliError::Client(scope).hint().unwrap().contains("--scope"));
    }
}
