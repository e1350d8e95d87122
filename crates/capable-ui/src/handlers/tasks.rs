//! Tasks: the server's list (`tasks/list`, where declared), one task's status, and
//! cancelling one (`tasks/cancel`).

use std::sync::Arc;

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::extract::{Answer, Command, OnServer, Reply};
use crate::state::AppState;

/// `POST /api/tasks {server}`: the server's tasks.
pub async fn list(State(app): State<Arc<AppState>>, Command(c): Command<OnServer>) -> Answer {
    let session = app.servers.session(&c.server)?;
    Ok(Reply(json!(session.list_tasks().await?)))
}

/// What to do with one task.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// `tasks/get`.
    Get,
    /// `tasks/cancel`.
    Cancel,
}

/// `{server, id, action}`.
#[derive(Deserialize)]
pub struct OneTask {
    server: String,
    id: String,
    action: Action,
}

/// `POST /api/task {server, id, action: "get" | "cancel"}`.
pub async fn one(State(app): State<Arc<AppState>>, Command(c): Command<OneTask>) -> Answer {
    let session = app.servers.session(&c.server)?;
    Ok(Reply(match c.action {
        Action::Get => json!(session.get_task(&c.id).await?),
        Action::Cancel => {
            session.cancel_task(&c.id).await?;
            json!({"id": c.id, "cancelled": true})
        }
    }))
}
