use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JsonObject, Page};

/// A prompt as listed by `prompts/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Its name.
    pub name: String,
    /// Human-friendly name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One argument of a prompt.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One page of `prompts/list`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
    /// Where to continue.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// 2026-07-28 caching hints.
    #[serde(flatten)]
    pub cache: super::CacheHint,
}

impl Page for ListPromptsResult {
    type Item = Prompt;
    const ITEMS: &'static str = "prompts";
    fn into_parts(self) -> (Vec<Prompt>, Option<String>) {
        (self.prompts, self.next_cursor)
    }
}

/// `prompts/get` params.
#[derive(Clone, Debug, Serialize)]
pub struct GetPromptParams<'a> {
    /// The prompt's name.
    pub name: &'a str,
    /// Argument values (strings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<&'a serde_json::Map<String, Value>>,
}

/// `prompts/get` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    #[serde(default)]
    pub messages: Vec<Value>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: JsonObject,
}
