//! `x-mcp-header` (2026-07-28): a tool's input schema may mark arguments that travel
//! as `Mcp-Param-{Name}` headers of its `tools/call` POST, so that gateways can route
//! on them without reading the body. The rules a client on HTTP must enforce:
//!
//! - the header name is a non-empty token, unique case-insensitively within the tool;
//! - it sits on a `string`, `integer` or `boolean` property (never `number`), reached
//!   from the root through `properties` only (not `items`, `anyOf`, …);
//! - a tool that breaks a rule is dropped from `tools/list`, with a warning the host
//!   can see ([`Notice::ToolDropped`]).
//!
//! A value goes as it is when it is header-safe, else as the spec's base64 sentinel
//! `=?base64?…?=` ([`header_safe`]).

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::Value;

use crate::notice::Notice;

/// A tool argument sent as an `Mcp-Param-*` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamHeader {
    /// Where the argument is, from the root of `arguments`.
    pub path: Vec<String>,
    /// The header's name after `Mcp-Param-`, as the schema wrote it.
    pub header: String,
}

/// A header value as sent: as-is when header-safe, else the spec's base64 sentinel
/// `=?base64?…?=` (also for plain values that would read as the sentinel).
pub fn header_safe(value: &str) -> String {
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let plain = !value.is_empty() && printable && !padded && !sentinel;
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// An argument's value as a header value: strings (header-safe), integers and
/// booleans; anything else (absent, `null`, a float, an object) sends no header.
pub fn header_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(header_safe(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The `x-mcp-header` annotations of a tool's input schema, checked against the rules
/// of the module documentation. `Err` says which rule the schema breaks.
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return Ok(());
    };
    if let Some(h) = obj.get("x-mcp-header") {
        let header = h.as_str().ok_or("x-mcp-header is not a string")?;
        if !is_token(header) {
            return Err(format!("{header:?} is not a header token"));
        }
        if path.is_empty() {
            return Err(format!(
                "{header:?} is not on a property reached through `properties`"
            ));
        }
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(ty, "string" | "integer" | "boolean") {
            return Err(format!("{header:?} is on a {ty:?} property"));
        }
        if out.iter().any(|p| p.header.eq_ignore_ascii_case(header)) {
            return Err(format!("{header:?} is used twice"));
        }
        out.push(ParamHeader {
            path: path.clone(),
            header: header.to_owned(),
        });
    }
    for (key, sub) in obj {
        match key.as_str() {
            "properties" => {
                if let Some(props) = sub.as_object() {
                    for (name, prop) in props {
                        path.push(name.clone());
                        walk(prop, path, out)?;
                        path.pop();
                    }
                }
            }
            "x-mcp-header" | "type" | "description" | "title" | "default" | "enum" | "required" => {
            }
            _ => {
                // Anything reached another way may not carry a header.
                if contains_header(sub) {
                    return Err(format!("x-mcp-header under `{key}`"));
                }
            }
        }
    }
    Ok(())
}

fn contains_header(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.contains_key("x-mcp-header") || o.values().any(contains_header),
        Value::Array(a) => a.iter().any(contains_header),
        _ => false,
    }
}

/// What the client knows of each tool's `Mcp-Param-*` headers, learnt from
/// `tools/list` results.
#[derive(Debug, Default)]
pub(crate) struct ToolHeaders(HashMap<String, Vec<ParamHeader>>);

impl ToolHeaders {
    /// Learns the headers of every tool in a `tools/list` result and drops the tools
    /// whose annotations break the rules, with a notice each. Returns whether a tool
    /// was dropped (the result changed).
    pub(crate) fn learn(&mut self, result: &mut Value, notices: &mut Vec<Notice>) -> bool {
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return false;
        };
        let before = tools.len();
        tools.retain(|tool| {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            match param_headers(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(headers) if headers.is_empty() => {
                    self.0.remove(&name);
                    true
                }
                Ok(headers) => {
                    self.0.insert(name, headers);
                    true
                }
                Err(why) => {
                    self.0.remove(&name);
                    notices.push(Notice::ToolDropped { tool: name, why });
                    false
                }
            }
        });
        tools.len() != before
    }

    /// The `Mcp-Param-*` headers of one `tools/call`: (lower-case name, value).
    pub(crate) fn for_call(&self, tool: &str, arguments: Option<&Value>) -> Vec<(String, String)> {
        let Some(params) = self.0.get(tool) else {
            return Vec::new();
        };
        params
            .iter()
            .filter_map(|p| {
                let value = arguments
                    .and_then(|a| p.path.iter().try_fold(a, |v, k| v.get(k)))
                    .and_then(header_value)?;
                Some((
                    format!("mcp-param-{}", p.header.to_ascii_lowercase()),
                    value,
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_values_are_sent_plain_or_as_the_base64_sentinel() {
        assert_eq!(
            header_safe("docs://manual/current"),
            "docs://manual/current"
        );
        assert_eq!(header_safe("naïve"), "=?base64?bmHDr3Zl?=");
        assert_eq!(header_safe(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(header_safe("line\nbreak"), "=?base64?bGluZQpicmVhaw==?=");
        // A plain value that reads as the sentinel is encoded too.
        assert!(header_safe("=?base64?abc?=").starts_with("=?base64?PT9"));
        assert_eq!(header_value(&json!(1.5)), None, "no number headers");
        assert_eq!(header_value(&json!(7)).as_deref(), Some("7"));
        assert_eq!(header_value(&json!(true)).as_deref(), Some("true"));
    }

    #[test]
    fn x_mcp_header_annotations_are_collected_and_checked() {
        let ok = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}},
            "n": {"type": "integer"}
        }});
        let headers = param_headers(&ok).unwrap();
        assert_eq!(headers.len(), 2);
        assert!(headers.contains(&ParamHeader {
            path: vec!["region".into()],
            header: "Region".into()
        }));
        assert!(headers.contains(&ParamHeader {
            path: vec!["opts".into(), "dry".into()],
            header: "Dry-Run".into()
        }));
        for bad in [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Header"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}}}),
            json!({"type": "string", "x-mcp-header": "Root"}),
        ] {
            assert!(param_headers(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tools_list_keeps_good_tools_drops_bad_ones_and_says_so() {
        let mut headers = ToolHeaders::default();
        let mut result = json!({"tools": [
            {"name": "deploy", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}}},
            {"name": "broken", "inputSchema": {"type": "object", "properties": {
                "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}}
        ]});
        let mut notices = Vec::new();
        assert!(headers.learn(&mut result, &mut notices));
        assert_eq!(result["tools"].as_array().unwrap().len(), 1);
        assert!(matches!(&notices[..], [Notice::ToolDropped { tool, .. }] if tool == "broken"));
        let mut sent = headers.for_call(
            "deploy",
            Some(&json!({"region": "eu-west", "dry": true, "other": 1})),
        );
        sent.sort();
        assert_eq!(
            sent,
            [
                ("mcp-param-dry-run".to_owned(), "true".to_owned()),
                ("mcp-param-region".to_owned(), "eu-west".to_owned())
            ]
        );
        assert!(headers
            .for_call("deploy", Some(&json!({"region": null})))
            .is_empty());
        assert!(headers.for_call("unknown", None).is_empty());
    }
}
