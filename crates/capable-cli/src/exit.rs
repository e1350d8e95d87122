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
//! | 128+N | stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; a task in progress is cancelled first) |

use capable::auth::AuthError;
use capable::core::{Flag, NegotiationError, Refusal};
use capable::Error;

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

/// What kind of failure a [`CliError`] is: one place decides both the exit code and
/// the `--json` kind, from the error's type alone (never from its words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Usage,
    Unexpected,
    Transport,
    Timeout,
    ServerExited,
    VersionRefused,
    NotOffered,
    Violation,
    Rpc,
    AuthRequired,
    AuthFailed,
}

impl Class {
    fn of_client(e: &Error) -> Class {
        match e {
            Error::Refused(_) => Class::NotOffered,
            Error::Negotiation(n) => match n {
                NegotiationError::UnsupportedVersion { .. }
                | NegotiationError::NoCommonVersion { .. }
                | NegotiationError::VersionRefused { .. }
                | NegotiationError::EraUnavailable { .. } => Class::VersionRefused,
                NegotiationError::MalformedAnswer { .. } => Class::Violation,
                NegotiationError::Timeout { .. } => Class::Timeout,
                NegotiationError::InitializeRefused(_)
                | NegotiationError::MissingClientCapability { .. } => Class::Rpc,
                _ => Class::Unexpected,
            },
            Error::Rpc { .. } => Class::Rpc,
            Error::Violation(_)
            | Error::Skill(_)
            | Error::MalformedResult { .. }
            | Error::TooManyInputRounds { .. }
            | Error::InputUnanswered { .. } => Class::Violation,
            Error::Timeout { .. } | Error::TaskTimedOut { .. } => Class::Timeout,
            Error::TaskFailed { .. } | Error::TaskCancelled { .. } => Class::Rpc,
            Error::ServerExited { .. } => Class::ServerExited,
            // A token store capable will not read is the user's to mend, like a flag.
            Error::Auth(AuthError::StoreRefused(_)) => Class::Usage,
            Error::Auth(a) if a.is_authorization_required() => Class::AuthRequired,
            Error::Auth(_) => Class::AuthFailed,
            Error::InvalidOptions(_) => Class::Usage,
            Error::ListTooLong { .. } => Class::Unexpected,
            Error::Http { .. }
            | Error::ListenEnded { .. }
            | Error::Transport(_)
            | Error::Spawn(_)
            | Error::Closed => Class::Transport,
            _ => Class::Unexpected,
        }
    }

    fn code(self) -> i32 {
        match self {
            Class::Usage => 2,
            Class::Unexpected => 1,
            Class::Transport | Class::Timeout | Class::ServerExited => 3,
            Class::VersionRefused => 4,
            Class::NotOffered => 5,
            Class::Violation => 6,
            Class::Rpc => 7,
            Class::AuthRequired | Class::AuthFailed => 8,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Class::Usage => "usage",
            Class::Unexpected => "unexpected",
            Class::Transport => "transport",
            Class::Timeout => "timeout",
            Class::ServerExited => "server_exited",
            Class::VersionRefused => "protocol_version_refused",
            Class::NotOffered => "capability_not_offered",
            Class::Violation => "contract_violation",
            Class::Rpc => "rpc_error",
            Class::AuthRequired => "authorization_required",
            Class::AuthFailed => "authorization_failed",
        }
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

    fn class(&self) -> Class {
        match self {
            CliError::Usage(_) | CliError::Config(_) | CliError::File { .. } => Class::Usage,
            CliError::NotOffered(_) => Class::NotOffered,
            CliError::Violations(_) => Class::Violation,
            CliError::Client(e) => Class::of_client(e),
            CliError::Interrupted(_)
            | CliError::Stopped(_)
            | CliError::OutputClosed
            | CliError::Unhealthy { .. } => Class::Unexpected,
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
            _ => self.class().code(),
        }
    }

    /// A stable machine-readable kind for `--json`.
    pub fn kind(&self) -> &'static str {
        match self {
            CliError::Interrupted(_) | CliError::Stopped(_) => "interrupted",
            CliError::OutputClosed => "output_closed",
            CliError::Unhealthy { .. } => "unhealthy",
            _ => self.class().kind(),
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
    use std::time::Duration;

    use capable::core::{Method, RpcError};
    use capable::ProtocolVersion;

    use super::*;

    fn code(e: Error) -> (i32, &'static str) {
        let e = CliError::Client(e);
        (e.exit_code(), e.kind())
    }

    fn rpc(code: i64, message: &str) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    #[test]
    fn an_http_failure_is_a_transport_failure_never_a_json_rpc_error() {
        for status in [401, 403, 500, 502] {
            let e = Error::Http {
                url: "https://mcp.test/mcp".into(),
                status,
                body: "no".into(),
            };
            assert_eq!(code(e), (3, "transport"), "HTTP {status}");
        }
        let rpc_error = Error::Rpc {
            method: Method::ListTools,
            error: rpc(-32603, "boom"),
        };
        assert_eq!(code(rpc_error), (7, "rpc_error"));
    }

    #[test]
    fn a_version_refusal_is_told_by_its_type_not_its_words() {
        let typed = Error::Negotiation(NegotiationError::VersionRefused {
            proposed: ProtocolVersion::V2025_11_25,
            server: vec!["2024-11-05".into()],
            error: Box::new(rpc(-32602, "no")),
        });
        assert_eq!(code(typed), (4, "protocol_version_refused"));
        // A refusal that only talks about versions is a plain refusal.
        let words = Error::Negotiation(NegotiationError::InitializeRefused(rpc(
            -32602,
            "unsupported protocol version",
        )));
        assert_eq!(code(words), (7, "rpc_error"));
    }

    #[test]
    fn authorization_required_has_its_own_code() {
        let required = Error::Auth(capable::auth::AuthError::AuthorizationRequired {
            server: "https://mcp.test/mcp".into(),
            why: capable::auth::Required::NoToken,
        });
        assert_eq!(code(required.clone()), (8, "authorization_required"));
        assert!(CliError::Client(required)
            .hint()
            .unwrap()
            .contains("capable auth login"));
        let failed = Error::Auth(capable::auth::AuthError::Refused("no".into()));
        assert_eq!(code(failed), (8, "authorization_failed"));
        let scope = Error::Auth(capable::auth::AuthError::InsufficientScope(
            capable::auth::ScopeRefusal {
                challenged: vec![],
                held: vec!["mcp:read".into()],
                description: Some("Required scope: mcp:write".into()),
                step_ups: 0,
            },
        ));
        assert_eq!(code(scope.clone()), (8, "authorization_failed"));
        assert!(CliError::Client(scope).hint().unwrap().contains("--scope"));
        // A token store refused for what it is is the user's to mend: a usage error.
        let store = Error::Auth(capable::auth::AuthError::StoreRefused(
            capable::file::Refused {
                path: "credentials.json".into(),
                kind: capable::file::FileKind::Credentials,
                reason: capable::file::Reason::OpenToOthers { mode: 0o644 },
            },
        ));
        assert_eq!(code(store), (2, "usage"));
    }

    #[test]
    fn timeouts_crashes_and_local_refusals_have_their_own_codes() {
        let handshake = Error::Negotiation(NegotiationError::Timeout {
            method: Method::Initialize,
            after: Duration::from_secs(1),
        });
        assert_eq!(code(handshake), (3, "timeout"));
        let request = Error::Timeout {
            method: Method::ReadResource,
            after: Duration::from_secs(1),
        };
        assert_eq!(code(request), (3, "timeout"));
        let exited = Error::ServerExited {
            status: None,
            stderr: String::new(),
        };
        assert_eq!(code(exited), (3, "server_exited"));
        let refused = Error::Refused(Refusal::MarkedBroken {
            method: Method::Subscribe,
        });
        assert_eq!(code(refused), (5, "capability_not_offered"));
        assert_eq!(code(Error::InvalidOptions("x".into())), (2, "usage"));
    }
}
