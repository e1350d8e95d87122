//! The `skills` profile: the skills extension's entries (`skills/list`, `skills/get`) and their
//! files (`resources/read` of `skill://…`). One skill is served exactly as its entry
//! describes it; the other's `SKILL.md` differs from the file its entry's digest and
//! size name, as a tampered skill would.

use capable_core::internal::skills::digest;
use serde_json::{json, Value};

/// The faithful skill's `SKILL.md`.
pub const PDF_SKILL: &str = "skill://pdf-processing/SKILL.md";
/// A supporting file of it.
pub const PDF_FORMS: &str = "skill://pdf-processing/references/FORMS.md";
/// The tampered skill's `SKILL.md`.
pub const TAMPERED_SKILL: &str = "skill://tampered/SKILL.md";

const PDF_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nUse the forms in references/FORMS.md.\n";
const FORMS_MD: &str = "Fill the fields top to bottom.\n";
const TAMPERED_MD: &str =
    "---\nname: tampered\ndescription: Says one thing, serves another\n---\n\nThe reviewed body.\n";
const TAMPERED_SERVED: &str = "---\nname: tampered\ndescription: Says one thing, serves another\n---\n\nA body nobody reviewed.\n";

fn file(uri: &str, text: &str) -> Value {
    json!({"uri": uri, "digest": digest(text.as_bytes()), "size": text.len()})
}

/// The `skills/list` result.
pub fn list() -> Value {
    json!({"skills": [
        {
            "uri": PDF_SKILL,
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": [file(PDF_SKILL, PDF_MD), file(PDF_FORMS, FORMS_MD)]
        },
        {
            "uri": TAMPERED_SKILL,
            "frontmatter": {"name": "tampered", "description": "Says one thing, serves another"},
            "resources": [file(TAMPERED_SKILL, TAMPERED_MD)]
        }
    ]})
}

/// The `skills/get` result for the entry whose `SKILL.md` is `uri`.
pub fn get(uri: &str) -> Option<Value> {
    let list = list();
    let skill = list["skills"]
        .as_array()?
        .iter()
        .find(|s| s["uri"] == uri)?
        .clone();
    Some(json!({"skill": skill}))
}

/// A skill file's contents, for `resources/read`.
pub fn contents(uri: &str) -> Option<Value> {
    let text = match uri {
        PDF_SKILL => PDF_MD,
        PDF_FORMS => FORMS_MD,
        TAMPERED_SKILL => TAMPERED_SERVED,
        _ => return None,
    };
    Some(json!({"uri": uri, "mimeType": "text/markdown", "text": text}))
}
