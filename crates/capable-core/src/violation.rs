//! Contract violations: a server declared a capability and then refused its method.

use std::time::SystemTime;

use serde_json::Value;

use crate::method::Method;
use crate::model::Implementation;
use crate::version::ProtocolVersion;

/// Evidence that a server broke its own declaration: it declared `capability` and
/// answered `method` with -32601 (method not found).
///
/// The method is then marked broken for the rest of the session: capable never sends
/// it again, so there is no retry loop. A host may fall back only to an explicit
/// alternative (e.g. a re-read policy) or fail.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The declared capability (`resources.subscribe`, `tools`, …).
    pub capability: String,
    /// The method the server refused.
    pub method: Method,
    /// The full JSON-RPC request as sent.
    pub request: Value,
    /// The full JSON-RPC response as received.
    pub response: Value,
    /// `serverInfo` of the server that broke the contract.
    pub server: Implementation,
    /// The negotiated protocol version.
    pub protocol_version: ProtocolVersion,
    /// When the refusal arrived.
    pub at: SystemTime,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "contract violation: {} {} declared `{}` but answered {} with method-not-found (-32601)",
            self.server.name, self.server.version, self.capability, self.method
        )
    }
}
