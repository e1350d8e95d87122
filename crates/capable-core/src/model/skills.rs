//! The skills extension (SEP-2640, `io.modelcontextprotocol/skills`): a server serves
//! Agent Skills as resources, and lists them with a manifest of their files.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JsonObject, Page};

/// One file of a skill, with the digest and size of its raw bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:{64 lowercase hex}` of its raw bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// A skill's files: a complete manifest, or `"dynamic"` for generated content that
/// has no stable digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkillFiles {
    /// Every file of the skill, `SKILL.md` included.
    Listed(Vec<SkillFile>),
    /// Generated: nothing to verify against.
    Dynamic,
}

impl Serialize for SkillFiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillFiles::Listed(files) => files.serialize(s),
            SkillFiles::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillFiles {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Listed(Vec<SkillFile>),
            Word(String),
        }
        match Wire::deserialize(d)? {
            Wire::Listed(files) => Ok(SkillFiles::Listed(files)),
            Wire::Word(w) if w == "dynamic" => Ok(SkillFiles::Dynamic),
            Wire::Word(w) => Err(serde::de::Error::custom(format!(
                "skill resources must be a list of files or \"dynamic\", not {w:?}"
            ))),
        }
    }
}

/// The entry for one skill, from `skills/list` or `skills/get`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its `SKILL.md` frontmatter, verbatim as JSON (`name` and `description` at
    /// least).
    pub frontmatter: JsonObject,
    /// Its files (required: an entry without them must not be loaded).
    pub resources: SkillFiles,
    /// Anything else the server sent.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Skill {
    /// `frontmatter.name`.
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `frontmatter.description`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The skill's root: its `SKILL.md` URI without `/SKILL.md`.
    pub fn root(&self) -> &str {
        self.uri.strip_suffix("/SKILL.md").unwrap_or(&self.uri)
    }

    /// The manifest entry of `uri`, if the skill lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillFiles::Listed(files) => files.iter().find(|f| f.uri == uri),
            SkillFiles::Dynamic => None,
        }
    }

    /// A file of the skill by its path relative to the root (`references/FORMS.md`),
    /// or by its full URI.
    pub fn resolve(&self, path: &str) -> String {
        if path.contains("://") {
            path.to_owned()
        } else {
            format!("{}/{}", self.root(), path.trim_start_matches('/'))
        }
    }
}

/// One page of `skills/list`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The skills on this page.
    pub skills: Vec<Skill>,
    /// Where to continue.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

impl Page for ListSkillsResult {
    type Item = Skill;
    const ITEMS: &'static str = "skills";
    fn into_parts(self) -> (Vec<Skill>, Option<String>) {
        (self.skills, self.next_cursor)
    }
}

/// `skills/get` result.
#[derive(Clone, Debug, Deserialize)]
pub struct GetSkillResult {
    /// The entry.
    pub skill: Skill,
}
