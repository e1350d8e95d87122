//! The skills extension (SEP-2640): list a server's skills, load one — its
//! `SKILL.md` verified against the entry — and read its files, each verified.
//!
//! Nothing is read ahead of need: listing reads no file, loading reads `SKILL.md`
//! only, and a supporting file is read when the host asks for it. A file that is not
//! what the entry describes (size, digest, frontmatter; an unlisted file) is refused
//! with [`Error::Skill`] and never handed to the host. The rules are
//! [`capable_core::internal::skills`]'.

use capable_core::internal::skills;
use capable_core::model::{GetSkillResult, ListSkillsResult, Skill, UriParams};
use capable_core::Method;

use crate::error::Error;

use super::exchange::{decode_read, RequestOptions};
use super::Session;

/// A skill whose `SKILL.md` was read and verified against its entry.
#[derive(Clone, Debug)]
pub struct LoadedSkill {
    /// The entry it was verified against (hold it while acting on the skill: its
    /// files are verified against it).
    pub skill: Skill,
    /// `SKILL.md`, whole.
    pub text: String,
    /// `SKILL.md` after its frontmatter: the instructions.
    pub body: String,
}

impl Session {
    /// `skills/list`, every page: the entries only (no file is read).
    pub async fn list_skills(&self) -> Result<Vec<Skill>, Error> {
        self.list_all::<ListSkillsResult>(Method::ListSkills).await
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri` (also for
    /// skills a listing leaves out).
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, Error> {
        let result: GetSkillResult = self
            .request(
                Method::GetSkill,
                &UriParams { uri },
                RequestOptions::default(),
            )
            .await?;
        Ok(result.skill)
    }

    /// Loads a skill: reads its `SKILL.md` and verifies it against the entry (listed,
    /// size, digest, frontmatter). A tampered or stale skill is refused.
    pub async fn load_skill(&self, skill: &Skill) -> Result<LoadedSkill, Error> {
        skills::check_entry(skill)?;
        let bytes = self.read_bytes(&skill.uri).await?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::Skill(skills::SkillError::Frontmatter {
                uri: skill.uri.clone(),
                why: "SKILL.md is not UTF-8".into(),
            })
        })?;
        let body = skills::verify_skill_md(skill, &text)?.to_owned();
        Ok(LoadedSkill {
            skill: skill.clone(),
            text,
            body,
        })
    }

    /// Reads one file of a loaded skill, by its path under the skill's root
    /// (`references/FORMS.md`) or its URI, verified against the held entry.
    pub async fn read_skill_file(
        &self,
        loaded: &LoadedSkill,
        path: &str,
    ) -> Result<Vec<u8>, Error> {
        let uri = loaded.skill.resolve(path);
        if loaded.skill.file(&uri).is_none() {
            // Refused before anything is read: an unlisted file is a change.
            return Err(skills::SkillError::Unlisted { uri }.into());
        }
        let bytes = self.read_bytes(&uri).await?;
        skills::verify_file(&loaded.skill, &uri, &bytes)?;
        Ok(bytes)
    }

    async fn read_bytes(&self, uri: &str) -> Result<Vec<u8>, Error> {
        let method = Method::ReadResource;
        let payload = self
            .request_payload(method, &UriParams { uri }, RequestOptions::default())
            .await?;
        let result = decode_read(method, &payload)?;
        skills::content_bytes(&result.contents, uri).ok_or_else(|| Error::MalformedResult {
            method,
            detail: format!("the read of {uri} returned no content for it"),
        })
    }
}
