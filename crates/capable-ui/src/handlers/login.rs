//! OAuth from the page (see `logins.rs`): `POST /api/login` starts the login of an
//! HTTP server refused for want of authorization and answers the authorization URL
//! to open; `GET /callback` is where the authorization server sends the browser back.
//! Once the token is stored, the server is connected again with it.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use capable::auth::Login;
use capable::config::ServerTarget;
use serde_json::json;
use tokio::sync::oneshot;

use crate::error::ApiError;
use crate::extract::{Answer, Command, OnServer, Reply};
use crate::logins::Arrival;
use crate::state::AppState;

/// `POST /api/login {server}`: `{url}` to open in the browser (the login goes on in
/// the background; `login` events say how it ends), or `{done: true}` when the
/// authorization server approved without asking.
pub async fn start(State(app): State<Arc<AppState>>, Command(c): Command<OnServer>) -> Answer {
    let ServerTarget::Http { url, oauth, .. } = app.servers.target(&c.server)? else {
        return Err(ApiError::usage(format!(
            "{} is a stdio server: there is nothing to log in to",
            c.server
        )));
    };
    let url = url
        .parse()
        .map_err(|e| ApiError::usage(format!("{}'s URL: {e}", c.server)))?;
    let provider = app
        .servers
        .oauth()
        .ok_or_else(|| ApiError::not_offered("this inspector was started without OAuth"))?;
    let client = provider.client(&url, oauth.as_deref())?.ok_or_else(|| {
        ApiError::not_offered(format!("{} is not authorized with OAuth", c.server))
    })?;
    let (shown_tx, shown) = oneshot::channel();
    let redirect = app.logins.redirect(app.port, shown_tx);
    let (done_tx, done) = oneshot::channel();
    let (server, state) = (c.server.clone(), app.clone());
    tokio::spawn(async move {
        let ended = client.login_via(&redirect).await;
        let outcome = match &ended {
            Ok(Login::NotRequired) => json!({"server": server, "state": "not_required"}),
            Ok(_) => json!({"server": server, "state": "done"}),
            Err(e) => json!({"server": server, "state": "failed", "reason": e.to_string()}),
        };
        state.bus.publish("login", outcome.clone());
        if ended.is_ok() {
            let _ = state.servers.reconnect(&server).await;
        }
        let _ = done_tx.send(outcome);
    });
    tokio::select! {
        url = shown => match url {
            Ok(url) => Ok(Reply(json!({"server": c.server, "url": url}))),
            Err(_) => Err(ApiError::usage("the login ended before it showed a page")),
        },
        outcome = done => match outcome {
            Ok(o) if o["state"] == "failed" => Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                capable::ErrorKind::AuthFailed,
                o["reason"].as_str().unwrap_or("the login failed"),
            )),
            Ok(_) => Ok(Reply(json!({"server": c.server, "done": true}))),
            Err(_) => Err(ApiError::usage("the login ended without a word")),
        },
    }
}

/// `GET /callback?code=…&state=…`: the authorization server's redirect, handed to the
/// login that waits for its `state`; a small page for the person either way.
pub async fn callback(State(app): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Response {
    let (status, words) = match app.logins.arrived(query.as_deref().unwrap_or("")) {
        Arrival::Delivered => (
            StatusCode::OK,
            "The authorization reached capable ui: you can close this tab and go back to the inspector.",
        ),
        Arrival::Unknown => (
            StatusCode::BAD_REQUEST,
            "This answer belongs to no login in progress in capable ui.",
        ),
    };
    let page =
        format!("<!doctype html><meta charset=\"utf-8\"><title>capable ui</title><p>{words}</p>");
    let mut response = (status, page).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}
