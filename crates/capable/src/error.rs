//! Every way a client operation can fail, each saying what was expected and what came.

use std::time::Duration;

use capable_core::{Method, NegotiationError, Refusal, RpcError, Violation};

use crate::transport::TransportError;

/// A failed client operation.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// Refused locally: the server did not declare what the method needs. Nothing was
    /// sent.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The handshake failed (unsupported version, refused `initialize`, …).
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
    /// No answer in time; `notifications/cancelled` was sent.
    #[error("{method} got no answer within {}; the request was cancelled", humanize(*after))]
    Timeout {
        /// The request's method.
        method: Method,
        /// How long the client waited.
        after: Duration,
    },
    /// The handshake got no answer in time.
    #[error("the server did not answer the handshake within {}", humanize(*after))]
    HandshakeTimeout {
        /// How long the client waited.
        after: Duration,
    },
    /// The server process ended (or closed its output).
    #[error("the server exited ({status}){}", stderr_hint(stderr))]
    ServerExited {
        /// How it exited (`exit code 1`, `killed by signal 9`, `still running`).
        status: String,
        /// The last lines of its stderr.
        stderr: String,
    },
    /// The transport failed.
    #[error("transport failure: {0}")]
    Transport(#[from] TransportError),
    /// The server could not be started.
    #[error("{0}")]
    Spawn(String),
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
    /// The session was closed by the host.
    #[error("the session is closed")]
    Closed,
}

fn stderr_hint(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        let last: Vec<&str> = stderr.lines().rev().take(5).collect();
        let last: Vec<&str> = last.into_iter().rev().collect();
        format!("; its stderr ended with:\n  {}", last.join("\n  "))
    }
}

/// `1.5s`, `250ms`, `2m`.
pub fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms % 1000 == 0 && ms < 120_000 {
        format!("{}s", ms / 1000)
    } else if ms < 120_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}m{}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

impl Error {
    /// Whether the server said the resource does not exist (`-32002` in legacy
    /// revisions, `-32602` in 2026-07-28; both are accepted).
    pub fn is_resource_not_found(&self) -> bool {
        use capable_core::jsonrpc::codes;
        matches!(self, Error::Rpc { method: Method::ReadResource, error }
            if error.code == codes::RESOURCE_NOT_FOUND || error.code == codes::INVALID_PARAMS)
    }

    /// Whether the error came from the server's side of the wire (as opposed to a local
    /// refusal or a transport failure).
    pub fn is_server_answer(&self) -> bool {
        matches!(self, Error::Rpc { .. } | Error::Violation(_))
    }
}
