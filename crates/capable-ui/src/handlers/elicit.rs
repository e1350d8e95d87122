//! A server's requests for input, answered from the page (see `elicitations.rs`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::extract::{Answer, Command, Reply};
use crate::state::AppState;

/// The answer: `{id, action, content?}`.
#[derive(Deserialize)]
pub struct Given {
    id: u64,
    action: String,
    content: Option<Value>,
}

/// `POST /api/elicit {id, action: "accept" | "decline" | "cancel", content?}`: the
/// person's answer to request `id`.
pub async fn answer(State(app): State<Arc<AppState>>, Command(c): Command<Given>) -> Answer {
    let content = c.content.filter(Value::is_object);
    app.elicitations
        .answer(c.id, &c.action, content)
        .map_err(|e| ApiError::usage(e.to_string()).with_status(StatusCode::CONFLICT))?;
    Ok(Reply(json!({"id": c.id, "action": c.action})))
}
