//! A 2025-03-26 host's JSON-RPC batch, POSTed as one JSON array: that revision lets a
//! client batch requests, notifications and answers (2025-06-18 took batches out again,
//! and 2026-07-28 has none). Each message goes to the session in turn, as if POSTed
//! alone; the answers to its requests come back as one JSON array, in the batch's
//! order, and a batch with no request is `202`. A message of the batch that is no
//! message is answered in the array with `-32600`. Anything a request's stream carries
//! before its answer (progress, the server's questions) is not kept: a host that
//! batches reads JSON, not streams. A batch holds at most `--max-batch` messages
//! (`400` past that, nothing of it taken): one POST never queues unbounded work.

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use capable::internal::jsonrpc::{codes, split_batch_within, BatchRefusal, Incoming};
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::pool::{Commands, InFlight};
use super::session::{Command, Posted};

/// A message of the batch on its way: posted to the session, or answered here.
enum Pending {
    Posted(oneshot::Receiver<Posted>),
    Unreadable(String),
}

/// The host's batch, for the session `found` (none: no session, so no batch).
pub async fn post(found: Option<(Commands, InFlight)>, body: Bytes, max: usize) -> Response {
    // The session is busy until the batch's answers are all sent.
    let Some((tx, _held)) = found else {
        return refuse("a batch belongs to a 2025-03-26 session: initialize alone first");
    };
    let (reply, accepts) = oneshot::channel();
    if tx.send(Command::AcceptsBatches { reply }).is_err() {
        return ended();
    }
    match accepts.await {
        Err(_) => return ended(),
        Ok(false) => {
            return refuse(
                "this session's protocol version has no batches (2025-03-26 alone has them)",
            )
        }
        Ok(true) => {}
    }
    // Read no further than one message past the bound: a body of millions of tiny
    // messages costs no more than the bound's worth before it is refused.
    let items = match split_batch_within(&body, max) {
        Err(BatchRefusal::TooMany(max)) => {
            return refuse(&format!(
                "a batch of more than {max} messages: this bridge takes at most {max} (--max-batch)"
            ))
        }
        Ok(items) if !items.is_empty() => items,
        Ok(_) => return refuse("an empty batch"),
        Err(_) => return refuse("a batch is an array of JSON-RPC messages"),
    };
    let mut pending = Vec::with_capacity(items.len());
    for item in items {
        match Incoming::parse(item) {
            Ok(message) => {
                let (reply, posted) = oneshot::channel();
                if tx.send(Command::Post { message, reply }).is_err() {
                    return ended();
                }
                pending.push(Pending::Posted(posted));
            }
            Err(e) => pending.push(Pending::Unreadable(e.to_string())),
        }
    }
    let mut answers: Vec<Box<RawValue>> = Vec::new();
    for p in pending {
        let answer = match p {
            Pending::Unreadable(why) => error_line(&why),
            Pending::Posted(posted) => match posted.await {
                Err(_) => return ended(),
                Ok(Posted::Accepted) => continue,
                Ok(Posted::Stream { mut events, .. }) => {
                    let last = loop {
                        match events.events.recv().await {
                            Some(event) if event.ends => break event,
                            Some(_) => {}
                            None => return ended(),
                        }
                    };
                    String::from_utf8_lossy(&last.data).into_owned()
                }
            },
        };
        if let Ok(raw) = RawValue::from_string(answer) {
            answers.push(raw);
        }
    }
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let body = serde_json::to_string(&answers).unwrap_or_else(|_| "[]".into());
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// `-32600` for a message of the batch that is none.
fn error_line(why: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": codes::INVALID_REQUEST, "message": why}})
    .to_string()
}

/// `400` with a JSON-RPC error saying why the batch is refused whole.
fn refuse(why: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        error_line(why),
    )
        .into_response()
}

fn ended() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "the session ended").into_response()
}
