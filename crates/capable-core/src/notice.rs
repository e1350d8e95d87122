//! Things worth a warning that do not stop the connection.

use crate::jsonrpc::RequestId;

/// Something the server did that capable tolerated and the host may want to log.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Notice {
    /// A line that is not a usable JSON-RPC message was skipped.
    #[error("skipped a line from the server that is not a JSON-RPC message: {reason}")]
    SkippedLine {
        /// Why it was skipped.
        reason: String,
    },
    /// A response whose id matches no request in flight was dropped.
    #[error("dropped a response for unknown request id {id}")]
    UnknownResponseId {
        /// The id it carried.
        id: RequestId,
    },
    /// A response arrived for a request that was already given up (timed out or
    /// cancelled); it was dropped.
    #[error("dropped a late response for request id {id}")]
    LateResponse {
        /// The id it carried.
        id: RequestId,
    },
    /// A server request arrived before the handshake finished and was not answered.
    #[error("ignored server request {method} sent before the handshake finished")]
    RequestBeforeReady {
        /// Its method.
        method: String,
    },
    /// A server request the client does not handle was answered with -32601.
    #[error("answered unsupported server request {method} with method-not-found")]
    UnsupportedServerRequest {
        /// Its method.
        method: String,
    },
    /// Progress for a token that matches no request in flight.
    #[error("dropped progress for unknown token {token}")]
    UnknownProgress {
        /// The token it carried.
        token: String,
    },
    /// The modern probe got no usable answer and the client fell back to `initialize`.
    #[error("server/discover was not answered as a modern server would ({why}); falling back to initialize")]
    LegacyFallback {
        /// What came instead.
        why: String,
    },
    /// The server sent a notification it did not declare (a minor contract breach).
    #[error("server sent {method} without declaring `{needs}`")]
    UndeclaredNotification {
        /// The notification.
        method: String,
        /// What it presupposes.
        needs: String,
    },
}
