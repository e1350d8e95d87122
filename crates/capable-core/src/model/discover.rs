use serde::Deserialize;
use serde_json::Value;

/// `server/discover` result (2026-07-28).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The protocol versions the server supports.
    pub supported_versions: Vec<String>,
    /// The server's capabilities, exactly as sent.
    pub capabilities: Value,
    /// Hints for using the server.
    #[serde(default)]
    pub instructions: Option<String>,
    /// `resultType`; absent means `complete`.
    #[serde(default)]
    pub result_type: Option<String>,
    /// How long the answer stays fresh, in milliseconds.
    #[serde(default)]
    pub ttl_ms: Option<f64>,
    /// `public` or `private`.
    #[serde(default)]
    pub cache_scope: Option<String>,
    /// `_meta`, which carries `io.modelcontextprotocol/serverInfo`.
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}
