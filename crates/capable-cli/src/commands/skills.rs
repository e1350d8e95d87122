//! `capable skills` and `capable skills show NAME|URI [--file PATH]`: the skills
//! extension (SEP-2640).
//!
//! Listing reads no skill file. `show` loads one skill: its `SKILL.md` is read and
//! verified against the entry (listed, size, digest, frontmatter) before anything is
//! printed; a supporting file (`--file`) is read only when asked for, and verified
//! the same way. A tampered skill is refused (exit 6) and nothing of it is printed.

use capable::internal::model::Skill;
use capable::Session;
use serde_json::json;

use super::{with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output::{self, one_line, Table};

fn files(skill: &Skill) -> String {
    match &skill.resources {
        capable::internal::model::SkillFiles::Listed(files) => files.len().to_string(),
        capable::internal::model::SkillFiles::Dynamic => "dynamic".into(),
    }
}

pub async fn list(ctx: &Context, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let skills = s.list_skills().await?;
        if ctx.global.json {
            output::json(&skills)?;
        } else {
            let mut t = Table::new(&["skill", "files", "uri", "description"]);
            for skill in &skills {
                t.row(vec![
                    skill.name().to_owned(),
                    files(skill),
                    skill.uri.clone(),
                    one_line(skill.description(), 70),
                ]);
            }
            output::print(&t.render())?;
        }
        Ok(())
    })
    .await
}

/// The entry the user named: a `SKILL.md` URI (confirmed with `skills/get`), or a
/// name from the listing (two skills with the same name must be told apart by URI).
async fn find(s: &Session, wanted: &str) -> Result<Skill, CliError> {
    if wanted.contains("://") {
        return Ok(s.get_skill(wanted).await?);
    }
    let skills = s.list_skills().await?;
    let matching: Vec<&Skill> = skills.iter().filter(|k| k.name() == wanted).collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(CliError::Usage(format!(
            "the server lists no skill named {wanted:?}; it lists: {}",
            if skills.is_empty() {
                "none".to_owned()
            } else {
                skills
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))),
        several => Err(CliError::Usage(format!(
            "{} skills are named {wanted:?}; name one by its URI: {}",
            several.len(),
            several
                .iter()
                .map(|k| k.uri.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

pub async fn show(
    ctx: &Context,
    wanted: &str,
    file: Option<&str>,
    args: &ServerArgs,
) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let skill = find(s, wanted).await?;
        let loaded = s.load_skill(&skill).await?;
        if let Some(path) = file {
            let bytes = s.read_skill_file(&loaded, path).await?;
            if ctx.global.json {
                let text = String::from_utf8_lossy(&bytes);
                output::json(&json!({"uri": skill.resolve(path), "verified": true, "text": text}))?;
            } else {
                output::raw(&bytes)?;
            }
            return Ok(());
        }
        if ctx.global.json {
            output::json(&json!({"skill": skill, "verified": true, "body": loaded.body}))?;
        } else {
            let mut out = format!(
                "skill     {} ({})\nverified  size, digest and frontmatter match the entry\n",
                skill.name(),
                skill.uri
            );
            if let capable::internal::model::SkillFiles::Listed(files) = &skill.resources {
                let others: Vec<&str> = files
                    .iter()
                    .filter(|f| f.uri != skill.uri)
                    .map(|f| {
                        f.uri
                            .strip_prefix(skill.root())
                            .unwrap_or(&f.uri)
                            .trim_start_matches('/')
                    })
                    .collect();
                if !others.is_empty() {
                    out.push_str(&format!(
                        "files     {} (read one with --file PATH)\n",
                        others.join(", ")
                    ));
                }
            }
            out.push('\n');
            out.push_str(loaded.body.trim_start_matches('\n'));
            output::print(&out)?;
        }
        Ok(())
    })
    .await
}
