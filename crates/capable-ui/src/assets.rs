//! The page, embedded in the binary: HTML, CSS and plain JavaScript modules, no build
//! step, nothing fetched from elsewhere.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const JS: &str = "text/javascript; charset=utf-8";

/// Each file: its path, its bytes, its type.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "/",
        include_str!("../assets/index.html"),
        "text/html; charset=utf-8",
    ),
    (
        "/app.css",
        include_str!("../assets/app.css"),
        "text/css; charset=utf-8",
    ),
    ("/app.js", include_str!("../assets/app.js"), JS),
    ("/dom.js", include_str!("../assets/dom.js"), JS),
    ("/stream.js", include_str!("../assets/stream.js"), JS),
    ("/form.js", include_str!("../assets/form.js"), JS),
    ("/schema.js", include_str!("../assets/schema.js"), JS),
    ("/overview.js", include_str!("../assets/overview.js"), JS),
    ("/resources.js", include_str!("../assets/resources.js"), JS),
    ("/tools.js", include_str!("../assets/tools.js"), JS),
    ("/monitor.js", include_str!("../assets/monitor.js"), JS),
    ("/elicit.js", include_str!("../assets/elicit.js"), JS),
    ("/tasks.js", include_str!("../assets/tasks.js"), JS),
    ("/skills.js", include_str!("../assets/skills.js"), JS),
    ("/apps.js", include_str!("../assets/apps.js"), JS),
    ("/head.js", include_str!("../assets/head.js"), JS),
    ("/sampling.js", include_str!("../assets/sampling.js"), JS),
    ("/roots.js", include_str!("../assets/roots.js"), JS),
    ("/history.js", include_str!("../assets/history.js"), JS),
    ("/complete.js", include_str!("../assets/complete.js"), JS),
    ("/diff.js", include_str!("../assets/diff.js"), JS),
    ("/pins.js", include_str!("../assets/pins.js"), JS),
];

/// A route for every file of the page.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut pages = Router::new();
    for (path, body, kind) in ASSETS {
        pages = pages.route(path, get(move || async move { asset(body, kind) }));
    }
    pages
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}
