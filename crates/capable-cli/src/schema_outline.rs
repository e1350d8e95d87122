//! A tool's `inputSchema` as rows for people: each argument with its type, whether it
//! is required, its description, its choices (`enum`, titled constants) and its
//! default; the fields of a nested object (an object, an array of objects, a nullable
//! object) as indented rows under it.
//!
//! Schemas from FastMCP and Pydantic put their types in `$defs` and point at them
//! with `$ref`; those references are followed within the document only (`#/$defs/X`,
//! `#/definitions/X`, any JSON pointer, a `$anchor`) — the references the validator
//! ([`capable::compile_schema`]) also resolves, though it offers no walk of its own to
//! show them; a `$ref` to another document is shown, never fetched. A type that contains itself is shown once and then named as
//! recursive; depth and row count are bounded, so no schema can make this loop or
//! grow without end.

use serde_json::{Map, Value};

/// How deep nested objects are shown.
const MAX_DEPTH: usize = 8;
/// The most rows shown; the rest is counted.
const MAX_ROWS: usize = 400;
/// The most `$ref` hops followed for one schema (a chain of references).
const MAX_HOPS: usize = 16;

/// One argument, or one field of a nested object.
#[derive(Debug, PartialEq)]
pub struct Row {
    /// 0 for an argument, 1 for a field of it, …
    pub depth: usize,
    pub name: String,
    /// `string`, `integer or null`, `array of object`, `map of number`, …
    pub kind: String,
    pub required: bool,
    /// The description, then `one of: …`, `default: …` — joined with ` · `.
    pub notes: String,
}

/// The rows of an object schema's properties, nested fields indented; with a last
/// row saying how many were left out, should there be more than [`MAX_ROWS`].
pub fn arguments(schema: &Value) -> Vec<Row> {
    let mut walk = Walk {
        root: schema,
        rows: Vec::new(),
        left_out: 0,
        refs: Vec::new(),
    };
    let resolved = walk.resolve(schema);
    walk.fields(&resolved, 0);
    if walk.left_out > 0 {
        walk.rows.push(Row {
            depth: 0,
            name: "…".into(),
            kind: String::new(),
            required: false,
            notes: format!("{} more not shown", walk.left_out),
        });
    }
    walk.rows
}

struct Walk<'a> {
    root: &'a Value,
    rows: Vec<Row>,
    left_out: usize,
    /// The references being expanded, outermost first: one met again is recursive.
    refs: Vec<String>,
}

impl Walk<'_> {
    /// The schema with its `$ref` (and a chain of them) replaced by what it points
    /// at, the referring schema's own keywords (a `description` beside the `$ref`)
    /// kept over the target's; `allOf` members merged into one. A reference that
    /// cannot be followed is left in place.
    fn resolve(&self, schema: &Value) -> Value {
        let mut current = schema.clone();
        for _ in 0..MAX_HOPS {
            let Some(target) = current
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| self.target(r))
            else {
                break;
            };
            let mut merged = target.clone();
            if let (Some(merged), Some(own)) = (merged.as_object_mut(), current.as_object()) {
                for (k, v) in own {
                    if k != "$ref" {
                        merged.insert(k.clone(), v.clone());
                    }
                }
            }
            current = merged;
        }
        match current.get("allOf").and_then(Value::as_array).cloned() {
            Some(members) => self.merge_all_of(current, &members),
            None => current,
        }
    }

    /// `allOf`: the members' properties, `required` and first `type` in one schema.
    fn merge_all_of(&self, mut schema: Value, members: &[Value]) -> Value {
        let Some(out) = schema.as_object_mut() else {
            return schema;
        };
        out.remove("allOf");
        for member in members.iter().take(MAX_ROWS) {
            let member = self.resolve_shallow(member);
            let Some(member) = member.as_object() else {
                continue;
            };
            if let Some(props) = member.get("properties").and_then(Value::as_object) {
                let into = out
                    .entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(into) = into.as_object_mut() {
                    for (k, v) in props {
                        into.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
            if let Some(required) = member.get("required").and_then(Value::as_array) {
                let into = out
                    .entry("required")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Some(into) = into.as_array_mut() {
                    into.extend(required.iter().cloned());
                }
            }
            for key in ["type", "description"] {
                if let Some(v) = member.get(key) {
                    out.entry(key).or_insert_with(|| v.clone());
                }
            }
        }
        schema
    }

    /// One `$ref` followed, no `allOf` merged (an `allOf` member's own).
    fn resolve_shallow(&self, schema: &Value) -> Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => self.target(r).cloned().unwrap_or_else(|| schema.clone()),
            None => schema.clone(),
        }
    }

    /// What a same-document reference points at: `#`, a JSON pointer `#/…`
    /// (percent-escapes decoded), or a plain-name fragment `#Name` (a `$anchor`).
    fn target(&self, reference: &str) -> Option<&Value> {
        let fragment = reference.strip_prefix('#')?;
        if fragment.is_empty() {
            return Some(self.root);
        }
        if fragment.starts_with('/') {
            return self.root.pointer(&percent_decode(fragment));
        }
        ["$defs", "definitions"]
            .iter()
            .filter_map(|k| self.root.get(*k).and_then(Value::as_object))
            .flat_map(|defs| defs.values())
            .find(|d| d.get("$anchor").and_then(Value::as_str) == Some(fragment))
    }

    /// Adds a row for each property of `schema` (resolved), then its nested fields.
    fn fields(&mut self, schema: &Value, depth: usize) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, raw) in props {
            if self.rows.len() >= MAX_ROWS {
                self.left_out += 1;
                continue;
            }
            let reference = raw.get("$ref").and_then(Value::as_str).map(str::to_owned);
            let recursive = reference.as_ref().is_some_and(|r| self.refs.contains(r));
            let prop = self.resolve(raw);
            let mut notes = notes(&prop);
            if let Some(r) = raw.get("$ref").and_then(Value::as_str) {
                if self.target(r).is_none() {
                    notes.insert(0, format!("$ref {r} (not followed)"));
                }
            }
            if recursive {
                notes.push("recursive: its fields are shown above".into());
            }
            self.rows.push(Row {
                depth,
                name: name.clone(),
                kind: self.kind(&prop, 0),
                required: required.contains(&name.as_str()),
                notes: notes.join(" · "),
            });
            if recursive || depth + 1 >= MAX_DEPTH {
                continue;
            }
            if let Some(inner) = self.nested(&prop) {
                self.refs.extend(reference.clone());
                self.fields(&inner, depth + 1);
                if reference.is_some() {
                    self.refs.pop();
                }
            }
        }
    }

    /// The object whose fields go under a property: the property itself, its
    /// `items`, or the one non-null choice of its `anyOf`/`oneOf`.
    fn nested(&self, prop: &Value) -> Option<Value> {
        if prop.get("properties").is_some() {
            return Some(prop.clone());
        }
        if let Some(items) = prop.get("items").filter(|i| i.is_object()) {
            return self.nested(&self.resolve(items));
        }
        let choices = choices(prop)?;
        let mut objects = choices
            .iter()
            .map(|c| self.resolve(c))
            .filter(|c| !is_null(c));
        let only = objects.next()?;
        match objects.next() {
            None => self.nested(&only),
            Some(_) => None,
        }
    }

    /// The type in words: `string (email)`, `integer or null`, `array of object`,
    /// `map of number`, the choices of a union joined with `or`.
    fn kind(&self, schema: &Value, depth: usize) -> String {
        if depth > 4 {
            return "…".into();
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let named = |t: &str| -> String {
            match t {
                "array" => match schema.get("items").filter(|i| i.is_object()) {
                    Some(items) => {
                        format!("array of {}", self.kind(&self.resolve(items), depth + 1))
                    }
                    None => "array".into(),
                },
                "object" => match schema.get("additionalProperties").filter(|a| a.is_object()) {
                    Some(values) if schema.get("properties").is_none() => {
                        format!("map of {}", self.kind(&self.resolve(values), depth + 1))
                    }
                    _ => "object".into(),
                },
                "string" => match schema.get("format").and_then(Value::as_str) {
                    Some(f) => format!("string ({})", crate::output::one_line(f, 20)),
                    None => "string".into(),
                },
                other => crate::output::one_line(other, 20),
            }
        };
        if !types.is_empty() {
            return types
                .iter()
                .map(|t| named(t))
                .collect::<Vec<_>>()
                .join(" or ");
        }
        if let Some(choices) = choices(schema) {
            let mut kinds: Vec<String> = Vec::new();
            for c in choices.iter().take(8) {
                let k = self.kind(&self.resolve(c), depth + 1);
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            return kinds.join(" or ");
        }
        if let Some(Value::String(r)) = schema.get("$ref") {
            return format!("$ref {}", crate::output::one_line(r, 40));
        }
        let from_values = schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|v| v.first())
            .or_else(|| schema.get("const"));
        match from_values {
            Some(Value::String(_)) => "string".into(),
            Some(Value::Number(_)) => "number".into(),
            Some(Value::Bool(_)) => "boolean".into(),
            _ if schema.get("properties").is_some() => "object".into(),
            _ if schema.get("items").is_some() => named("array"),
            _ => "any".into(),
        }
    }
}

/// `anyOf` or `oneOf`, whichever the schema has.
fn choices(schema: &Value) -> Option<&Vec<Value>> {
    schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The description, the choices and the default, each a short phrase.
fn notes(schema: &Value) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(d) = schema
        .get("description")
        .or_else(|| schema.get("title"))
        .and_then(Value::as_str)
    {
        notes.push(crate::output::one_line(d, 80));
    }
    let values: Vec<String> = match schema.get("enum").and_then(Value::as_array) {
        Some(values) => values.iter().map(compact).collect(),
        // Titled constants: `oneOf: [{const, title}, …]`.
        None => choices(schema)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c.get("const"))
                    .map(compact)
                    .collect()
            })
            .unwrap_or_default(),
    };
    if !values.is_empty() {
        let shown: Vec<String> = values.iter().take(12).cloned().collect();
        let more = values.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(", … {more} more")
        } else {
            String::new()
        };
        notes.push(format!("one of: {}{more}", shown.join(", ")));
    }
    if let Some(c) = schema.get("const") {
        notes.push(format!("always {}", compact(c)));
    }
    if let Some(d) = schema.get("default") {
        notes.push(format!("default: {}", compact(d)));
    }
    notes
}

/// A value as short JSON on one line.
fn compact(v: &Value) -> String {
    crate::output::one_line(&v.to_string(), 40)
}

/// `%25` → `%` and so on, for a JSON pointer written in a URI fragment; an
/// invalid escape is left as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' {
            if let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            ) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row<'a>(rows: &'a [Row], name: &str) -> &'a Row {
        rows.iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no row {name}: {rows:#?}"))
    }

    #[test]
    fn pydantic_refs_anyof_and_nullable_fields_are_resolved() {
        let schema = json!({
            "type": "object",
            "$defs": {
                "Traveller": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "seat": {"enum": ["aisle", "window"], "default": "aisle"}
                }, "required": ["name"]},
                "Class": {"type": "string", "enum": ["economy", "business"]}
            },
            "properties": {
                "travellers": {"type": "array", "items": {"$ref": "#/$defs/Traveller"}},
                "class": {"$ref": "#/$defs/Class", "description": "Cabin"},
                "lead": {"anyOf": [{"$ref": "#/$defs/Traveller"}, {"type": "null"}]},
                "tags": {"type": "object", "additionalProperties": {"type": "integer"}}
            },
            "required": ["travellers"]
        });
        let rows = arguments(&schema);
        let t = row(&rows, "travellers");
        assert_eq!(
            (t.kind.as_str(), t.required, t.depth),
            ("array of object", true, 0)
        );
        let class = row(&rows, "class");
        assert_eq!(class.kind, "string");
        assert_eq!(class.notes, r#"Cabin · one of: "economy", "business""#);
        assert_eq!(row(&rows, "lead").kind, "object or null");
        assert_eq!(row(&rows, "tags").kind, "map of integer");
        // The traveller's fields, under both arguments that hold one.
        let nested: Vec<(&str, usize)> = rows
            .iter()
            .filter(|r| r.depth == 1)
            .map(|r| (r.name.as_str(), r.depth))
            .collect();
        assert_eq!(nested, [("name", 1), ("seat", 1), ("name", 1), ("seat", 1)]);
        let seat = rows.iter().find(|r| r.name == "seat").unwrap();
        assert_eq!(
            seat.notes,
            r#"one of: "aisle", "window" · default: "aisle""#
        );
    }

    #[test]
    fn a_recursive_or_foreign_or_broken_schema_ends_and_never_panics() {
        let schema = json!({
            "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
            "properties": {
                "root": {"$ref": "#/$defs/Node"},
                "far": {"$ref": "https://example.com/s.json"},
                "loop": {"$ref": "#/properties/loop"},
                "odd": {"$ref": "#/%zz/%4"},
                "weird": {"type": 7, "enum": "no"}
            }
        });
        let rows = arguments(&schema);
        assert!(rows.len() < 20, "{rows:#?}");
        assert!(row(&rows, "child").notes.contains("recursive"), "{rows:#?}");
        assert!(row(&rows, "far").notes.contains("not followed"));
        for odd in [json!(null), json!([]), json!({"properties": 3}), json!("x")] {
            assert!(arguments(&odd).is_empty());
        }
    }

    #[test]
    fn the_rows_are_bounded() {
        let props: Map<String, Value> = (0..1000)
            .map(|i| (format!("a{i}"), json!({"type": "string"})))
            .collect();
        let rows = arguments(&json!({"properties": props}));
        assert_eq!(rows.len(), MAX_ROWS + 1);
        assert_eq!(rows.last().unwrap().notes, "600 more not shown");
    }
}
