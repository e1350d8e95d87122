//! Checking a tool call's arguments against the tool's `inputSchema` before anything
//! is sent, so a mistyped form or JSON edit is caught in the page with the place of
//! each problem (a JSON pointer), not as the server's error.
//!
//! Nothing a schema refers to is fetched: a `$ref` to another document leaves the
//! schema unusable, and then the arguments go unchecked (the server has the last
//! word), as they do when the schema itself is not a valid JSON Schema.

use serde_json::{json, Value};

/// The most problems reported.
const MAX: usize = 20;

/// What does not match, each as `{"path": JSON pointer, "message": …}`; empty when
/// the arguments match, or when the schema cannot be used.
pub fn check(schema: &str, arguments: &Value) -> Vec<Value> {
    let Ok(schema) = serde_json::from_str::<Value>(schema) else {
        return Vec::new();
    };
    let Ok(validator) = capable::compile_schema(&schema) else {
        return Vec::new();
    };
    validator
        .iter_errors(arguments)
        .take(MAX)
        .map(|e| json!({"path": e.instance_path.to_string(), "message": e.to_string()}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_is_named_by_its_place() {
        let schema = r#"{"type":"object","required":["n"],"properties":{"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}}"#;
        assert!(check(schema, &json!({"n": 3, "tags": ["a"]})).is_empty());
        let problems = check(schema, &json!({"n": "3", "tags": [1]}));
        let paths: Vec<&str> = problems.iter().filter_map(|p| p["path"].as_str()).collect();
        assert!(
            paths.contains(&"/n") && paths.contains(&"/tags/0"),
            "{problems:?}"
        );
        assert_eq!(check(schema, &json!({})).len(), 1);
    }

    #[test]
    fn an_unusable_schema_leaves_the_arguments_to_the_server() {
        assert!(check("not json", &json!({})).is_empty());
        assert!(check(r#"{"$ref":"https://example.invalid/s.json"}"#, &json!({})).is_empty());
    }
}
