//! Prompts: one got with its arguments (`prompts/get`); and what an argument of a
//! prompt or a resource template may be, as the server completes it while the person
//! types (`completion/complete`).

use std::sync::Arc;

use axum::extract::State;
use capable::internal::model::JsonObject;
use serde::Deserialize;
use serde_json::json;

use crate::extract::{Answer, Command, Deadline, Reply};
use crate::state::AppState;

/// `{server, name, arguments?}`.
#[derive(Deserialize)]
pub struct GetPrompt {
    server: String,
    name: String,
    arguments: Option<JsonObject>,
}

/// `POST /api/prompt {server, name, arguments}`: the prompt's messages.
pub async fn get(
    State(app): State<Arc<AppState>>,
    deadline: Deadline,
    Command(c): Command<GetPrompt>,
) -> Answer {
    app.servers
        .not_withheld(capable::host::ListKind::Prompts, &c.server, &c.name)?;
    let session = app.servers.session(&c.server)?;
    let result = deadline
        .run(session.get_prompt(&c.name, c.arguments.as_ref()))
        .await?;
    Ok(Reply(json!(result)))
}

/// `{server, ref, argument, value, context?}`.
#[derive(Deserialize)]
pub struct Complete {
    server: String,
    /// `{"type": "ref/prompt", "name"}` or `{"type": "ref/resource", "uri"}`.
    #[serde(rename = "ref")]
    reference: serde_json::Value,
    argument: String,
    value: String,
    /// The other arguments already given.
    #[serde(default)]
    context: JsonObject,
}

/// `POST /api/complete {server, ref, argument, value, context?}`: the server's
/// completions (`{completion: {values, total?, hasMore?}}`), through the gating table
/// (refused with 409 where the server declared no completions).
pub async fn complete(
    State(app): State<Arc<AppState>>,
    deadline: Deadline,
    Command(c): Command<Complete>,
) -> Answer {
    let session = app.servers.session(&c.server)?;
    let completed = session.complete_in_context(&c.reference, &c.argument, &c.value, &c.context);
    Ok(Reply(json!(deadline.run(completed).await?)))
}
