//! Checking a tool's `structuredContent` against the `outputSchema` it declared.
//!
//! A tool that declares an `outputSchema` promises `structuredContent` that matches
//! it. capable checks every such result (JSON Schema 2020-12 unless the schema's
//! `$schema` names another dialect) and records a mismatch as a
//! [`Notice::OutputSchemaMismatch`] carrying the schema, the value and what does not
//! match — never an error: the result is delivered as the server sent it, and the
//! host decides what a mismatch means. A result with `isError: true` is not checked
//! (an error need not have the promised shape).
//!
//! Nothing a schema refers to is fetched: a `$ref` to another document (a network
//! URI, a file) leaves the schema unusable, which is recorded as
//! [`Notice::OutputSchemaUnchecked`]; same-document references (`#/$defs/…`,
//! `$anchor`s) resolve as usual. Each schema is compiled once per session.

use std::collections::HashMap;
use std::sync::Arc;

use capable_core::model::{CallToolResult, Tool};
use capable_core::Notice;
use jsonschema::{Retrieve, Uri, Validator};
use serde_json::Value;

/// Compiles a JSON Schema the way capable checks every schema it meets (a tool's
/// output, and a host's own checks of arguments against an `inputSchema`): JSON Schema
/// 2020-12 unless `$schema` names another dialect, and nothing it refers to fetched —
/// a `$ref` to another document leaves the schema unusable (`Err`, saying why).
pub fn compile_schema(schema: &Value) -> Result<Validator, String> {
    jsonschema::options()
        .with_retriever(NoRetrieval)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// Refuses every external document: schemas are never dereferenced over the network.
struct NoRetrieval;

impl Retrieve for NoRetrieval {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("capable does not fetch referenced schemas ({uri})").into())
    }
}

/// The most errors a notice lists.
const MAX_ERRORS: usize = 8;

#[derive(Clone)]
struct Known {
    schema: Value,
    /// Compiled on first use: `Err` keeps why it cannot be.
    compiled: Option<Result<Arc<Validator>, String>>,
}

/// The output schemas of the tools a session knows, by tool name.
#[derive(Default)]
pub(crate) struct OutputSchemas {
    tools: HashMap<String, Known>,
}

impl OutputSchemas {
    /// Learns the output schemas of `tools` (a later listing replaces an earlier one's
    /// entry for the same tool; a tool without one is forgotten).
    pub(crate) fn learn(&mut self, tools: &[Tool]) {
        for tool in tools {
            match tool.output_schema_value() {
                Some(schema) => {
                    let unchanged = self
                        .tools
                        .get(&tool.name)
                        .is_some_and(|k| k.schema == schema);
                    if !unchanged {
                        let known = Known {
                            schema,
                            compiled: None,
                        };
                        self.tools.insert(tool.name.clone(), known);
                    }
                }
                None => {
                    self.tools.remove(&tool.name);
                }
            }
        }
    }

    /// Checks one result of `tool`: `None` when it matches, is an error result, or
    /// the tool declared no output schema.
    pub(crate) fn check(&mut self, tool: &str, result: &CallToolResult) -> Option<Notice> {
        if result.is_error == Some(true) {
            return None;
        }
        let known = self.tools.get_mut(tool)?;
        let compiled = known
            .compiled
            .get_or_insert_with(|| compile_schema(&known.schema).map(Arc::new));
        let validator = match compiled {
            Ok(v) => v.clone(),
            Err(why) => {
                return Some(Notice::OutputSchemaUnchecked {
                    tool: tool.to_owned(),
                    why: why.clone(),
                })
            }
        };
        let Some(value) = &result.structured_content else {
            return Some(Notice::OutputSchemaMismatch {
                tool: tool.to_owned(),
                schema: known.schema.clone(),
                value: Value::Null,
                errors: vec!["the result has no structuredContent".into()],
            });
        };
        let errors: Vec<String> = validator
            .iter_errors(value)
            .take(MAX_ERRORS)
            .map(|e| {
                let at = e.instance_path.to_string();
                match at.is_empty() {
                    true => e.to_string(),
                    false => format!("{at}: {e}"),
                }
            })
            .collect();
        (!errors.is_empty()).then(|| Notice::OutputSchemaMismatch {
            tool: tool.to_owned(),
            schema: known.schema.clone(),
            value: value.clone(),
            errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        serde_json::from_value(json!({"name": "weather", "outputSchema": schema})).unwrap()
    }

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    const SCHEMA: &str = r##"{"type": "object", "$defs": {"c": {"type": "number"}},
        "properties": {"celsius": {"$ref": "#/$defs/c"}}, "required": ["celsius"]}"##;

    #[test]
    fn a_matching_result_passes_and_a_mismatch_is_a_notice_with_schema_and_value() {
        let mut s = OutputSchemas::default();
        s.learn(&[tool(serde_json::from_str(SCHEMA).unwrap())]);
        assert_eq!(
            s.check(
                "weather",
                &result(json!({"structuredContent": {"celsius": 21.5}}))
            ),
            None
        );
        let bad = result(json!({"structuredContent": {"celsius": "warm"}}));
        match s.check("weather", &bad) {
            Some(Notice::OutputSchemaMismatch {
                tool,
                schema,
                value,
                errors,
            }) => {
                assert_eq!(tool, "weather");
                assert_eq!(schema["required"], json!(["celsius"]));
                assert_eq!(value, json!({"celsius": "warm"}));
                assert!(errors[0].starts_with("/celsius"), "{errors:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_results_and_tools_without_schemas_are_not_checked() {
        let mut s = OutputSchemas::default();
        s.learn(&[tool(serde_json::from_str(SCHEMA).unwrap())]);
        let error = result(json!({"isError": true, "content": [{"type": "text", "text": "no"}]}));
        assert_eq!(s.check("weather", &error), None);
        assert_eq!(
            s.check("other", &result(json!({"structuredContent": 1}))),
            None
        );
        let missing = s.check("weather", &result(json!({"content": []})));
        assert!(matches!(
            missing,
            Some(Notice::OutputSchemaMismatch {
                value: Value::Null,
                ..
            })
        ));
    }

    #[test]
    fn a_network_ref_is_never_fetched_and_leaves_the_schema_unchecked() {
        let mut s = OutputSchemas::default();
        s.learn(&[tool(json!({"$ref": "http://127.0.0.1:9/never.json"}))]);
        let notice = s.check("weather", &result(json!({"structuredContent": {}})));
        assert!(
            matches!(notice, Some(Notice::OutputSchemaUnchecked { .. })),
            "{notice:?}"
        );
    }

    #[test]
    fn a_relisted_tool_without_a_schema_is_forgotten() {
        let mut s = OutputSchemas::default();
        s.learn(&[tool(json!({"type": "object"}))]);
        let plain: Tool = serde_json::from_value(json!({"name": "weather"})).unwrap();
        s.learn(&[plain]);
        assert_eq!(
            s.check("weather", &result(json!({"structuredContent": 1}))),
            None
        );
    }
}
