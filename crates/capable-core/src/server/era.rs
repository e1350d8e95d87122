//! Answers across eras, for a server that relays another (a bridge): a legacy server's
//! result as a 2026-07-28 client must get it. (A 2026-07-28 result goes to a legacy
//! client as it is: the members it adds are ones a legacy result may carry.)
//!
//! | 2026-07-28 requires | a legacy result | so the relay adds |
//! |---|---|---|
//! | `resultType` on every result | has none (absent means `complete`) | `"resultType": "complete"` |
//! | `ttlMs` and `cacheScope` on lists, reads and `server/discover` | has no caching hints | `"ttlMs": 0`, `"cacheScope": "private"`: fresh for no time, for this client only |

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::method::Method;

/// Whether a 2026-07-28 result of `method` must carry caching hints.
fn cacheable(method: Method) -> bool {
    matches!(
        method,
        Method::ListTools
            | Method::ListPrompts
            | Method::ListResources
            | Method::ListResourceTemplates
            | Method::ReadResource
            | Method::Discover
    )
}

/// A legacy server's result of `method` (its JSON text) as a 2026-07-28 client must
/// get it (see the module documentation). A result that is no object comes back as it
/// is, and so does one that has every member already. The usual result — an object
/// that names none of them — is written around, never parsed.
pub fn modern_result(method: Method, raw: &str) -> Cow<'_, str> {
    let mut members: Vec<(&str, Value)> = vec![("resultType", Value::from("complete"))];
    if cacheable(method) {
        members.push(("ttlMs", Value::from(0)));
        members.push(("cacheScope", Value::from("private")));
    }
    let Some(inner) = raw.strip_prefix('{') else {
        return Cow::Borrowed(raw);
    };
    let named = |name: &str| raw.contains(&format!("\"{name}\""));
    // A key may be spelled with escapes: then the result is read, not searched.
    if raw.contains('\\') || members.iter().any(|(name, _)| named(name)) {
        let Ok(mut map) = serde_json::from_str::<Map<String, Value>>(raw) else {
            return Cow::Borrowed(raw);
        };
        let before = map.len();
        for (name, value) in members {
            map.entry(name).or_insert(value);
        }
        if map.len() == before {
            return Cow::Borrowed(raw);
        }
        return Cow::Owned(Value::Object(map).to_string());
    }
    let mut out = String::with_capacity(raw.len() + 64);
    out.push('{');
    for (i, (name, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
        out.push_str(&value.to_string());
    }
    if !inner.trim_start().starts_with('}') {
        out.push(',');
    }
    out.push_str(inner);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(method: Method, raw: &str) -> Value {
        serde_json::from_str(&modern_result(method, raw)).expect("valid JSON")
    }

    #[test]
    fn a_legacy_result_is_told_complete_and_a_list_fresh_for_no_time() {
        assert_eq!(
            parsed(Method::CallTool, r#"{"content":[]}"#),
            json!({"resultType": "complete", "content": []})
        );
        assert_eq!(
            parsed(Method::ListTools, r#"{ "tools": [] }"#),
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": []})
        );
        assert_eq!(
            parsed(Method::Complete, "{}"),
            json!({"resultType": "complete"})
        );
        assert_eq!(
            parsed(Method::ReadResource, " {}")
                .as_object()
                .map(|m| m.len()),
            Some(0),
            "not an object's start: as it is"
        );
    }

    #[test]
    fn members_already_there_are_kept_and_nothing_is_written_twice() {
        let raw = r#"{"tools":[],"ttlMs":500,"resultType":"complete"}"#;
        assert_eq!(
            parsed(Method::ListTools, raw),
            json!({"tools": [], "ttlMs": 500, "resultType": "complete", "cacheScope": "private"})
        );
        let whole = r#"{"resultType":"complete"}"#;
        assert!(matches!(
            modern_result(Method::CallTool, whole),
            Cow::Borrowed(_)
        ));
        // A key spelled with escapes is read for what it is.
        let escaped = r#"{"result\u0054ype":"complete","content":[]}"#;
        assert_eq!(
            parsed(Method::CallTool, escaped),
            json!({"resultType": "complete", "content": []})
        );
    }
}
