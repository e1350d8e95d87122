//! Every route in one table, behind the gate (`security.rs`), every command that
//! reaches a server recorded in the history (`history.rs`), every JSON answer with the
//! run's secrets cut out.
//!
//! | route | handler |
//! |---|---|
//! | `GET /`, `/app.css`, `/*.js` | the page (`assets.rs`) |
//! | `GET /api/events` | the live stream |
//! | `GET /api/servers` | every server's state, declarations and lists |
//! | `POST /api/session` | a page's secret, for the token (answered by the gate) |
//! | `POST /api/connect`, `/api/disconnect`, `/api/ping`, `/api/export` | one server |
//! | `POST /api/roots`, `/api/log-level` | a server's roots, its log level |
//! | `POST /api/login`, `GET /callback` | an OAuth login from the page, and its redirect |
//! | `GET /api/history`, `POST /api/report` | the calls made, with their timing; a session's HTML report |
//! | `POST /api/read`, `/api/watch`, `/api/unwatch` | resources |
//! | `POST /api/call`, `/api/cancel` | tool calls |
//! | `POST /api/tasks`, `/api/task` | tasks |
//! | `POST /api/prompt`, `/api/complete` | prompts; completions of an argument |
//! | `POST /api/elicit`, `/api/sample` | the person's answer to a form, to a sampling request |
//! | `POST /api/app`, `GET /app/{id}` | MCP Apps views |
//! | `POST /api/app/call`, `/api/app/read` | a view's own calls, on its server |
//! | `POST /api/skills`, `/api/skill` | skills |
//! | `POST /api/audit` | the audit |

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::handlers::{
    apps, asks, audit, events, logging, login, prompts, report, resources, roots, servers, skills,
    tasks, tools,
};
use crate::security::{self, Gate};
use crate::state::AppState;

/// The largest JSON answer scrubbed whole; a larger one is refused rather than sent
/// unscrubbed.
const MAX_ANSWER: usize = 256 << 20;

/// The application: every route, behind the gate.
pub fn router(state: Arc<AppState>, gate: Gate) -> Router {
    Router::new()
        .route("/api/events", get(events::handler))
        .route("/api/servers", get(servers::list))
        .route("/api/connect", post(servers::connect))
        .route("/api/disconnect", post(servers::disconnect))
        .route("/api/ping", post(servers::ping))
        .route("/api/export", post(servers::export))
        .route("/api/pins/accept", post(servers::accept_pin))
        .route("/api/roots", post(roots::roots))
        .route("/api/log-level", post(logging::set_level))
        .route("/api/login", post(login::start))
        .route(crate::logins::CALLBACK, get(login::callback))
        .route("/api/history", get(report::history))
        .route("/api/report", post(report::report))
        .route("/api/read", post(resources::read))
        .route("/api/watch", post(resources::watch))
        .route("/api/unwatch", post(resources::unwatch))
        .route("/api/call", post(tools::call))
        .route("/api/cancel", post(tools::cancel))
        .route("/api/tasks", post(tasks::list))
        .route("/api/task", post(tasks::one))
        .route("/api/prompt", post(prompts::get))
        .route("/api/complete", post(prompts::complete))
        .route("/api/elicit", post(asks::elicit))
        .route("/api/sample", post(asks::sample))
        .route("/api/app", post(apps::read))
        .route("/app/{id}", get(apps::frame))
        .route("/api/app/call", post(apps::call))
        .route("/api/app/read", post(apps::read_for_view))
        .route("/api/skills", post(skills::list))
        .route("/api/skill", post(skills::show))
        .route("/api/audit", post(audit::run))
        .merge(crate::assets::routes())
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .layer(middleware::from_fn_with_state(state.clone(), scrub))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::history::middleware,
        ))
        .layer(middleware::from_fn_with_state(gate, security::middleware))
        .with_state(state)
}

/// Cuts the run's secrets out of a JSON answer (as the CLI's stdout: a server that
/// echoes a header value back shows `***`). Other answers (the page, the event
/// stream, whose events are scrubbed as they are published) pass as they are.
async fn scrub(State(app): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !json || app.secrets.is_empty() {
        return response;
    }
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, MAX_ANSWER).await {
        Ok(bytes) => {
            let clean = app.secrets.scrub_bytes(&bytes);
            Response::from_parts(parts, Body::from(clean))
        }
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the answer is too large\n",
        )
            .into_response(),
    }
}
