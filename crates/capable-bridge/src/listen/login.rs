//! The pages of a caller's own login to a server of `user` credentials
//! (`credentials/user.rs`), beside `/mcp` on a gateway that knows its callers:
//!
//! | page | what it does |
//! |---|---|
//! | `GET /oauth/start?login=ID` | the URL the caller was sent: once only, it binds the login to this browser (an `HttpOnly`, `SameSite=Lax` cookie of the login's own) and redirects to the server's authorization endpoint |
//! | `GET /oauth/callback?code=…&state=…` | the authorization server's redirect: a `state` under way, with its browser's cookie, hands the code to the flow and says how the login ended; anything else (replayed, another browser's, expired) gets an error page, and nothing is stored |
//!
//! Neither page shows a code, a token or a `state`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::Listener;

/// How long the callback page waits for the code's exchange.
const EXCHANGE_WAIT: Duration = Duration::from_secs(20);

/// The two pages, on `router`.
pub(super) fn routes(router: Router<Arc<Listener>>) -> Router<Arc<Listener>> {
    router
        .route("/oauth/start", get(start))
        .route("/oauth/callback", get(callback))
}

/// A small HTML page saying `text` (a fixed sentence, never what a request brought).
fn page(status: StatusCode, text: &str) -> Response {
    let body =
        format!("<!doctype html><meta charset=utf-8><title>capable gateway</title><p>{text}</p>");
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    (status, headers, body).into_response()
}

async fn start(State(listener): State<Arc<Listener>>, request: Request) -> Response {
    if let Err(refused) = listener.gate.check_host(request.headers()) {
        return refused.into_response();
    }
    let id = request.uri().query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "login")
            .map(|(_, v)| v.into_owned())
    });
    let Some(id) = id else {
        return page(StatusCode::BAD_REQUEST, "This is no login link.");
    };
    match listener.target.users.start(&id) {
        Ok((to, name, nonce)) => {
            let secure = match listener.target.users.secure() {
                true => "; Secure",
                false => "",
            };
            let cookie = format!(
                "{name}={nonce}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
                crate::credentials::LOGIN_TTL.as_secs()
            );
            let (Ok(location), Ok(cookie)) =
                (HeaderValue::from_str(&to), HeaderValue::from_str(&cookie))
            else {
                return page(
                    StatusCode::BAD_GATEWAY,
                    "The server's login address is unusable.",
                );
            };
            let mut answer = StatusCode::FOUND.into_response();
            let headers = answer.headers_mut();
            headers.insert(header::LOCATION, location);
            headers.insert(header::SET_COOKIE, cookie);
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            headers.insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            );
            answer
        }
        Err(refused) => page(StatusCode::BAD_REQUEST, refused.0),
    }
}

async fn callback(State(listener): State<Arc<Listener>>, request: Request) -> Response {
    if let Err(refused) = listener.gate.check_host(request.headers()) {
        return refused.into_response();
    }
    let query = request.uri().query().unwrap_or("");
    let cookies = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join("; ");
    let audit = &listener.target.audit;
    let done = match listener.target.users.callback(query, Some(&cookies)) {
        Ok(done) => done,
        Err(refused) => {
            audit.record(
                "notice",
                serde_json::json!({"side": "bridge", "level": "warning",
                    "notice": format!("a login's callback was refused: {}", refused.0)}),
            );
            return page(StatusCode::BAD_REQUEST, refused.0);
        }
    };
    match tokio::time::timeout(EXCHANGE_WAIT, done).await {
        Ok(Ok(Ok(()))) => page(
            StatusCode::OK,
            "Logged in. You can close this window and call the tool again.",
        ),
        Ok(Ok(Err(why))) => {
            audit.record(
                "notice",
                serde_json::json!({"side": "bridge", "level": "warning",
                    "notice": format!("a caller's login failed: {}", audit.scrub(&why))}),
            );
            page(
                StatusCode::BAD_GATEWAY,
                "The login failed at the server. Call the tool again to start anew.",
            )
        }
        _ => page(
            StatusCode::GATEWAY_TIMEOUT,
            "The login did not finish in time. Call the tool again to start anew.",
        ),
    }
}
