//! One field of a server's form (an elicitation's `requestedSchema`) as the terminal
//! asks for it: its prompt with its choices numbered, and what the person typed read
//! into the value the schema allows — or why not, in words, to ask again.
//!
//! A choice (`enum`, titled `oneOf`/`anyOf` constants) is picked by its number, its
//! value or its title; anything else is refused, never sent. A multiple select takes
//! several, separated by commas. A typed value is then checked against the field's own
//! schema with its `format` asserted (`email`, `uri`, `date`, `date-time`), its bounds
//! (`minimum`, `maxLength`, `pattern`, …): `not-an-email` is asked again, not sent.

use jsonschema::error::ValidationErrorKind;
use serde_json::{json, Value};

/// The most choices listed for one field (a larger `enum` is cut, saying so).
const MAX_LISTED: usize = 50;

/// One field of the form.
pub struct Field<'a> {
    /// Its property name.
    pub name: &'a str,
    schema: &'a Value,
    /// `string`, `integer`, `boolean`, `array`, … (`string` when it says none).
    kind: &'a str,
    /// Its choices, `(value, label)`: of the field, or of its items for a multiple
    /// select.
    choices: Option<Vec<(Value, String)>>,
    /// Whether the field's `required`.
    pub required: bool,
}

/// The choices of a schema: its `enum` (labelled by the legacy `enumNames` when it
/// names each one), or the constants of a `oneOf`/`anyOf` (labelled by their titles).
fn choices(s: &Value) -> Option<Vec<(Value, String)>> {
    let label = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        let names = s
            .get("enumNames")
            .and_then(Value::as_array)
            .filter(|n| n.len() == values.len());
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), names.map_or_else(|| label(v), |n| label(&n[i]))))
                .collect(),
        );
    }
    ["oneOf", "anyOf"].iter().find_map(|key| {
        let alts = s.get(*key)?.as_array()?;
        let all = alts
            .iter()
            .map(|a| {
                let value = a.get("const")?.clone();
                let title = a.get("title").map_or_else(|| label(&value), label);
                Some((value, title))
            })
            .collect::<Option<Vec<_>>>()?;
        (!all.is_empty()).then_some(all)
    })
}

/// The fields of `requested_schema`, in its order.
pub fn fields(requested_schema: &Value) -> Vec<Field<'_>> {
    let required: Vec<&str> = requested_schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    requested_schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, schema)| {
            let kind = schema
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("string");
            let choices = if kind == "array" {
                schema.get("items").and_then(choices)
            } else {
                choices(schema)
            };
            Field {
                name,
                schema,
                kind,
                choices,
                required: required.contains(&name.as_str()),
            }
        })
        .collect()
}

/// `a`/`an` before a word.
fn article(word: &str) -> &'static str {
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

impl Field<'_> {
    /// The field's default, when it has one.
    pub fn default(&self) -> Option<&Value> {
        self.schema.get("default")
    }

    /// The lines that ask for it: its choices numbered (when it has them), then the
    /// prompt itself — `  Channel (one of 1-2) [stable]: `.
    pub fn prompt(&self) -> String {
        let title = self
            .schema
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(self.name);
        let mut out = String::new();
        let what = match &self.choices {
            Some(list) => {
                for (i, (value, label)) in list.iter().enumerate().take(MAX_LISTED) {
                    let shown = match value {
                        Value::String(s) if s == label => String::new(),
                        v => format!(" ({})", v),
                    };
                    out.push_str(&format!("    {}) {label}{shown}\n", i + 1));
                }
                if list.len() > MAX_LISTED {
                    out.push_str(&format!(
                        "    … {} more (type the value)\n",
                        list.len() - MAX_LISTED
                    ));
                }
                if self.kind == "array" {
                    "any of the above, comma-separated".to_owned()
                } else {
                    "one of the above".to_owned()
                }
            }
            None => match self.schema.get("format").and_then(Value::as_str) {
                Some(format) => format!("{} {format}", self.kind),
                None => self.kind.to_owned(),
            },
        };
        let required = if self.required { ", required" } else { "" };
        let default = self
            .default()
            .map(|d| format!(" [{d}]"))
            .unwrap_or_default();
        out.push_str(&format!("  {title} ({what}{required}){default}: "));
        out
    }

    /// The value `text` gives the field, or why it gives none.
    pub fn read(&self, text: &str) -> Result<Value, String> {
        let value = match (&self.choices, self.kind) {
            (Some(list), "array") => Value::Array(
                text.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(|t| pick(list, t))
                    .collect::<Result<_, _>>()?,
            ),
            (Some(list), _) => pick(list, text)?,
            (None, "boolean") => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => json!(true),
                "n" | "no" | "false" => json!(false),
                _ => return Err("not a boolean (yes or no)".into()),
            },
            (None, "integer") => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "not an integer".to_owned())?,
            (None, "number") => text
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .map(Value::from)
                .ok_or_else(|| "not a number".to_owned())?,
            (None, "string") => Value::String(text.to_owned()),
            (None, other) => {
                return Err(format!("{} {other} cannot be typed here", article(other)))
            }
        };
        self.check(&value)?;
        Ok(value)
    }

    /// `value` against the field's own schema, its `format` asserted.
    fn check(&self, value: &Value) -> Result<(), String> {
        // Only the field's own keywords: a form's field refers to nothing.
        let Ok(validator) = jsonschema::options()
            .should_validate_formats(true)
            .build(self.schema)
        else {
            return Ok(());
        };
        let first = validator.iter_errors(value).next();
        match first {
            None => Ok(()),
            Some(e) => Err(match &e.kind {
                ValidationErrorKind::Format { format } => match format.as_str() {
                    "email" => "not an email address".to_owned(),
                    "date" => "not a date (YYYY-MM-DD)".to_owned(),
                    "date-time" => "not a date and time (RFC 3339)".to_owned(),
                    "uri" => "not a URI".to_owned(),
                    other => format!("not {} {other}", article(other)),
                },
                _ => e.to_string(),
            }),
        }
    }
}

/// The choice `text` names: by its number, its value or its label.
fn pick(list: &[(Value, String)], text: &str) -> Result<Value, String> {
    if let Ok(n) = text.parse::<usize>() {
        if let Some((value, _)) = n.checked_sub(1).and_then(|i| list.get(i)) {
            return Ok(value.clone());
        }
    }
    // A number or a boolean typed as its JSON.
    let typed = serde_json::from_str::<Value>(text).ok();
    list.iter()
        .find(|(value, label)| {
            value.as_str() == Some(text) || typed.as_ref() == Some(value) || label == text
        })
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("{text:?} is not one of the choices; type its number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Value {
        json!({"type": "object", "required": ["seat"], "properties": {
            "seat": {"type": "string", "title": "Seat", "enum": ["aisle", "window"], "enumNames": ["Aisle", "Window"]},
            "contact": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date"},
            "count": {"type": "integer", "minimum": 1, "default": 1},
            "checks": {"type": "array", "items": {"anyOf": [{"const": "unit", "title": "Unit tests"}, {"const": "browser", "title": "Browser tests"}]}}
        }})
    }

    fn field<'a>(fields: &'a [Field<'a>], name: &str) -> &'a Field<'a> {
        fields.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn a_choice_is_listed_and_nothing_else_is_taken() {
        let schema = form();
        let fields = fields(&schema);
        let seat = field(&fields, "seat");
        let prompt = seat.prompt();
        assert!(
            prompt.contains("1) Aisle (\"aisle\")") && prompt.contains("2) Window"),
            "{prompt}"
        );
        assert!(
            prompt.ends_with("Seat (one of the above, required): "),
            "{prompt}"
        );
        assert_eq!(seat.read("2"), Ok(json!("window")));
        assert_eq!(seat.read("aisle"), Ok(json!("aisle")));
        assert_eq!(seat.read("Window"), Ok(json!("window")));
        assert!(seat
            .read("seat9")
            .unwrap_err()
            .contains("not one of the choices"));
        assert!(seat.read("3").is_err());
        let checks = field(&fields, "checks");
        assert_eq!(checks.read("2, unit"), Ok(json!(["browser", "unit"])));
        assert!(checks.read("1, lint").is_err());
    }

    #[test]
    fn a_format_and_bounds_are_checked() {
        let schema = form();
        let fields = fields(&schema);
        let contact = field(&fields, "contact");
        assert!(contact.prompt().contains("(string email)"));
        assert_eq!(
            contact.read("not-an-email"),
            Err("not an email address".to_owned())
        );
        assert_eq!(contact.read("a@example.org"), Ok(json!("a@example.org")));
        let when = field(&fields, "when");
        assert!(when.read("2026-13-45").is_err());
        assert_eq!(when.read("2026-12-06"), Ok(json!("2026-12-06")));
        let count = field(&fields, "count");
        assert_eq!(count.read("x"), Err("not an integer".to_owned()));
        assert!(count.read("0").is_err(), "below its minimum");
        assert_eq!(count.read("2"), Ok(json!(2)));
        assert!(count.prompt().ends_with("(integer) [1]: "));
    }
}
