//! The server's log level, from the page (`logging/setLevel`; in 2026-07-28, the level
//! each later request carries). Its log messages come as `notifications/message` in
//! the message log.

use std::sync::Arc;

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::error::ApiError;
use crate::extract::{Answer, Command, Deadline, Reply};
use crate::state::AppState;

/// The levels, most verbose first (RFC 5424's, as MCP names them).
pub const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// `{server, level}`.
#[derive(Deserialize)]
pub struct SetLevel {
    server: String,
    level: String,
}

/// `POST /api/log-level {server, level}`: asks for the server's log messages at
/// `level` and above; refused (409, nothing sent) where it declared no `logging`.
pub async fn set_level(
    State(app): State<Arc<AppState>>,
    deadline: Deadline,
    Command(c): Command<SetLevel>,
) -> Answer {
    if !LEVELS.contains(&c.level.as_str()) {
        return Err(ApiError::usage(format!(
            "the level is one of {}, not {:?}",
            LEVELS.join(", "),
            c.level
        )));
    }
    let session = app.servers.session(&c.server)?;
    deadline.run(session.set_logging_level(&c.level)).await?;
    Ok(Reply(json!({"server": c.server, "level": c.level})))
}
