use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The result a host gives to a server's request for input (elicitation, sampling,
/// roots). In the legacy era it answers a JSON-RPC request; in the modern era it goes
/// into `inputResponses` of the retried request.
pub type InputResult = Value;

/// An elicitation result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ElicitResult {
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    /// The form values, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, Value>>,
}
