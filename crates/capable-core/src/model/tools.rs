use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JsonObject, Page};

/// A tool as listed by `tools/list`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// Human-friendly name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of its arguments.
    #[serde(default)]
    pub input_schema: Value,
    /// Everything else (`outputSchema`, `annotations`, `icons`, …).
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One page of `tools/list`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Where to continue.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// 2026-07-28 caching hints.
    #[serde(flatten)]
    pub cache: super::CacheHint,
}

impl Page for ListToolsResult {
    type Item = Tool;
    fn into_parts(self) -> (Vec<Tool>, Option<String>) {
        (self.tools, self.next_cursor)
    }
}

/// `tools/call` params.
#[derive(Clone, Debug, Serialize)]
pub struct CallToolParams<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// Its arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<&'a JsonObject>,
}

/// `tools/call` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Content blocks (text, image, audio, resource links, embedded resources).
    #[serde(default)]
    pub content: Vec<Value>,
    /// Structured output, when the tool has an output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool reported an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Everything else (`_meta`, `resultType`, …).
    #[serde(flatten)]
    pub extra: JsonObject,
}
