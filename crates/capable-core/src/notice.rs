//! Things worth a warning that do not stop the connection.

use serde_json::Value;

use crate::jsonrpc::RequestId;

/// Something the server did that capable tolerated and the host may want to log.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
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
    /// `initialize`, sent first because the host remembered the server as legacy, was
    /// refused: the client probes the modern era instead (the hint never locks a
    /// server out).
    #[error("initialize was refused ({why}); probing the modern era with server/discover")]
    ModernFallback {
        /// What the server answered.
        why: String,
    },
    /// A tool was dropped from `tools/list` because its `x-mcp-header` annotations
    /// break the rules (2026-07-28 over HTTP): it could not be called correctly.
    #[error("dropped tool {tool:?}: its x-mcp-header annotations are invalid ({why})")]
    ToolDropped {
        /// The tool's name.
        tool: String,
        /// Which rule it breaks.
        why: String,
    },
    /// An entry of a list (`tools/list`, `resources/list`, …) that is not what the
    /// schema defines (a tool without a name, a resource without a URI) was dropped;
    /// the rest of the list was kept.
    #[error("dropped {entry} of {method}: {why}")]
    EntryDropped {
        /// The list's method.
        method: String,
        /// The entry: its name or URI when it has one, else its place in the page.
        entry: String,
        /// What is wrong with it.
        why: String,
    },
    /// The server refused a notification or a response the client POSTed.
    #[error("POST {url} ({what}) was refused: {detail}")]
    HttpRejected {
        /// The message's method (or `a response`).
        what: String,
        /// The URL.
        url: String,
        /// The start of the server's answer.
        detail: String,
    },
    /// The server's standalone event stream kept closing without a message; the
    /// client stopped reopening it (server requests and notifications outside a
    /// request's own stream will not arrive).
    #[error("gave up the server's event stream at {url} after {attempts} attempts")]
    StreamGivenUp {
        /// The URL.
        url: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The URL is a 2024-11-05 HTTP+SSE endpoint; messages go to the endpoint it named.
    #[error("{url} is a 2024-11-05 HTTP+SSE endpoint; posting to {endpoint}")]
    LegacySseTransport {
        /// The URL.
        url: String,
        /// Where messages go.
        endpoint: String,
    },
    /// The legacy session expired (404) and a new one was started.
    #[error("the session at {url} expired; started a new one")]
    SessionRenewed {
        /// The URL.
        url: String,
    },
    /// A legacy `notifications/resources/updated` for a URI nobody subscribed to (nor
    /// to a resource it is part of).
    #[error(
        "the server sent notifications/resources/updated for {uri}, which was not subscribed to"
    )]
    UnexpectedUpdate {
        /// The URI it named.
        uri: String,
    },
    /// A server's `ttlMs` was beyond the longest capable takes at its word
    /// ([`MAX_TTL`](crate::time::MAX_TTL)): the content is taken as fresh for that long.
    #[error(
        "the server said its answer stays fresh for {ttl_ms} ms; capable takes at most {}",
        crate::time::humanize(crate::time::MAX_TTL)
    )]
    TtlCapped {
        /// What the server said.
        ttl_ms: f64,
    },
    /// A tool's `structuredContent` does not match the `outputSchema` it declared.
    /// The result is delivered as received; the host decides what the mismatch
    /// means.
    #[error("the structuredContent of tool {tool:?} does not match its outputSchema: {}", errors.join("; "))]
    OutputSchemaMismatch {
        /// The tool.
        tool: String,
        /// Its `outputSchema`, as declared.
        schema: Value,
        /// The `structuredContent` it returned (`null`: none although the schema asks
        /// for it).
        value: Value,
        /// What does not match, each with where.
        errors: Vec<String>,
    },
    /// A tool's `outputSchema` could not be used to check its result (it is not a
    /// valid schema, or refers to a document capable does not fetch).
    #[error("the outputSchema of tool {tool:?} cannot be checked: {why}")]
    OutputSchemaUnchecked {
        /// The tool.
        tool: String,
        /// Why.
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

impl Notice {
    /// Whether the notice only tells how the connection was made (a fallback the
    /// protocol expects, a transport found), not that something went wrong: worth an
    /// info line, not a warning.
    pub fn is_informational(&self) -> bool {
        matches!(
            self,
            Notice::LegacyFallback { .. }
                | Notice::ModernFallback { .. }
                | Notice::LegacySseTransport { .. }
                | Notice::SessionRenewed { .. }
        )
    }
}
