//! Skills (the skills extension) from the page, as `capable skills --json` and
//! `capable skills show --json` give them: the entries (no file is read to list
//! them), and one skill loaded — its `SKILL.md` verified against its entry (listed,
//! size, digest, frontmatter) before anything of it is shown — or one of its files,
//! verified the same way. A tampered skill is refused with the reason, and nothing
//! of it is shown.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::Response;
use serde_json::{json, Value};

use super::api::{client, ok, usage, with_session, Shared};

/// `POST /api/skills {server}`: the entries.
pub async fn list(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |_, session| {
        match session.list_skills().await {
            Ok(skills) => ok(json!(skills)),
            Err(e) => client(e),
        }
    })
    .await
}

/// `POST /api/skill {server, uri, file?}`: one skill loaded and verified, or one of its
/// files.
pub async fn show(State(app): Shared, bytes: Bytes) -> Response<Body> {
    with_session(&app, &bytes, async |c, session| {
        let uri = match c.str("uri") {
            Ok(u) => u,
            Err(m) => return usage(m),
        };
        let skill = match session.get_skill(uri).await {
            Ok(s) => s,
            Err(e) => return client(e),
        };
        let loaded = match session.load_skill(&skill).await {
            Ok(l) => l,
            Err(e) => return client(e),
        };
        match c.body.get("file").and_then(Value::as_str) {
            None => ok(json!({"skill": skill, "verified": true, "body": loaded.body})),
            Some(path) => match session.read_skill_file(&loaded, path).await {
                Ok(bytes) => ok(json!({
                    "uri": skill.resolve(path),
                    "verified": true,
                    "text": String::from_utf8_lossy(&bytes),
                })),
                Err(e) => client(e),
            },
        }
    })
    .await
}
