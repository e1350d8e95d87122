//! `Mcp-Param-*` headers (2026-07-28, SEP-2243), as a server must hold a `tools/call`
//! to them: a tool's input schema marks arguments with `x-mcp-header`, its callers
//! send each such argument's value again as `Mcp-Param-{Name}`, and a gateway in
//! front may route by the header without reading the body. So the server must refuse
//! (`400`, `-32020`) a call whose headers and body disagree, else the proxy and the
//! server act on different values:
//!
//! | the argument in the body | its header | the verdict |
//! |---|---|---|
//! | absent or `null` | absent | served |
//! | a string, integer or boolean | the same value (plain, or `=?base64?…?=` of it) | served |
//! | a string, integer or boolean | absent | `-32020` (left out) |
//! | anything | another value, or base64 that does not decode (bad padding, foreign characters) | `-32020` |
//! | absent, `null`, or a value no header can carry | present | `-32020` |
//!
//! Values compare as text after HTTP's field-value trimming (spaces and tabs around
//! them); integers as decimal, booleans as `true`/`false`. Header *names* are the
//! caller's to match case-insensitively. A server learns its tools' annotations from
//! the `tools/list` results it serves ([`ParamRules::learn`]); a tool it has not seen
//! listed has no rules to hold it to ([`ParamRules::knows`] tells).
//!
//! ```
//! use capable_core::internal::server::ParamRules;
//! use serde_json::json;
//!
//! let mut rules = ParamRules::default();
//! rules.learn(&json!({"tools": [{"name": "run", "inputSchema": {"type": "object",
//!     "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}]}));
//! let args = json!({"region": "eu-west"});
//! let sent = |name: &str| (name == "mcp-param-region").then_some("eu-west");
//! assert!(rules.check("run", Some(&args), sent).is_ok());
//! let left_out = |_: &str| None;
//! assert!(rules.check("run", Some(&args), left_out).is_err());
//! ```

use std::collections::HashMap;

use serde_json::Value;

use super::http_post::decoded;
use crate::http::param_headers::{param_headers, ParamHeader};
use crate::jsonrpc::{codes, RpcError};

/// The most tools whose rules are kept: a server that lists more keeps the rules of
/// the first this many (and says nothing of the rest, as of a tool never listed).
const MOST_TOOLS: usize = 65_536;

/// What a server knows of its tools' `Mcp-Param-*` headers (see the module
/// documentation).
#[derive(Debug, Default)]
pub struct ParamRules {
    tools: HashMap<String, Vec<ParamHeader>>,
    /// A listing's last page has been seen: a tool not known then has no rules.
    complete: bool,
}

impl ParamRules {
    /// Learns each tool of a `tools/list` result (one page of it): its rules replace
    /// what was known of it. A tool whose annotations break the rules of
    /// `x-mcp-header` (which its callers must drop) keeps none. The last page (no
    /// `nextCursor`) makes the knowledge complete.
    pub fn learn(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match param_headers(schema) {
                Ok(headers) if !headers.is_empty() => {
                    if self.tools.len() < MOST_TOOLS || self.tools.contains_key(name) {
                        self.tools.insert(name.to_owned(), headers);
                    }
                }
                _ => {
                    self.tools.remove(name);
                }
            }
        }
        if result.get("nextCursor").is_none_or(Value::is_null) {
            self.complete = true;
        }
    }

    /// Whether the rules for `tool` are known: it was listed, or a whole listing was
    /// seen (a tool missing from it has none).
    pub fn knows(&self, tool: &str) -> bool {
        self.complete || self.tools.contains_key(tool)
    }

    /// Whether `tool` is known to have no `Mcp-Param-*` headers: a call of it needs
    /// no check, and its arguments need not be read.
    pub fn knows_none(&self, tool: &str) -> bool {
        self.knows(tool) && !self.tools.contains_key(tool)
    }

    /// Holds a `tools/call` of `tool` with `arguments` to its headers; `header` gives
    /// a header's value by its lower-case name (`mcp-param-region`). `Err` is the
    /// `-32020` error to answer (with HTTP `400`), naming the header, never its value.
    pub fn check<'h>(
        &self,
        tool: &str,
        arguments: Option<&Value>,
        header: impl Fn(&str) -> Option<&'h str>,
    ) -> Result<(), RpcError> {
        let Some(params) = self.tools.get(tool) else {
            return Ok(());
        };
        for param in params {
            let name = format!("mcp-param-{}", param.header.to_ascii_lowercase());
            let body = arguments
                .and_then(|a| param.path.iter().try_fold(a, |v, k| v.get(k)))
                .filter(|v| !v.is_null());
            let expected = body.map(as_header_text);
            let sent = header(&name).map(|v| v.trim_matches([' ', '\t']));
            let why = match (expected, sent) {
                (None, None) => continue,
                (Some(_), None) => "is left out while the body has its argument",
                (None, Some(_)) => "is sent while the body has no value it could carry",
                (Some(expected), Some(sent)) => match decoded(sent) {
                    None => "is not valid base64 of UTF-8 text",
                    Some(sent) if Some(sent.as_ref()) == expected.as_deref() => continue,
                    Some(_) => "does not match the body's argument",
                },
            };
            return Err(RpcError {
                code: codes::HEADER_MISMATCH,
                message: format!("the Mcp-Param-{} header {why}", param.header),
                data: None,
            });
        }
        Ok(())
    }
}

/// An argument as its header carries it (`None`: no header can, a float or an object).
fn as_header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules() -> ParamRules {
        let mut rules = ParamRules::default();
        rules.learn(&json!({"tools": [
            {"name": "run", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "query": {"type": "string"}}}},
            {"name": "plain", "inputSchema": {"type": "object"}}
        ]}));
        rules
    }

    fn headers<'a>(sent: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |name| sent.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    #[test]
    fn agreeing_headers_are_served_plain_base64_or_padded() {
        let r = rules();
        let args = json!({"region": "Hello", "priority": 3, "verbose": false, "query": "x"});
        let all = [
            ("mcp-param-region", "Hello"),
            ("mcp-param-priority", "3"),
            ("mcp-param-verbose", "false"),
        ];
        assert!(r.check("run", Some(&args), headers(&all)).is_ok());
        let b64 = [
            ("mcp-param-region", " =?base64?SGVsbG8=?=\t"),
            ("mcp-param-priority", "3"),
            ("mcp-param-verbose", "false"),
        ];
        assert!(r.check("run", Some(&args), headers(&b64)).is_ok());
        // Absent and null arguments want no header.
        assert!(r
            .check("run", Some(&json!({"region": null})), headers(&[]))
            .is_ok());
        assert!(r.check("run", None, headers(&[])).is_ok());
        // A value that only looks like base64 is a literal.
        let literal = json!({"region": "SGVsbG8="});
        assert!(r
            .check(
                "run",
                Some(&literal),
                headers(&[("mcp-param-region", "SGVsbG8=")])
            )
            .is_ok());
    }

    #[test]
    fn disagreeing_headers_are_header_mismatch_naming_the_header_not_the_value() {
        let r = rules();
        let args = json!({"region": "Hello"});
        for (sent, why) in [
            (vec![], "left out"),
            (vec![("mcp-param-region", "Goodbye")], "does not match"),
            (vec![("mcp-param-region", "=?base64?SGVsbG8?=")], "base64"),
            (
                vec![("mcp-param-region", "=?base64?SGVs!!!bG8=?=")],
                "base64",
            ),
        ] {
            let e = r.check("run", Some(&args), headers(&sent)).unwrap_err();
            assert_eq!(e.code, codes::HEADER_MISMATCH);
            assert!(e.message.contains("Mcp-Param-Region"), "{}", e.message);
            assert!(e.message.contains(why), "{}", e.message);
            assert!(!e.message.contains("Hello") && !e.message.contains("Goodbye"));
        }
        // A header without its argument, and one for a value no header carries.
        let e = r.check(
            "run",
            Some(&json!({})),
            headers(&[("mcp-param-priority", "1")]),
        );
        assert!(e.is_err());
        let float = json!({"priority": 1.5});
        let e = r.check(
            "run",
            Some(&float),
            headers(&[("mcp-param-priority", "1.5")]),
        );
        assert!(e.is_err());
        // Integers and booleans compare as their text.
        let e = r.check(
            "run",
            Some(&json!({"priority": 3})),
            headers(&[("mcp-param-priority", "03")]),
        );
        assert!(e.is_err());
    }

    #[test]
    fn what_is_known_grows_with_listings_and_a_relisting_replaces_it() {
        let mut r = ParamRules::default();
        assert!(!r.knows("run"));
        r.learn(
            &json!({"tools": [{"name": "run", "inputSchema": {"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}}], "nextCursor": "2"}),
        );
        assert!(r.knows("run") && !r.knows("other"), "a first page only");
        r.learn(&json!({"tools": []}));
        assert!(
            r.knows("other"),
            "a whole listing: an unlisted tool has no rules"
        );
        // The tool lost its annotation: it is no longer held to the header.
        r.learn(
            &json!({"tools": [{"name": "run", "inputSchema": {"properties": {
            "region": {"type": "string"}}}}]}),
        );
        assert!(r
            .check("run", Some(&json!({"region": "x"})), |_| None)
            .is_ok());
        // Broken annotations (a number property) keep no rules.
        r.learn(
            &json!({"tools": [{"name": "bad", "inputSchema": {"properties": {
            "n": {"type": "number", "x-mcp-header": "N"}}}}]}),
        );
        assert!(r.check("bad", Some(&json!({"n": 1})), |_| None).is_ok());
    }
}
