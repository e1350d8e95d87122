//! Skills (the skills extension), as `capable skills --json` and `capable skills show
//! --json` give them: the entries (no file is read to list them), and one skill
//! loaded — its `SKILL.md` verified against its entry (listed, size, digest,
//! frontmatter) before anything of it is shown — or one of its files, verified the
//! same way. A tampered skill is refused with the reason, and nothing of it is shown.

use std::sync::Arc;

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::extract::{Answer, Command, OnServer, Reply};
use crate::state::AppState;

/// `POST /api/skills {server}`: the entries.
pub async fn list(State(app): State<Arc<AppState>>, Command(c): Command<OnServer>) -> Answer {
    let session = app.servers.session(&c.server)?;
    Ok(Reply(json!(session.list_skills().await?)))
}

/// `{server, uri, file?}`.
#[derive(Deserialize)]
pub struct Show {
    server: String,
    uri: String,
    /// One of the skill's files, by its path in the skill.
    file: Option<String>,
}

/// `POST /api/skill {server, uri, file?}`: one skill loaded and verified, or one of its
/// files.
pub async fn show(State(app): State<Arc<AppState>>, Command(c): Command<Show>) -> Answer {
    let session = app.servers.session(&c.server)?;
    let skill = session.get_skill(&c.uri).await?;
    let loaded = session.load_skill(&skill).await?;
    Ok(Reply(match c.file {
        None => json!({"skill": skill, "verified": true, "body": loaded.body}),
        Some(path) => {
            let bytes = session.read_skill_file(&loaded, &path).await?;
            json!({
                "uri": skill.resolve(&path),
                "verified": true,
                "text": String::from_utf8_lossy(&bytes),
            })
        }
    }))
}
