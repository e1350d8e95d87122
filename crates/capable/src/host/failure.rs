//! What a client error means for restarting: each [`Error`] mapped onto the core's
//! [`Failure`], whose [`is_retryable`](Failure::is_retryable) the restart decision
//! ([`capable_core::internal::restart`]) reads. The mapping goes by the error's type and its
//! cause, never by its words.

use std::io::ErrorKind;

use capable_core::internal::restart::Failure;
use capable_core::NegotiationError;

use crate::error::Error;

impl Error {
    /// What this error means for restarting the server it came from: a crash
    /// ([`Failure::Exited`]), a broken transport, a timeout and an HTTP 5xx or 404 may
    /// be retried; a refused version, a violation, a refused `initialize`, a command
    /// that cannot be found and a 401/403 may not.
    ///
    /// ```
    /// use capable::Error;
    /// use capable::internal::restart::Failure;
    /// let crash = Error::ServerExited { status: None, stderr: String::new() };
    /// assert_eq!(crash.failure(), Failure::Exited);
    /// assert!(crash.failure().is_retryable());
    /// ```
    pub fn failure(&self) -> Failure {
        match self {
            Error::ServerExited { .. } => Failure::Exited,
            Error::Transport(_) | Error::ListenEnded { .. } | Error::Closed => Failure::Transport,
            Error::Timeout { .. } => Failure::Timeout,
            Error::Http { status, .. } => Failure::Http(*status),
            Error::Negotiation(n) => match n {
                NegotiationError::UnsupportedVersion { .. }
                | NegotiationError::NoCommonVersion { .. }
                | NegotiationError::VersionRefused { .. }
                | NegotiationError::EraUnavailable { .. } => Failure::VersionRefused,
                NegotiationError::Timeout { .. } => Failure::Timeout,
                NegotiationError::MalformedAnswer { .. } => Failure::Violation,
                _ => Failure::Refused,
            },
            Error::Spawn(e) => match e.source.kind() {
                // The command or its directory is missing, or may not run: the config's
                // problem, not the moment's.
                ErrorKind::NotFound | ErrorKind::PermissionDenied | ErrorKind::InvalidInput => {
                    Failure::Config
                }
                _ => Failure::Transport,
            },
            Error::InvalidOptions(_) => Failure::Config,
            Error::Violation(_) | Error::MalformedResult { .. } => Failure::Violation,
            // What fails one request (a JSON-RPC error, a local refusal, a task) does
            // not end a connection; should it be given as a reason, it is no reason to
            // try again.
            _ => Failure::Refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use capable_core::{Method, ProtocolVersion};

    use super::*;
    use crate::transport::TransportError;

    #[test]
    fn crashes_timeouts_and_lost_sessions_may_be_retried_refusals_may_not() {
        let retryable = [
            Error::ServerExited {
                status: None,
                stderr: String::new(),
            },
            Error::Transport(TransportError::Broken("the stream ended".into())),
            Error::Negotiation(NegotiationError::Timeout {
                method: Method::Initialize,
                after: Duration::from_secs(1),
            }),
            Error::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                status: 404,
                body: String::new(),
            },
            Error::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                status: 503,
                body: String::new(),
            },
        ];
        for e in retryable {
            assert!(e.failure().is_retryable(), "{e}");
        }
        let spawn = |kind| {
            Error::from(crate::transport::stdio::SpawnError {
                command: "nope".into(),
                source: std::io::Error::from(kind),
            })
        };
        let final_ones = [
            Error::Negotiation(NegotiationError::UnsupportedVersion {
                proposed: ProtocolVersion::LATEST_LEGACY,
                answered: "1999-01-01".into(),
                supported: vec![],
            }),
            Error::Negotiation(NegotiationError::MalformedAnswer {
                method: "initialize",
                detail: "no capabilities".into(),
            }),
            Error::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                status: 401,
                body: String::new(),
            },
            spawn(ErrorKind::NotFound),
            Error::InvalidOptions("x".into()),
        ];
        for e in final_ones {
            assert!(!e.failure().is_retryable(), "{e}");
        }
        assert!(spawn(ErrorKind::WouldBlock).failure().is_retryable());
    }
}
