//! Exit codes and how each failure is put into words.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | ok |
//! | 1 | unexpected failure |
//! | 2 | usage (bad flags, unknown server name, bad JSON argument) |
//! | 3 | transport failure, server crash, or timeout |
//! | 4 | protocol version refused |
//! | 5 | capability not offered (refused locally, nothing sent) |
//! | 6 | contract violation (the server broke its own declaration or the protocol) |
//! | 7 | JSON-RPC error from the server |

use capable::core::{Flag, NegotiationError, Refusal};
use capable::Error;

use crate::config::ConfigError;

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
    /// Not offered by the server, in words that say what to pass instead (nothing
    /// was sent).
    #[error("{0}")]
    NotOffered(String),
    /// The command's verdict: the server broke its contract (the evidence is already
    /// printed).
    #[error("{0}")]
    Violations(String),
    /// Anything else.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl CliError {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) | CliError::Config(_) => 2,
            CliError::Other(_) => 1,
            CliError::NotOffered(_) => 5,
            CliError::Violations(_) => 6,
            CliError::Client(e) => match e {
                Error::Refused(_) => 5,
                Error::Negotiation(n) => match n {
                    NegotiationError::UnsupportedVersion { .. }
                    | NegotiationError::NoCommonVersion { .. }
                    | NegotiationError::EraUnavailable { .. } => 4,
                    NegotiationError::InitializeRefused(err) if mentions_version(&err.message) => 4,
                    NegotiationError::InitializeRefused(_)
                    | NegotiationError::MissingClientCapability { .. } => 7,
                    NegotiationError::MalformedAnswer { .. } => 6,
                },
                Error::Rpc { .. } => 7,
                Error::Violation(_)
                | Error::MalformedResult { .. }
                | Error::TooManyInputRounds { .. }
                | Error::InputUnanswered { .. } => 6,
                Error::ListenEnded { .. }
                | Error::Timeout { .. }
                | Error::HandshakeTimeout { .. }
                | Error::ServerExited { .. }
                | Error::Transport(_)
                | Error::Spawn(_)
                | Error::Closed => 3,
            },
        }
    }

    /// A stable machine-readable kind for `--json`.
    pub fn kind(&self) -> &'static str {
        match self {
            CliError::Usage(_) | CliError::Config(_) => "usage",
            CliError::Other(_) => "unexpected",
            CliError::NotOffered(_) => "capability_not_offered",
            CliError::Violations(_) => "contract_violation",
            CliError::Client(e) => match e {
                Error::Refused(_) => "capability_not_offered",
                Error::Negotiation(_) if self.exit_code() == 4 => "protocol_version_refused",
                Error::Negotiation(NegotiationError::MalformedAnswer { .. }) => {
                    "contract_violation"
                }
                Error::Negotiation(_) => "rpc_error",
                Error::Rpc { .. } => "rpc_error",
                Error::Violation(_)
                | Error::MalformedResult { .. }
                | Error::TooManyInputRounds { .. }
                | Error::InputUnanswered { .. } => "contract_violation",
                Error::ListenEnded { .. } => "transport",
                Error::Timeout { .. } | Error::HandshakeTimeout { .. } => "timeout",
                Error::ServerExited { .. } => "server_exited",
                Error::Transport(_) | Error::Spawn(_) | Error::Closed => "transport",
            },
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
            Error::Timeout { .. } | Error::HandshakeTimeout { .. } => "raise --timeout if the server is just slow".into(),
            Error::Transport(capable::transport::TransportError::MessageTooLarge { .. }) => {
                "raise --max-message if the server's messages are really that large".into()
            }
            Error::Violation(_) => "report it to the server's author with `capable --json` output as evidence".into(),
            _ => return None,
        })
    }
}

fn mentions_version(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("version")
}
