//! The `conformance` profile's tools whose input schemas are what the suite reads:
//!
//! - `json_schema_2020_12_tool` — the schema of the suite's `json-schema-2020-12`
//!   scenario, word for word: `$schema`, `$defs` (with an `$anchor`), a `$ref`,
//!   `additionalProperties: false` (2025-11-25 keeps those), and the 2026-07-28
//!   vocabulary (SEP-2106): composition (`allOf` holding an `anyOf`) and a conditional
//!   (`if`/`then`/`else`). A server that rebuilt its schemas from a typed model would
//!   drop the keywords the model does not know; the check is that nothing is dropped on
//!   the way to the client.
//! - `test_custom_headers` — parameters annotated with `x-mcp-header` (SEP-2243): on
//!   Streamable HTTP a 2026-07-28 client mirrors `region` into `Mcp-Param-Region`,
//!   `priority` into `Mcp-Param-Priority`, `verbose` into `Mcp-Param-Verbose` (`query`
//!   has no header). Checking such a header against the body is the HTTP server's work:
//!   the fixture speaks stdio and sees the body alone, so it answers what it was given
//!   and the bridge's listener in front of it is what the suite's header cases judge.
//!
//! Neither tool validates its arguments: both answer with what they received.

use serde_json::{json, Value};

/// The `$schema` of JSON Schema 2020-12.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The tools, as `tools/list` gives them.
pub(super) fn tools() -> Vec<Value> {
    vec![
        json!({
            "name": "json_schema_2020_12_tool",
            "description": "Tool with JSON Schema 2020-12 features",
            "inputSchema": {
                "$schema": DRAFT_2020_12,
                "type": "object",
                "$defs": {"address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                // At least one way to be reached…
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                // …and the one named, if any.
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }
        }),
        json!({
            "name": "test_custom_headers",
            "description": "Parameters mirrored into Mcp-Param-* headers (x-mcp-header).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "description": "Where to run.", "x-mcp-header": "Region"},
                    "priority": {"type": "integer", "description": "How urgent.", "x-mcp-header": "Priority"},
                    "verbose": {"type": "boolean", "description": "Say more.", "x-mcp-header": "Verbose"},
                    "query": {"type": "string", "description": "In the body alone."}
                },
                "required": ["region"]
            }
        }),
    ]
}

/// The result of `tool` called with `args`, or `None` for another tool.
pub(super) fn call(tool: &str, args: &Value) -> Option<Value> {
    let said = match tool {
        "json_schema_2020_12_tool" => "Received the arguments.".to_owned(),
        "test_custom_headers" => format!("Received: {args}"),
        _ => return None,
    };
    Some(json!({"content": [{"type": "text", "text": said}]}))
}
