//! Answers across eras, for a server that relays another (a bridge): a legacy server's
//! result as a 2026-07-28 client must get it. (A 2026-07-28 result goes to a legacy
//! client as it is: the members it adds are ones a legacy result may carry.)
//!
//! | 2026-07-28 requires | a legacy result | so the relay adds |
//! |---|---|---|
//! | `resultType` on every result | has none (absent means `complete`) | `"resultType": "complete"` |
//! | `ttlMs` and `cacheScope` on `server/discover`, the lists and the reads (`CacheableResult`; the skills extension's `skills/list` and `skills/get` too): the method table's cacheable methods, [`crate::cache::is_cacheable`] | has no caching hints | `"ttlMs": 0`, `"cacheScope": "private"`: fresh for no time, for this client only |

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::method::Method;

/// Each member a legacy result may need: its name as it appears in JSON text, and its
/// value.
type Member = (&'static str, &'static str);

const COMPLETE: Member = ("\"resultType\"", "\"complete\"");
const HINTS: [Member; 2] = [("\"ttlMs\"", "0"), ("\"cacheScope\"", "\"private\"")];

/// What a legacy result of some method needs to be a 2026-07-28 one.
enum Change<'a> {
    /// Nothing: it is no object, or it has every member already.
    None,
    /// The members, written in front of the object's own (`inner`: the text after
    /// its opening brace).
    Prepend(&'a [Member], &'a str),
    /// The result, read and written again with what it lacked.
    Rewritten(String),
}

fn change(method: Method, raw: &str) -> Change<'_> {
    static ALL: [Member; 3] = [COMPLETE, HINTS[0], HINTS[1]];
    // Their searchers, built once.
    static FINDERS: LazyLock<[Finder<'static>; 3]> =
        LazyLock::new(|| ALL.map(|(name, _)| Finder::new(name)));
    let members = match method.props().is_cacheable() {
        true => &ALL[..],
        false => &ALL[..1],
    };
    let Some(inner) = raw.strip_prefix('{') else {
        return Change::None;
    };
    let named = FINDERS[..members.len()]
        .iter()
        .any(|finder| finder.find(raw.as_bytes()).is_some());
    // A key may be spelled with escapes: then the result is read, not searched.
    if !named && memchr::memchr(b'\\', raw.as_bytes()).is_none() {
        return Change::Prepend(members, inner);
    }
    let Ok(mut map) = serde_json::from_str::<Map<String, Value>>(raw) else {
        return Change::None;
    };
    let before = map.len();
    for (name, value) in members {
        if let Ok(value) = serde_json::from_str(value) {
            map.entry(name.trim_matches('"')).or_insert(value);
        }
    }
    match map.len() == before {
        true => Change::None,
        false => Change::Rewritten(Value::Object(map).to_string()),
    }
}

/// Writes `members` and then `inner` (an object's text after its opening brace) as one
/// object, piece by piece.
fn prepend(members: &[Member], inner: &str, mut push: impl FnMut(&str)) {
    push("{");
    for (i, (name, value)) in members.iter().enumerate() {
        if i > 0 {
            push(",");
        }
        push(name);
        push(":");
        push(value);
    }
    if !inner.trim_start().starts_with('}') {
        push(",");
    }
    push(inner);
}

/// A legacy server's result of `method` (its JSON text) as a 2026-07-28 client must
/// get it (see the module documentation). A result that is no object comes back as it
/// is, and so does one that has every member already. The usual result — an object
/// that names none of them — is written around, never parsed.
pub fn modern_result(method: Method, raw: &str) -> Cow<'_, str> {
    match change(method, raw) {
        Change::None => Cow::Borrowed(raw),
        Change::Prepend(members, inner) => {
            let mut out = String::with_capacity(raw.len() + 64);
            prepend(members, inner, |piece| out.push_str(piece));
            Cow::Owned(out)
        }
        Change::Rewritten(text) => Cow::Owned(text),
    }
}

/// [`modern_result`] of a result known to be JSON, written at the end of `out`: what
/// the engine answers with, without a copy of its own.
pub(super) fn write_modern_result(out: &mut Vec<u8>, method: Method, raw: &RawValue) {
    let raw = raw.get();
    match change(method, raw) {
        Change::None => out.extend_from_slice(raw.as_bytes()),
        Change::Prepend(members, inner) => prepend(members, inner, |piece| {
            out.extend_from_slice(piece.as_bytes())
        }),
        Change::Rewritten(text) => out.extend_from_slice(text.as_bytes()),
    }
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
    fn a_legacy_skills_result_gets_the_hints_the_skills_extension_requires() {
        // SEP-2640: `ListSkillsResult` and `GetSkillResult` extend 2026-07-28's
        // `CacheableResult`, so `ttlMs` and `cacheScope` are required on them.
        assert_eq!(
            parsed(Method::ListSkills, r#"{"skills":[]}"#),
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "skills": []})
        );
        let skill = json!({"uri": "skill://a/SKILL.md", "resources": "dynamic",
            "frontmatter": {"name": "a", "description": "d"}});
        assert_eq!(
            parsed(Method::GetSkill, &json!({ "skill": skill }).to_string()),
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "skill": skill})
        );
    }

    #[test]
    fn hints_go_on_the_results_a_modern_client_keeps_and_on_no_other() {
        for method in Method::ALL {
            let result = parsed(method, "{}");
            assert_eq!(
                result.get("ttlMs").is_some(),
                crate::cache::is_cacheable(method),
                "{method}"
            );
            assert_eq!(result["resultType"], "complete", "{method}");
        }
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

    #[test]
    fn what_the_engine_writes_is_the_same_result() {
        for (method, raw) in [
            (Method::ListTools, r#"{"tools":[]}"#),
            (Method::CallTool, "{}"),
            (Method::CallTool, r#"{"resultType":"complete"}"#),
            (
                Method::ReadResource,
                r#"{"result\u0054ype":"complete","contents":[]}"#,
            ),
            (Method::Complete, "[1]"),
        ] {
            let mut out = Vec::new();
            let json: Box<RawValue> = serde_json::from_str(raw).expect("JSON");
            write_modern_result(&mut out, method, &json);
            assert_eq!(out, modern_result(method, raw).as_bytes(), "{raw}");
        }
    }
}
