//! Every way a client operation can fail, each saying what was expected and what came,
//! and keeping its cause: a refusal keeps the gate's [`Refusal`], a failed spawn its
//! [`std::io::Error`], a crash the server's [`ExitStatus`], an HTTP failure its status
//! and body. Match on the variant, never on the message; [`Error::kind`] sorts them into
//! the few kinds a program acts on ([`ErrorKind`]: an exit code, a JSON `kind`).

use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use capable_core::internal::time::humanize;
use capable_core::{Method, NegotiationError, Refusal, RpcError, Violation};

use crate::auth::AuthError;
use crate::transport::stdio::SpawnError;
use crate::transport::TransportError;

mod kind;
pub use capable_core::internal::skills::SkillError;
pub use kind::ErrorKind;

/// A failed client operation.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Refused locally: the server did not declare what the method needs. Nothing was
    /// sent.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The handshake failed (unsupported version, refused `initialize`, no answer, …).
    #[error(transparent)]
    Negotiation(#[from] NegotiationError),
    /// The server answered with a JSON-RPC error.
    #[error("the server answered {method} with an error: {error}")]
    Rpc {
        /// The request's method.
        method: Method,
        /// The error.
        error: RpcError,
    },
    /// The server declared a capability and then refused its method.
    #[error("{0}")]
    Violation(Box<Violation>),
    /// The server's result does not have the shape the protocol requires.
    #[error("the server's answer to {method} is malformed: {detail}")]
    MalformedResult {
        /// The request's method.
        method: Method,
        /// What is wrong.
        detail: String,
    },
    /// A list went past a bound of [`ClientOptions`](crate::ClientOptions) (pages,
    /// items or bytes); what was collected is dropped.
    #[error("{method}: the list went on past {reached}; stopped")]
    ListTooLong {
        /// The list method.
        method: Method,
        /// Which bound, in words.
        reached: String,
    },
    /// No answer in time; `notifications/cancelled` was sent.
    #[error("{method} got no answer within {}; the request was cancelled", humanize(*after))]
    Timeout {
        /// The request's method.
        method: Method,
        /// How long the client waited.
        after: Duration,
    },
    /// The server process ended, or closed its output. The message names the line of
    /// its stderr that names the error ([`Error::stderr_cause`]), then its last lines.
    #[error("the server {}{}", exited(status), stderr_hint(stderr))]
    ServerExited {
        /// How it exited; `None` when it closed its output but had not exited within
        /// a grace period.
        status: Option<ExitStatus>,
        /// Its stderr, bounded: the first lines, `… N lines left out …` where some
        /// fell between, the last lines (see [`capable_core::internal::stderr::StderrLog`]).
        stderr: String,
    },
    /// An HTTP server answered a request with an HTTP error and no JSON-RPC answer.
    #[error("HTTP {status} from {url}{}{}", auth_hint(*status), body_hint(body))]
    Http {
        /// The URL of the request.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body, as text.
        body: String,
    },
    /// Authorization failed, or is needed and impossible here (see
    /// [`AuthError::is_authorization_required`]).
    #[error("authorization failed: {0}")]
    Auth(#[from] AuthError),
    /// The transport failed.
    #[error("transport failure: {0}")]
    Transport(#[from] TransportError),
    /// The server could not be started.
    #[error(transparent)]
    Spawn(Arc<SpawnError>),
    /// The host's options contradict each other (nothing was sent).
    #[error("invalid client options: {0}")]
    InvalidOptions(String),
    /// A `subscriptions/listen` stream was ended by the server.
    #[error("the server ended the subscription stream{}", if reason.is_empty() { String::new() } else { format!(": {reason}") })]
    ListenEnded {
        /// The reason it gave.
        reason: String,
    },
    /// The server asked for input more times than allowed for one request.
    #[error("{method}: the server asked for input {rounds} times; stopped")]
    TooManyInputRounds {
        /// The request's method.
        method: Method,
        /// How many rounds were answered.
        rounds: usize,
    },
    /// The server asked for input the host could not give.
    #[error("{method}: the server asked for {input}, which the host does not handle: {error}")]
    InputUnanswered {
        /// The request's method.
        method: Method,
        /// The input request's method (`elicitation/create`, …).
        input: String,
        /// Why.
        error: Box<RpcError>,
    },
    /// A skill file is not what its entry describes (or the skill cannot be
    /// verified at all): it was not used.
    #[error(transparent)]
    Skill(#[from] capable_core::internal::skills::SkillError),
    /// A task ended with a JSON-RPC error.
    #[error("task {task_id} failed{}: {error}", message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
    TaskFailed {
        /// The task.
        task_id: String,
        /// The error it failed with.
        error: serde_json::Value,
        /// The server's status message.
        message: Option<String>,
    },
    /// A task was cancelled before it completed.
    #[error("task {task_id} was cancelled")]
    TaskCancelled {
        /// The task.
        task_id: String,
    },
    /// A task did not end within the host's deadline; `tasks/cancel` was sent.
    #[error("task {task_id} did not finish within {}; it was cancelled", humanize(*after))]
    TaskTimedOut {
        /// The task.
        task_id: String,
        /// How long the host waited.
        after: Duration,
    },
    /// The session was closed by the host.
    #[error("the session is closed")]
    Closed,
}

impl From<SpawnError> for Error {
    fn from(e: SpawnError) -> Self {
        Error::Spawn(Arc::new(e))
    }
}

/// How a server exited, in words: `exited (exit code 3)`, `exited (killed by signal 9)`.
pub fn describe_exit(status: &ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => status.to_string(),
    }
}

fn exited(status: &Option<ExitStatus>) -> String {
    match status {
        Some(status) => format!("exited ({})", describe_exit(status)),
        None => "closed its output but is still running".into(),
    }
}

/// The line that names the error (when one does and it is not among the last lines
/// shown), then the last lines of its stderr.
fn stderr_hint(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        return String::new();
    }
    let last: Vec<&str> = stderr.lines().rev().take(5).collect();
    let last: Vec<&str> = last.into_iter().rev().collect();
    let cause = match capable_core::internal::stderr::cause_of(stderr) {
        Some(cause) if !last.contains(&cause) => format!(": {}", cause.trim()),
        _ => String::new(),
    };
    format!("{cause}; its stderr ended with:\n  {}", last.join("\n  "))
}

fn auth_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (the server wants authorization)",
        _ => "",
    }
}

fn body_hint(body: &str) -> String {
    if body.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", body.trim())
    }
}

impl Error {
    /// The line of an exited server's stderr that names its error (`Error: Cannot find
    /// module …`, a Python exception, a Rust panic; see
    /// [`capable_core::internal::stderr::Cause`]), when it wrote one.
    ///
    /// ```
    /// let stderr = "node:internal/modules/cjs/loader:1228\n  throw err;\n\n\
    ///     Error: Cannot find module 'x'\n    at Module._resolveFilename\n    at Module._load\n\
    ///     {\n  code: 'MODULE_NOT_FOUND'\n}\n\nNode.js v20.11.0";
    /// let e = capable::Error::ServerExited { status: None, stderr: stderr.into() };
    /// assert_eq!(e.stderr_cause(), Some("Error: Cannot find module 'x'"));
    /// // Named first, then the last lines (which do not hold it).
    /// let message = e.to_string();
    /// assert!(message.contains(": Error: Cannot find module 'x'; its stderr ended with:"));
    /// assert!(message.ends_with("Node.js v20.11.0"));
    /// ```
    pub fn stderr_cause(&self) -> Option<&str> {
        match self {
            Error::ServerExited { stderr, .. } => capable_core::internal::stderr::cause_of(stderr),
            _ => None,
        }
    }

    /// Whether the server said the resource does not exist (`-32002` in legacy
    /// revisions, `-32602` in 2026-07-28; both are accepted).
    pub fn is_resource_not_found(&self) -> bool {
        use capable_core::internal::jsonrpc::codes;
        matches!(self, Error::Rpc { method: Method::ReadResource, error }
            if error.code == codes::RESOURCE_NOT_FOUND || error.code == codes::INVALID_PARAMS)
    }

    /// Whether the error came from the server's side of the wire (as opposed to a local
    /// refusal or a transport failure).
    pub fn is_server_answer(&self) -> bool {
        matches!(self, Error::Rpc { .. } | Error::Violation(_))
    }
}
