use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `completion/complete` params.
#[derive(Clone, Debug, Serialize)]
pub struct CompleteParams<'a> {
    /// `{"type":"ref/prompt","name":…}` or `{"type":"ref/resource","uri":…}`.
    #[serde(rename = "ref")]
    pub reference: &'a Value,
    /// The argument being completed.
    pub argument: CompleteArgument<'a>,
    /// The other arguments already given (2025-06-18 and later; left out before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext<'a>>,
}

/// What else is known when completing an argument.
#[derive(Clone, Debug, Serialize)]
pub struct CompleteContext<'a> {
    /// The values of the other arguments, by name.
    pub arguments: &'a serde_json::Map<String, Value>,
}

/// The argument being completed.
#[derive(Clone, Debug, Serialize)]
pub struct CompleteArgument<'a> {
    /// Its name.
    pub name: &'a str,
    /// What was typed so far.
    pub value: &'a str,
}

/// `completion/complete` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The completion.
    pub completion: Completion,
}

/// Completion values.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Up to 100 values.
    pub values: Vec<String>,
    /// Total available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// `logging/setLevel` params.
#[derive(Clone, Debug, Serialize)]
pub struct SetLevelParams<'a> {
    /// `debug`, `info`, `notice`, `warning`, `error`, `critical`, `alert`, `emergency`.
    pub level: &'a str,
}
