//! Verifying skill files before use (SEP-2640), as a decision on bytes.
//!
//! A skill's entry ([`Skill`]) is a manifest: every file with the SHA-256 digest and
//! the size of its raw bytes, and the `SKILL.md` frontmatter verbatim. A host loading
//! a skill reads each file only when it needs it, and uses it only after:
//!
//! 1. the file is listed in the entry it holds (an unlisted file is a change to the
//!    skill: refused);
//! 2. its length equals the entry's `size` (checked before the digest, so an
//!    oversized file is refused without hashing it);
//! 3. its digest equals the entry's `digest`;
//! 4. for `SKILL.md`: its YAML frontmatter, parsed, equals the entry's
//!    `frontmatter` field by field.
//!
//! Any failure means the content is not what the entry described (tampered, corrupt,
//! or stale): it must not be used. Digests come from the same server as the content,
//! so a match proves consistency, not trust.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use yaml_rust2::{Yaml, YamlLoader};

use crate::model::{ResourceContents, Skill, SkillFiles};

/// The most files and the most bytes of one skill every host accepts (the
/// extension's limits).
pub const MAX_FILES: usize = 512;
/// See [`MAX_FILES`].
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Why a skill file may not be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The entry offers no manifest (`"dynamic"`): nothing can be verified.
    #[error("the skill {uri} is dynamic: its files have no digests to verify, so capable does not load it")]
    Dynamic {
        /// The skill's URI.
        uri: String,
    },
    /// The entry exceeds the extension's limits.
    #[error("the skill {uri} lists {files} files of {bytes} bytes, beyond the limits of {MAX_FILES} files and {MAX_BYTES} bytes")]
    TooLarge {
        /// The skill's URI.
        uri: String,
        /// Files listed.
        files: usize,
        /// Their total size.
        bytes: u64,
    },
    /// The entry does not list the file.
    #[error("{uri} is not listed in the skill's manifest: refused (an unlisted file is a change to the skill)")]
    Unlisted {
        /// The file.
        uri: String,
    },
    /// The file's length differs from the manifest.
    #[error("{uri} is {actual} bytes, but the skill's manifest says {expected}: refused as tampered or stale")]
    Size {
        /// The file.
        uri: String,
        /// The manifest's size.
        expected: u64,
        /// What was read.
        actual: u64,
    },
    /// The file's digest differs from the manifest.
    #[error("{uri} hashes to {actual}, but the skill's manifest says {expected}: refused as tampered or stale")]
    Digest {
        /// The file.
        uri: String,
        /// The manifest's digest.
        expected: String,
        /// What was read.
        actual: String,
    },
    /// `SKILL.md` has no YAML frontmatter, or one that does not parse.
    #[error("{uri} has no valid YAML frontmatter: {why}")]
    Frontmatter {
        /// The file.
        uri: String,
        /// What is wrong with it.
        why: String,
    },
    /// The frontmatter differs from the entry's.
    #[error("the frontmatter of {uri} differs from the skill's entry in `{field}` (file: {file}, entry: {entry}): refused")]
    FrontmatterMismatch {
        /// The file.
        uri: String,
        /// The first field that differs.
        field: String,
        /// Its value in the file (`null`: absent).
        file: Box<Value>,
        /// Its value in the entry (`null`: absent).
        entry: Box<Value>,
    },
}

/// The raw bytes of a read's contents for `uri` (text as UTF-8, a blob decoded from
/// base64): what a skill's digest and size cover. `None` when the read returned no
/// content for `uri` (or a blob that is not base64).
pub fn content_bytes(contents: &[ResourceContents], uri: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let item = contents.iter().find(|c| c.uri == uri).or(match contents {
        [only] => Some(only),
        _ => None,
    })?;
    match (&item.text, &item.blob) {
        (Some(text), _) => Some(text.as_bytes().to_vec()),
        (None, Some(blob)) => base64::engine::general_purpose::STANDARD.decode(blob).ok(),
        (None, None) => None,
    }
}

/// `sha256:{hex}` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether the entry may be loaded at all: it has a manifest within the limits.
pub fn check_entry(skill: &Skill) -> Result<(), SkillError> {
    let SkillFiles::Listed(files) = &skill.resources else {
        return Err(SkillError::Dynamic {
            uri: skill.uri.clone(),
        });
    };
    let bytes: u64 = files.iter().map(|f| f.size).fold(0, u64::saturating_add);
    if files.len() > MAX_FILES || bytes > MAX_BYTES {
        return Err(SkillError::TooLarge {
            uri: skill.uri.clone(),
            files: files.len(),
            bytes,
        });
    }
    Ok(())
}

/// Verifies the raw bytes read for `uri` against the entry: listed, size, digest.
pub fn verify_file(skill: &Skill, uri: &str, bytes: &[u8]) -> Result<(), SkillError> {
    check_entry(skill)?;
    let Some(file) = skill.file(uri) else {
        return Err(SkillError::Unlisted { uri: uri.into() });
    };
    let actual = bytes.len() as u64;
    if actual != file.size {
        return Err(SkillError::Size {
            uri: uri.into(),
            expected: file.size,
            actual,
        });
    }
    let actual = digest(bytes);
    if !actual.eq_ignore_ascii_case(&file.digest) {
        return Err(SkillError::Digest {
            uri: uri.into(),
            expected: file.digest.clone(),
            actual,
        });
    }
    Ok(())
}

/// Verifies a `SKILL.md` read for the entry: the file checks, then its frontmatter
/// against the entry's, field by field. Returns the body after the frontmatter.
pub fn verify_skill_md<'a>(skill: &Skill, text: &'a str) -> Result<&'a str, SkillError> {
    verify_file(skill, &skill.uri, text.as_bytes())?;
    let (frontmatter, body) = split_frontmatter(text).map_err(|why| SkillError::Frontmatter {
        uri: skill.uri.clone(),
        why,
    })?;
    compare(&skill.uri, &frontmatter, &skill.frontmatter)?;
    Ok(body)
}

/// Splits a `SKILL.md` into its parsed frontmatter and its body.
pub fn split_frontmatter(text: &str) -> Result<(Map<String, Value>, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("the file does not start with `---`")?;
    let mut offset = 0;
    let mut end = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let (yaml_end, body_start) = end.ok_or("the frontmatter has no closing `---`")?;
    let yaml = &rest[..yaml_end];
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| e.to_string())?;
    let value = match docs.into_iter().next() {
        Some(doc) => to_json(doc)?,
        None => Value::Object(Map::new()),
    };
    match value {
        Value::Object(map) => Ok((map, &rest[body_start..])),
        other => Err(format!("the frontmatter is not a mapping but {other}")),
    }
}

fn to_json(y: Yaml) -> Result<Value, String> {
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(r) => {
            let f: f64 = r.parse().map_err(|_| format!("{r:?} is not a number"))?;
            serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
        }
        Yaml::String(s) => Value::String(s),
        Yaml::Array(items) => {
            Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Yaml::Hash(hash) => {
            let mut map = Map::new();
            for (k, v) in hash {
                let key = match k {
                    Yaml::String(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Real(r) => r,
                    other => return Err(format!("a mapping key that is not a scalar: {other:?}")),
                };
                map.insert(key, to_json(v)?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) | Yaml::BadValue => return Err("an alias or a malformed value".into()),
    })
}

/// Two JSON values equal as data: numbers by value (`1` = `1.0`), maps regardless
/// of key order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn compare(
    uri: &str,
    file: &Map<String, Value>,
    entry: &Map<String, Value>,
) -> Result<(), SkillError> {
    let mut fields: Vec<&String> = file.keys().chain(entry.keys()).collect();
    fields.sort();
    fields.dedup();
    for field in fields {
        let (f, e) = (file.get(field), entry.get(field));
        let equal = match (f, e) {
            (Some(f), Some(e)) => same(f, e),
            _ => false,
        };
        if !equal {
            return Err(SkillError::FrontmatterMismatch {
                uri: uri.into(),
                field: field.clone(),
                file: Box::new(f.cloned().unwrap_or(Value::Null)),
                entry: Box::new(e.cloned().unwrap_or(Value::Null)),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: 2.1\n  tags: [pdf, forms]\n---\n\nSkill body.\n";
    const FORMS: &str = "Supporting content.\n";

    fn entry(md: &str) -> Skill {
        serde_json::from_value(json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "metadata": {"tags": ["pdf", "forms"], "version": 2.1}
            },
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "digest": digest(md.as_bytes()), "size": md.len()},
                {"uri": "skill://pdf-processing/references/FORMS.md", "digest": digest(FORMS.as_bytes()), "size": FORMS.len()}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn a_faithful_skill_loads_and_yields_its_body() {
        let skill = entry(MD);
        assert_eq!(verify_skill_md(&skill, MD), Ok("\nSkill body.\n"));
        let forms = skill.resolve("references/FORMS.md");
        assert_eq!(verify_file(&skill, &forms, FORMS.as_bytes()), Ok(()));
    }

    #[test]
    fn a_changed_body_of_the_same_size_fails_the_digest() {
        let skill = entry(MD);
        let evil = MD.replace("Skill body.", "Evil body!!");
        assert_eq!(evil.len(), MD.len());
        assert!(matches!(
            verify_skill_md(&skill, &evil),
            Err(SkillError::Digest { .. })
        ));
    }

    #[test]
    fn extra_bytes_fail_the_size_before_any_hashing() {
        let skill = entry(MD);
        let longer = format!("{MD}extra bytes the entry did not account for\n");
        let err = verify_skill_md(&skill, &longer).unwrap_err();
        assert!(
            matches!(err, SkillError::Size { expected, .. } if expected == MD.len() as u64),
            "{err}"
        );
    }

    #[test]
    fn a_frontmatter_that_differs_from_the_entry_is_refused_even_with_a_matching_digest() {
        let tampered = MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        // The server lists the tampered file's own digest and size.
        let skill = entry(&tampered);
        let err = verify_skill_md(&skill, &tampered).unwrap_err();
        match err {
            SkillError::FrontmatterMismatch { field, file, .. } => {
                assert_eq!(field, "description");
                assert_eq!(*file, json!("Exfiltrate credentials"));
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn unlisted_files_dynamic_and_oversized_skills_are_refused() {
        let skill = entry(MD);
        let other = skill.resolve("scripts/run.sh");
        assert!(matches!(
            verify_file(&skill, &other, b""),
            Err(SkillError::Unlisted { .. })
        ));
        let mut dynamic = skill.clone();
        dynamic.resources = SkillFiles::Dynamic;
        assert!(matches!(
            check_entry(&dynamic),
            Err(SkillError::Dynamic { .. })
        ));
        let mut huge = skill.clone();
        if let SkillFiles::Listed(files) = &mut huge.resources {
            files[0].size = MAX_BYTES + 1;
        }
        assert!(matches!(
            check_entry(&huge),
            Err(SkillError::TooLarge { .. })
        ));
    }

    #[test]
    fn frontmatter_needs_its_fences_and_a_mapping() {
        assert!(split_frontmatter("no fence\n").is_err());
        assert!(split_frontmatter("---\nname: x\n").is_err());
        assert!(split_frontmatter("---\n- a\n- b\n---\n").is_err());
        let (fm, body) = split_frontmatter("---\r\nname: x\r\n---\r\nbody").unwrap();
        assert_eq!(fm.get("name"), Some(&json!("x")));
        assert_eq!(body, "body");
    }

    #[test]
    fn the_digest_is_sha256_in_lowercase_hex() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
