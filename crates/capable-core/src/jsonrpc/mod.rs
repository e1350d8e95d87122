//! JSON-RPC 2.0 framing: reading one incoming message without decoding its payload,
//! and writing outgoing messages straight into a byte buffer.
//!
//! Every MCP message is a JSON-RPC request, notification or response. The client reads
//! an incoming message only far enough to route it: the `id`, the `method`, and *where*
//! the `result` or `params` lie in the line. The payload is decoded later, once, into
//! the one type the waiting caller expects — never trial-decoded against every result
//! type.
//!
//! | file | concern |
//! |---|---|
//! | `incoming.rs` | classifying a received line: request, notification, result, error |
//! | `payload.rs` | a payload kept raw in its line, decoded once into the caller's type |
//! | `budget.rs` | how many JSON values a message may hold |
//! | `write.rs` | writing requests, notifications and responses as single lines |
//!
//! A success response in the usual layout is routed by the id at its start without
//! being parsed (`json/envelope.rs`; the crate's hand-written readers and their one
//! contract are in `json/`).

mod budget;
mod checked;
mod incoming;
mod payload;
mod with_meta;
pub(crate) mod write;

use std::fmt;

use serde::{Deserialize, Serialize};

pub(crate) use crate::json::result_by_shape;
pub use budget::{count_values, value_budget, within_value_budget};
pub use checked::Checked;
pub use incoming::{
    answered_id, loose_shape, split_batch, split_batch_within, BatchRefusal, FramingError, Incoming,
};
pub use payload::Payload;
pub use with_meta::WithMeta;
pub(crate) use write::write_method_request;
pub(crate) use write::write_name;
pub use write::{
    write_error, write_notification, write_refusal, write_request, write_request_with_meta,
    write_result, Params,
};

/// A request id. MCP forbids `null`; capable issues integers and accepts strings from
/// servers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id (what capable issues).
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The error object of a JSON-RPC error response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (`-32601` method not found, `-32602` invalid params, …).
    pub code: i64,
    /// The server's message.
    pub message: String,
    /// Extra data, as the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, " data: {data}")?;
        }
        Ok(())
    }
}

/// Well-known error codes.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist, or its capability was not advertised.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (2026-07-28: also resource not found).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Resource not found (legacy revisions).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// 2026-07-28: `MCP-Protocol-Version` header and `_meta` disagree.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability that was not declared.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the request's protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

#[cfg(test)]
mod tests;
