//! A server's roots (`roots/list`), read and changed from the page: a legacy server
//! is told of a change (`notifications/roots/list_changed`) and asks again; a modern
//! one gets the new list with its next request that asks for it.

use std::sync::Arc;

use axum::extract::State;
use capable::Root;
use serde::Deserialize;
use serde_json::json;

use crate::error::ApiError;
use crate::extract::{Answer, Command, Reply};
use crate::state::AppState;

/// `{server, roots?}`.
#[derive(Deserialize)]
pub struct RootsCommand {
    server: String,
    /// The new roots; none: only read them.
    roots: Option<Vec<Root>>,
}

/// `POST /api/roots {server, roots?}`: the server's roots, after setting them when
/// given (each a `file://` URI, with an optional name).
pub async fn roots(State(app): State<Arc<AppState>>, Command(c): Command<RootsCommand>) -> Answer {
    let roots = app.servers.roots(&c.server)?;
    if let Some(new) = c.roots {
        if let Some(bad) = new.iter().find(|r| !r.uri.starts_with("file://")) {
            return Err(ApiError::usage(format!(
                "a root is a file:// URI, not {:?}",
                bad.uri
            )));
        }
        roots.set(new);
    }
    Ok(Reply(json!({"server": c.server, "roots": roots.get()})))
}
