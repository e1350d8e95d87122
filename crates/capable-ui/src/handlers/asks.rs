//! What a server asks of the person, answered from the page (see `asks.rs`): a form
//! (`POST /api/elicit`) and a model's answer (`POST /api/sample`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::asks::AnswerError;
use crate::error::ApiError;
use crate::extract::{Answer, Command, Reply};
use crate::state::AppState;

fn refused(e: AnswerError) -> ApiError {
    ApiError::usage(e.to_string()).with_status(StatusCode::CONFLICT)
}

/// The answer to a form: `{id, action, content?}`.
#[derive(Deserialize)]
pub struct FormAnswer {
    id: u64,
    action: String,
    content: Option<Value>,
}

/// `POST /api/elicit {id, action: "accept" | "decline" | "cancel", content?}`: the
/// person's answer to form request `id`.
pub async fn elicit(State(app): State<Arc<AppState>>, Command(c): Command<FormAnswer>) -> Answer {
    let content = c.content.filter(Value::is_object);
    app.asks
        .answer_form(c.id, &c.action, content)
        .map_err(refused)?;
    Ok(Reply(json!({"id": c.id, "action": c.action})))
}

/// The answer to a sampling request: `{id, action, result?}`.
#[derive(Deserialize)]
pub struct SampleAnswer {
    id: u64,
    action: String,
    result: Option<Value>,
}

/// `POST /api/sample {id, action: "approve" | "reject", result?}`: the person's answer
/// to sampling request `id` — approved with the message to give back (`role`,
/// `content`, `model`, `stopReason`), or rejected.
pub async fn sample(State(app): State<Arc<AppState>>, Command(c): Command<SampleAnswer>) -> Answer {
    app.asks
        .answer_sample(c.id, &c.action, c.result)
        .map_err(refused)?;
    Ok(Reply(json!({"id": c.id, "action": c.action})))
}
