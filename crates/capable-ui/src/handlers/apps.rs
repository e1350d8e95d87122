//! MCP Apps: `POST /api/app` reads a tool's `ui://` view and keeps it; `GET /app/ID`
//! frames it under its own policy (see `views.rs`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::extract::{Answer, Command, Reply};
use crate::security::random_secret;
use crate::state::AppState;
use crate::views::{policy, View};

/// The largest view served.
const MAX_HTML: usize = 4 << 20;

/// `{server, uri}`.
#[derive(Deserialize)]
pub struct ReadView {
    server: String,
    uri: String,
}

/// `POST /api/app {server, uri}`: the view read and kept; `{id, uri, csp}`.
pub async fn read(State(app): State<Arc<AppState>>, Command(c): Command<ReadView>) -> Answer {
    let uri = c.uri;
    if !uri.starts_with("ui://") {
        return Err(ApiError::usage(format!("{uri:?} is not a ui:// resource")));
    }
    let session = app.servers.session(&c.server)?;
    let read = session.read_resource(&uri).await?;
    let Some(content) = read.contents.first() else {
        return Err(ApiError::usage(format!("{uri} has no contents")));
    };
    let html = match (&content.text, &content.blob) {
        (Some(text), _) => text.to_string(),
        (None, Some(blob)) => match base64::engine::general_purpose::STANDARD.decode(blob) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => return Err(ApiError::usage(format!("{uri}: its blob is not base64"))),
        },
        (None, None) => return Err(ApiError::usage(format!("{uri} is empty"))),
    };
    let html_mime = content
        .mime_type
        .as_deref()
        .is_some_and(|m| m.starts_with("text/html"));
    if !html_mime || html.len() > MAX_HTML {
        return Err(ApiError::usage(format!(
            "{uri} is not an HTML view of at most {MAX_HTML} bytes"
        )));
    }
    let meta_csp = content
        .meta
        .as_ref()
        .and_then(|m| m.pointer("/ui/csp"))
        .cloned()
        .unwrap_or(Value::Null);
    let id =
        random_secret().map_err(|e| ApiError::usage(format!("no random id for the view: {e}")))?;
    let csp = policy(&meta_csp);
    app.views.keep(View {
        id: id.clone(),
        html,
        csp: csp.clone(),
    });
    Ok(Reply(json!({"id": id, "uri": uri, "csp": csp})))
}

/// `GET /app/ID`: the view, under its own policy (framed by the page only).
pub async fn frame(State(app): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let Some(view) = app.views.get(&id) else {
        return (StatusCode::NOT_FOUND, "no such view\n").into_response();
    };
    let mut response = view.html.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(&view.csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    response
}
