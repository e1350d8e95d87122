//! Why a handshake failed, each case saying what was proposed and what came.

use std::time::Duration;

use serde_json::Value;

use crate::jsonrpc::RpcError;
use crate::method::Method;
use crate::time;
use crate::version::{self, Era, ProtocolVersion};

/// Why a connection could not be established.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The server answered a version capable does not speak (or may not speak under the
    /// host's `--protocol` choice). No `notifications/initialized` was sent.
    #[error(
        "the server answered protocol version {answered} to our proposal of {proposed}; \
         capable supports {}; the connection was closed without sending anything more",
        version::list(supported)
    )]
    UnsupportedVersion {
        /// What capable proposed.
        proposed: ProtocolVersion,
        /// What the server answered.
        answered: String,
        /// What capable would have accepted.
        supported: Vec<ProtocolVersion>,
    },
    /// Modern: the server supports none of the versions capable may speak.
    #[error(
        "no common protocol version: the server supports {}, capable supports {}",
        server.join(", "), version::list(ours)
    )]
    NoCommonVersion {
        /// The server's list.
        server: Vec<String>,
        /// Ours.
        ours: Vec<ProtocolVersion>,
    },
    /// The server answered `initialize` with an error.
    #[error("the server refused initialize: {0}")]
    InitializeRefused(RpcError),
    /// The server refused `initialize` because of the version: its error names the
    /// versions it supports (`data.supported`) or is the unsupported-version error.
    #[error(
        "the server refused initialize for protocol version {proposed}{}: {error}",
        if server.is_empty() { String::new() } else { format!(" (it supports {})", server.join(", ")) }
    )]
    VersionRefused {
        /// What capable proposed.
        proposed: ProtocolVersion,
        /// The versions the server named, if any.
        server: Vec<String>,
        /// The error as sent.
        error: Box<RpcError>,
    },
    /// The handshake got no answer in time.
    #[error("the server did not answer {method}; the handshake got no answer within {}", time::humanize(*after))]
    Timeout {
        /// The request that went unanswered.
        method: Method,
        /// How long the whole handshake waited (a modern probe's timeout included).
        after: Duration,
    },
    /// Modern: the server needs a client capability capable did not declare.
    #[error("the server requires client capabilities capable did not declare: {required}")]
    MissingClientCapability {
        /// `data.requiredCapabilities` as sent.
        required: Value,
    },
    /// The era the host forced is not one the server speaks.
    #[error("the server does not speak the {era} era: {detail}")]
    EraUnavailable {
        /// The era that was forced.
        era: Era,
        /// What the server answered.
        detail: String,
    },
    /// An answer that is not what the protocol says it must be.
    #[error("malformed answer to {method}: {detail}")]
    MalformedAnswer {
        /// The request it answered.
        method: &'static str,
        /// What is wrong with it.
        detail: String,
    },
}
