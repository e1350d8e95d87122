//! Every failure of a command as one JSON shape — the one `capable --json` prints —
//! with the HTTP status that fits it:
//!
//! ```json
//! {"error": {"kind": "capability_not_offered", "message": "…", "exitCode": 5}}
//! ```
//!
//! `kind` and `exitCode` are the library's [`ErrorKind`] of the failure, so the page and
//! the command line always agree. Handlers return `Result<Reply, ApiError>` and use `?`:
//! a client error converts by itself (`409` when capable refused it locally and sent
//! nothing, `502` when the server or the connection failed).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use capable::host::HostError;
use capable::ErrorKind;
use serde_json::{json, Value};

/// A failed command (see the [module](self)).
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: ErrorKind,
    message: String,
    /// More to say beside the error (`"invalid": [...]` for arguments that do not
    /// match a schema).
    beside: Option<(&'static str, Value)>,
}

impl ApiError {
    /// A failure of `kind`, answered with `status`.
    pub fn new(status: StatusCode, kind: ErrorKind, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            message: message.into(),
            beside: None,
        }
    }

    /// A command the page got wrong (`400`, `usage`): nothing was sent.
    pub fn usage(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, ErrorKind::Usage, message)
    }

    /// What the server's declarations or state do not allow (`409`,
    /// `capability_not_offered`): nothing was sent.
    pub fn not_offered(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, ErrorKind::NotOffered, message)
    }

    /// No answer within the page's timeout (`504`, `timeout`): the request was
    /// dropped, which told the server (`notifications/cancelled`).
    pub fn timed_out(limit: std::time::Duration) -> ApiError {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::Timeout,
            format!(
                "no answer within {} ms (the page's timeout); the request was cancelled",
                limit.as_millis()
            ),
        )
    }

    /// The same error with another status.
    pub fn with_status(mut self, status: StatusCode) -> ApiError {
        self.status = status;
        self
    }

    /// The same error with `value` under `key` beside it.
    pub fn with(mut self, key: &'static str, value: Value) -> ApiError {
        self.beside = Some((key, value));
        self
    }
}

impl From<capable::Error> for ApiError {
    fn from(e: capable::Error) -> ApiError {
        let status = match e {
            capable::Error::Refused(_) => StatusCode::CONFLICT,
            _ => StatusCode::BAD_GATEWAY,
        };
        let api = ApiError::new(status, e.kind(), e.to_string());
        // The server's own error object, as it sent it (for the history's response).
        match &e {
            capable::Error::Rpc { error, .. } => api.with("rpc", json!(error)),
            _ => api,
        }
    }
}

impl From<HostError> for ApiError {
    fn from(e: HostError) -> ApiError {
        match e {
            HostError::Server { error, .. } => ApiError::from(*error),
            HostError::UnknownServer { .. } => {
                ApiError::not_offered(e.to_string()).with_status(StatusCode::NOT_FOUND)
            }
            other => ApiError::not_offered(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": {
            "kind": self.kind.as_str(),
            "message": self.message,
            "exitCode": self.kind.exit_code(),
        }});
        if let Some((key, value)) = self.beside {
            body[key] = value;
        }
        let content_type = HeaderValue::from_static("application/json");
        let mut response = (self.status, body.to_string()).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
        response
    }
}

#[cfg(test)]
mod tests {
    use capable::internal::{Method, Refusal};

    use super::*;

    #[test]
    fn a_local_refusal_is_a_conflict_and_a_server_failure_a_bad_gateway() {
        let refused = ApiError::from(capable::Error::Refused(Refusal::MarkedBroken {
            method: Method::Subscribe,
        }));
        assert_eq!(
            (refused.status, refused.kind),
            (StatusCode::CONFLICT, ErrorKind::NotOffered)
        );
        let failed = ApiError::from(capable::Error::Closed);
        assert_eq!(
            (failed.status, failed.kind),
            (StatusCode::BAD_GATEWAY, ErrorKind::Transport)
        );
        let unknown = ApiError::from(HostError::UnknownServer {
            name: "sh".into(),
            known: vec![],
        });
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn the_answer_is_the_command_lines_error_shape() {
        let e = ApiError::usage("no").with("invalid", json!([{"path": "/n"}]));
        let response = e.into_response();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({"error": {"kind": "usage", "message": "no", "exitCode": 2}, "invalid": [{"path": "/n"}]})
        );
    }
}
