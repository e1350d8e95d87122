//! Prompts: one got with its arguments (`prompts/get`).

use std::sync::Arc;

use axum::extract::State;
use capable::core::model::JsonObject;
use serde::Deserialize;
use serde_json::json;

use crate::extract::{Answer, Command, Reply};
use crate::state::AppState;

/// `{server, name, arguments?}`.
#[derive(Deserialize)]
pub struct GetPrompt {
    server: String,
    name: String,
    arguments: Option<JsonObject>,
}

/// `POST /api/prompt {server, name, arguments}`: the prompt's messages.
pub async fn get(State(app): State<Arc<AppState>>, Command(c): Command<GetPrompt>) -> Answer {
    let session = app.servers.session(&c.server)?;
    let result = session.get_prompt(&c.name, c.arguments.as_ref()).await?;
    Ok(Reply(json!(result)))
}
