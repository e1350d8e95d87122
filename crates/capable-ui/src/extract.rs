//! A command in, an answer out.
//!
//! Every command is a `POST` with a JSON body (the gate has checked its content type);
//! [`Command<T>`] reads it into the handler's own `Deserialize` type, or answers
//! `400 usage` saying what is wrong with it — a handler never sees a body it did not
//! describe. [`Deadline`] is the page's per-request timeout (`X-Capable-Timeout`),
//! for the commands that send a server a request. [`Reply`] is a JSON answer; the
//! router cuts the run's secrets out of every one on the way out.

use std::future::Future;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

/// The largest command body read (a tool's arguments, an answer to a form).
const MAX_COMMAND: usize = 4 << 20;

/// A command's body, as the handler's type `T`.
#[derive(Debug)]
pub struct Command<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Command<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::usage(format!("the command could not be read: {e}")))?;
        if bytes.len() > MAX_COMMAND {
            return Err(ApiError::usage(format!(
                "the command is larger than {MAX_COMMAND} bytes"
            )));
        }
        serde_json::from_slice(&bytes)
            .map(Command)
            .map_err(|e| ApiError::usage(format!("the command is not what it should be: {e}")))
    }
}

/// The header that carries the page's timeout, in milliseconds.
pub const TIMEOUT_HEADER: &str = "x-capable-timeout";
/// The longest timeout the page may ask for (a day).
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// How long the page waits for a server's answer to this command (`None`: the run's
/// request timeout, the session's own).
#[derive(Clone, Copy, Debug)]
pub struct Deadline(pub Option<Duration>);

impl<S: Send + Sync> FromRequestParts<S> for Deadline {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(TIMEOUT_HEADER) else {
            return Ok(Deadline(None));
        };
        let ms = value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .ok_or_else(|| ApiError::usage("X-Capable-Timeout is a number of milliseconds"))?;
        Ok(Deadline(Some(Duration::from_millis(ms).min(MAX_TIMEOUT))))
    }
}

impl Deadline {
    /// Waits for `request` at most this long; past it the request is dropped (which
    /// sends the server `notifications/cancelled`) and the answer is `504 timeout`.
    pub async fn run<T>(
        self,
        request: impl Future<Output = Result<T, capable::Error>>,
    ) -> Result<T, ApiError> {
        match self.0 {
            None => Ok(request.await?),
            Some(limit) => match tokio::time::timeout(limit, request).await {
                Ok(answer) => Ok(answer?),
                Err(_) => Err(ApiError::timed_out(limit)),
            },
        }
    }
}

/// The body of a command that names only its server: `{"server": NAME}`.
#[derive(Debug, Deserialize)]
pub struct OnServer {
    /// The server, by the name the page lists it under.
    pub server: String,
}

/// A JSON answer.
#[derive(Debug)]
pub struct Reply(pub Value);

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = self.0.to_string().into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// What a handler answers.
pub type Answer = Result<Reply, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Read {
        server: String,
        uri: String,
    }

    async fn read(body: &str) -> Result<Read, ApiError> {
        let request = Request::builder()
            .method("POST")
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap();
        Command::<Read>::from_request(request, &())
            .await
            .map(|c| c.0)
    }

    #[tokio::test]
    async fn a_body_is_read_into_the_handlers_type_or_refused_as_usage() {
        let ok = read(r#"{"server": "a", "uri": "docs://x", "more": 1}"#)
            .await
            .unwrap();
        assert_eq!((ok.server.as_str(), ok.uri.as_str()), ("a", "docs://x"));
        for bad in [
            "",
            "not json",
            r#"{"server": "a"}"#,
            r#"{"server": 1, "uri": "x"}"#,
        ] {
            let e = read(bad).await.unwrap_err().into_response();
            assert_eq!(e.status(), 400, "{bad}");
        }
    }
}
