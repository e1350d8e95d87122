//! What the page looks back at: the history of its calls (`GET /api/history`) and a
//! server's session as one HTML report (`POST /api/report`, see `report.rs`).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::ApiError;
use crate::extract::{Command, OnServer, Reply};
use crate::state::AppState;

/// `GET /api/history?server=NAME`: the recorded calls, oldest first (of one server
/// when named).
pub async fn history(State(app): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Reply {
    let server = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "server")
        .map(|(_, v)| v.into_owned());
    Reply(json!(app.history.entries(server.as_deref())))
}

/// `POST /api/report {server}`: the session's report of the server, one
/// self-contained HTML document (the run's secrets cut out).
pub async fn report(
    State(app): State<Arc<AppState>>,
    Command(c): Command<OnServer>,
) -> Result<Response, ApiError> {
    let server = app.servers.one_named(&c.server)?;
    let audit = app
        .audits
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&c.server)
        .cloned();
    let calls = app.history.entries(Some(&c.server));
    let page = crate::report::html(&server, &calls, audit.as_ref(), &crate::bus::now());
    let page = app.secrets.scrub(&page);
    let mut response = (StatusCode::OK, page).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    Ok(response)
}
