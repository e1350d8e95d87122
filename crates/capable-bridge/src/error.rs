//! What can end a bridge ([`BridgeError`]) and why the server behind cannot be had
//! ([`Unavailable`]).

use capable::ErrorKind;

/// Why a bridge stopped with an error. A bridge that ends because its host left, or
/// because [`Stop`](crate::Stop) was signalled, returns `Ok` or
/// [`BridgeError::Stopped`]; these are the other ends.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The configuration cannot be served as given (a non-loopback address without a
    /// token, an empty token, an origin that is no origin); nothing was started.
    #[error("{0}")]
    Config(String),
    /// The issuer the listener was told to trust cannot be used (unreachable, no
    /// metadata, no keys); nothing was started.
    #[error("--auth-issuer {issuer}: {why}")]
    Issuer {
        /// The issuer identifier.
        issuer: String,
        /// What went wrong.
        why: String,
    },
    /// The audit log could not be opened.
    #[error("the audit log {path}: {error}")]
    AuditLog {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// The listener could not bind its address.
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// The host broke its side of the transport (a line longer than the limit, its
    /// input unreadable): the bridge ended and its server was shut down.
    #[error("{0}")]
    Host(String),
    /// [`Stop`](crate::Stop) was signalled with this number; the servers behind were
    /// shut down in order.
    #[error("stopped by signal {0}; the server was shut down")]
    Stopped(i32),
}

/// Why the server behind cannot be had (yet): what a [`Connector`](crate::Connector)
/// says when it fails. Every request of a host meanwhile is answered with it (its words
/// scrubbed of the configured secrets, and the hint after them); a restart is tried
/// again when [`Unavailable::failure`] says a restart may help.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Unavailable {
    /// The client library's error (the server did not start, refused the version,
    /// needs authorization).
    #[error(transparent)]
    Client(#[from] capable::Error),
    /// Anything else the embedding application found (its configuration, a signal):
    /// never retried.
    #[error("{message}")]
    Other {
        /// What kind of failure it amounts to.
        kind: ErrorKind,
        /// A stable machine-readable name for it (`data.kind` of the host's error).
        name: &'static str,
        /// In words.
        message: String,
        /// What to do about it, when there is something to say.
        hint: Option<String>,
    },
}

impl Unavailable {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Unavailable::Client(e) => e.kind(),
            Unavailable::Other { kind, .. } => *kind,
        }
    }

    /// Its stable machine-readable name.
    pub fn name(&self) -> &'static str {
        match self {
            Unavailable::Client(e) => e.kind().as_str(),
            Unavailable::Other { name, .. } => name,
        }
    }

    /// What the restart rule makes of it: the client library's failure class, or a
    /// configuration failure (never retried) for anything else.
    pub fn failure(&self) -> capable::internal::restart::Failure {
        match self {
            Unavailable::Client(e) => e.failure(),
            Unavailable::Other { .. } => capable::internal::restart::Failure::Config,
        }
    }
}
