//! MCP Apps: `POST /api/app` reads a tool's `ui://` view and keeps it; `GET /app/ID`
//! frames it under its own policy (see `views.rs`); `POST /api/app/call` and
//! `/api/app/read` are the view's own `tools/call` and `resources/read`, on its own
//! server, a tool the view may not call refused before anything is sent.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use capable::internal::model::JsonObject;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::extract::{Answer, Command, Deadline, Reply};
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
        server: c.server,
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

/// The view a bridge request came from, or why there is none.
fn view(app: &AppState, id: &str) -> Result<View, ApiError> {
    app.views.get(id).ok_or_else(|| {
        ApiError::usage("no such view (it was closed, or too many were opened since)")
            .with_status(StatusCode::NOT_FOUND)
    })
}

/// `{view, name, arguments?}`: a view's `tools/call`.
#[derive(Deserialize)]
pub struct ViewCall {
    view: String,
    name: String,
    arguments: Option<JsonObject>,
}

/// `POST /api/app/call {view, name, arguments}`: the view's `tools/call`, on the
/// view's server; the tool's result. MCP Apps: a host must refuse a view's call of a
/// tool whose `visibility` leaves apps out (`["model"]`), and of a tool of another
/// server — so a tool the server did not list is refused too (its visibility is
/// unknown). Refused: `403`, nothing sent.
pub async fn call(
    State(app): State<Arc<AppState>>,
    deadline: Deadline,
    Command(c): Command<ViewCall>,
) -> Result<Response, ApiError> {
    let view = view(&app, &c.view)?;
    let session = app.servers.session(&view.server)?;
    let tool = app
        .servers
        .tools(&view.server)
        .into_iter()
        .find(|t| t.name == c.name);
    let refused = match &tool {
        None => Some(format!(
            "{} lists no tool {:?}: a view may call only its own server's tools",
            view.server, c.name
        )),
        Some(t) if !t.app_may_call() => Some(format!(
            "{:?} is not visible to apps (its _meta.ui.visibility leaves out \"app\"): a view may not call it",
            c.name
        )),
        Some(_) => None,
    };
    if let Some(why) = refused {
        return Err(ApiError::not_offered(format!("{why}; nothing was sent"))
            .with_status(StatusCode::FORBIDDEN));
    }
    let result = deadline
        .run(session.call_tool(&c.name, c.arguments.as_ref()))
        .await?;
    Ok(crate::history::tool_reply(Reply(json!(result)), &result))
}

/// `{view, uri}`: a view's `resources/read`.
#[derive(Deserialize)]
pub struct ViewRead {
    view: String,
    uri: String,
}

/// `POST /api/app/read {view, uri}`: the view's `resources/read`, on the view's server
/// (through its gating table, like any read); `capable read --json`'s answer.
pub async fn read_for_view(
    State(app): State<Arc<AppState>>,
    deadline: Deadline,
    Command(c): Command<ViewRead>,
) -> Answer {
    let view = view(&app, &c.view)?;
    let session = app.servers.session(&view.server)?;
    Ok(Reply(json!(
        deadline.run(session.read_resource(&c.uri)).await?
    )))
}
