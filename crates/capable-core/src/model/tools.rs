use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{JsonObject, Page};

/// A tool as listed by `tools/list`.
///
/// Its schemas are kept exactly as the server wrote them (`$schema`, `$defs`,
/// `$anchor`, composition keywords, key order, number spelling): a host hands them on
/// byte for byte. Nothing in them is followed: a `$ref` to a network URI is never
/// fetched.
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
    /// JSON Schema of its arguments, exactly as sent (`{}` when absent).
    #[serde(default = "empty_schema")]
    pub input_schema: Box<RawValue>,
    /// JSON Schema of its `structuredContent`, exactly as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Box<RawValue>>,
    /// Everything else (`annotations`, `execution`, `icons`, `_meta` with MCP Apps'
    /// `ui`, …), untouched.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn empty_schema() -> Box<RawValue> {
    RawValue::from_string("{}".into()).expect("`{}` is JSON")
}

/// Whether a tool may run as a task (2025-11-25 `execution.taskSupport`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never (the default when absent).
    #[default]
    Forbidden,
    /// When the client asks.
    Optional,
    /// Only as a task.
    Required,
}

impl Tool {
    /// The input schema as a JSON value (the raw text stays in
    /// [`Tool::input_schema`]).
    pub fn input_schema_value(&self) -> Value {
        serde_json::from_str(self.input_schema.get()).unwrap_or(Value::Null)
    }

    /// The output schema as a JSON value, when the tool declares one.
    pub fn output_schema_value(&self) -> Option<Value> {
        let raw = self.output_schema.as_ref()?;
        serde_json::from_str(raw.get()).ok()
    }

    /// The `ui://` resource the tool's results are rendered with (MCP Apps:
    /// `_meta.ui.resourceUri`, or the deprecated flat `_meta["ui/resourceUri"]`).
    pub fn ui_resource(&self) -> Option<&str> {
        let meta = self.extra.get("_meta")?;
        meta.pointer("/ui/resourceUri")
            .or_else(|| meta.get("ui/resourceUri"))
            .and_then(Value::as_str)
    }

    /// MCP Apps' `_meta.ui.visibility`, when the tool gives one as a list: who may
    /// see and call it (`"model"`, `"app"`). Absent, it is both.
    fn visibility(&self) -> Option<&Vec<Value>> {
        self.extra
            .get("_meta")
            .and_then(|m| m.pointer("/ui/visibility"))
            .and_then(Value::as_array)
    }

    /// Whether MCP Apps' `visibility` hides the tool from the model (`["app"]`):
    /// such a tool is for the app's own calls only.
    pub fn is_app_only(&self) -> bool {
        self.visibility()
            .is_some_and(|v| !v.iter().any(|x| x.as_str() == Some("model")))
    }

    /// Whether an MCP Apps view may call the tool: its `visibility` is absent (model
    /// and app, the default) or names `"app"`. A host refuses a view's `tools/call`
    /// of any other (`["model"]`: the agent's alone), and of a tool whose
    /// `visibility` is there but no list: the check fails closed.
    pub fn app_may_call(&self) -> bool {
        let given = self
            .extra
            .get("_meta")
            .and_then(|m| m.pointer("/ui/visibility"));
        match given {
            None => true,
            Some(_) => self
                .visibility()
                .is_some_and(|v| v.iter().any(|x| x.as_str() == Some("app"))),
        }
    }

    /// `execution.taskSupport` (2025-11-25).
    pub fn task_support(&self) -> TaskSupport {
        let support = self
            .extra
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str);
        match support {
            Some("optional") => TaskSupport::Optional,
            Some("required") => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        }
    }
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
    const ITEMS: &'static str = "tools";
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
    /// 2025-11-25: run it as a task (`{"ttl": ms}`); never sent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
}

/// `tools/call` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

impl CallToolResult {
    /// Decodes a `tools/call` result.
    pub fn from_payload(payload: &crate::Payload) -> Result<Self, serde_json::Error> {
        payload.decode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_kept_byte_for_byte() {
        let text = r##"{"name":"t","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"a":{"$anchor":"A","minimum":1e2}},"properties":{"z":{"$ref":"https://example.com/s.json"},"a":{"$ref":"#A"}},"additionalProperties":false},"outputSchema":{"type":"object","maximum":1.50},"_meta":{"ui":{"resourceUri":"ui://t/view","visibility":["app"]}},"execution":{"taskSupport":"optional"}}"##;
        let tool: Tool = serde_json::from_str(text).unwrap();
        assert!(text.contains(tool.input_schema.get()));
        assert!(tool.input_schema.get().contains(r#""minimum":1e2"#));
        assert_eq!(
            tool.output_schema.as_ref().unwrap().get(),
            r#"{"type":"object","maximum":1.50}"#
        );
        assert_eq!(tool.ui_resource(), Some("ui://t/view"));
        assert!(tool.is_app_only() && tool.app_may_call());
        assert_eq!(tool.task_support(), TaskSupport::Optional);
        let again = serde_json::to_string(&tool).unwrap();
        assert!(again.contains(tool.input_schema.get()), "{again}");
    }

    #[test]
    fn a_tool_without_schema_or_meta_reads_plainly() {
        let tool: Tool =
            serde_json::from_str(r#"{"name":"t","_meta":{"ui/resourceUri":"ui://old"}}"#).unwrap();
        assert_eq!(tool.input_schema.get(), "{}");
        assert_eq!(tool.output_schema_value(), None);
        assert_eq!(
            tool.ui_resource(),
            Some("ui://old"),
            "the deprecated flat key"
        );
        assert!(!tool.is_app_only());
        assert!(tool.app_may_call(), "both, by default");
        assert_eq!(tool.task_support(), TaskSupport::Forbidden);
    }

    #[test]
    fn a_tool_for_the_model_alone_is_not_callable_by_a_view() {
        let tool: Tool =
            serde_json::from_str(r#"{"name":"t","_meta":{"ui":{"visibility":["model"]}}}"#)
                .unwrap();
        assert!(!tool.app_may_call() && !tool.is_app_only());
        let both: Tool =
            serde_json::from_str(r#"{"name":"t","_meta":{"ui":{"visibility":["model","app"]}}}"#)
                .unwrap();
        assert!(both.app_may_call() && !both.is_app_only());
        let malformed: Tool =
            serde_json::from_str(r#"{"name":"t","_meta":{"ui":{"visibility":"app"}}}"#).unwrap();
        assert!(!malformed.app_may_call(), "a visibility that is no list");
    }
}
