use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Implementation;

/// `initialize` params (legacy handshake).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams<'a> {
    /// The version the client proposes.
    pub protocol_version: &'a str,
    /// The client's capabilities for that version.
    pub capabilities: &'a Value,
    /// Who the client is.
    pub client_info: &'a Implementation,
}

/// `initialize` result, read loosely so that a bad field can be reported precisely.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// The server's capabilities, exactly as sent.
    pub capabilities: Value,
    /// Who the server is.
    pub server_info: Implementation,
    /// Hints for using the server.
    #[serde(default)]
    pub instructions: Option<String>,
}
