use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::jsonrpc::RequestId;

/// `notifications/cancelled` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The request being cancelled.
    pub request_id: RequestId,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `notifications/progress` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The token given in the request's `_meta.progressToken`.
    pub progress_token: Value,
    /// Progress so far (increases).
    pub progress: f64,
    /// Total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A message (2025-03-26+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `notifications/resources/updated` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedParams {
    /// The resource that changed (may be a sub-resource of the one subscribed to).
    pub uri: String,
}
