//! What a host gets back: a request's answer (JSON when the answer is all there is,
//! else an SSE stream that the answer ends, with the status 2026-07-28 gives a
//! JSON-RPC error; `429` and `Retry-After` for a caller over its rate limit), and the standalone stream of a legacy session's `GET`.

use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use capable::internal::jsonrpc::{codes, Incoming, RpcError};
use capable::internal::server::streams::STANDALONE;
use futures_util::stream::{self, StreamExt};
use tokio::sync::{mpsc, oneshot};

use super::params::Params;
use super::pool::{Commands, InFlight};
use super::session::{Command, Events, Kind};
use super::sse;

/// A request's answer: JSON when the answer is all there is, else an SSE stream. The
/// answer to a `tools/list` teaches `learn` its tools' `Mcp-Param-*` rules.
pub(super) async fn answer(
    tx: mpsc::UnboundedSender<Command>,
    kind: Kind,
    stream: u64,
    events: Events,
    headers: &HeaderMap,
    held: Option<InFlight>,
    learn: Option<Arc<Params>>,
) -> Response {
    let Events {
        priming,
        mut events,
    } = events;
    let mut gone = Gone {
        tx,
        stream,
        armed: true,
        _held: held,
    };
    let Some(first) = events.recv().await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "the session ended").into_response();
    };
    let sse = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if first.ends || !sse {
        // A host that takes only JSON gets the answer alone.
        let mut last = first;
        while !last.ends {
            match events.recv().await {
                Some(next) => last = next,
                None => {
                    return (StatusCode::SERVICE_UNAVAILABLE, "the session ended").into_response()
                }
            }
        }
        gone.disarm();
        if let Some(params) = learn {
            params.learn(&last.data);
        }
        let error = last.data.windows(8).any(|w| w == b"\"error\":");
        if let Some(seconds) = error.then(|| retry_after(&last.data)).flatten() {
            let headers = [
                (header::CONTENT_TYPE, "application/json".to_owned()),
                (header::RETRY_AFTER, seconds.to_string()),
            ];
            return (StatusCode::TOO_MANY_REQUESTS, headers, last.data).into_response();
        }
        let status = match kind {
            Kind::Modern if error => modern_status(&last.data),
            _ => StatusCode::OK,
        };
        return (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            last.data,
        )
            .into_response();
    }
    let ends = first.ends;
    let rest = stream::unfold(
        (events, gone, ends, learn),
        |(mut events, mut gone, ended, learn)| async move {
            if ended {
                gone.disarm();
                return None;
            }
            let event = events.recv().await?;
            let ends = event.ends;
            if let (true, Some(params)) = (ends, &learn) {
                params.learn(&event.data);
            }
            Some((event, (events, gone, ends, learn)))
        },
    );
    sse::response(priming, stream::once(async move { first }).chain(rest))
}

/// The host's `GET`: the standalone stream, or the one it comes back to; the session
/// is busy (never idle, never made room of) while it is open. `fresh_if_unknown`: a
/// `Last-Event-ID` this replica never gave opens a fresh stream (sealed sessions).
pub(super) async fn get(
    (tx, held): (Commands, InFlight),
    headers: &HeaderMap,
    fresh_if_unknown: bool,
) -> Response {
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (reply, events) = oneshot::channel();
    if tx
        .send(Command::Get {
            last_event_id,
            fresh_if_unknown,
            reply,
        })
        .is_err()
    {
        return (StatusCode::SERVICE_UNAVAILABLE, "the session ended").into_response();
    }
    match events.await {
        Ok(Some(Events { priming, events })) => {
            // The host closing it is told at once (not at the next event that finds
            // nobody): a replicated session's server stream follows the host's.
            let listening = Listening {
                events: Some(events),
                _gone: Gone {
                    tx,
                    stream: STANDALONE,
                    armed: true,
                    _held: Some(held),
                },
            };
            let events = stream::unfold(listening, |mut listening| async move {
                let event = listening.events.as_mut()?.recv().await?;
                Some((event, listening))
            });
            sse::response(priming, events)
        }
        Ok(None) => (StatusCode::BAD_REQUEST, "unknown Last-Event-ID").into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "the session ended").into_response(),
    }
}

/// The seconds to wait of an answer that refuses a request for the caller's rate limit
/// (`-32011`, `data.retryAfter`), in either era: it is answered `429` with
/// `Retry-After`, the JSON-RPC error in its body; `None` for any other answer.
fn retry_after(answer: &[u8]) -> Option<u64> {
    let answer: serde_json::Value = serde_json::from_slice(answer).ok()?;
    if answer.pointer("/error/code")?.as_i64()? != crate::forward::code::RATE_LIMITED {
        return None;
    }
    let seconds = answer.pointer("/error/data/retryAfter");
    Some(
        seconds
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(1)
            .max(1),
    )
}

/// The HTTP status 2026-07-28 gives a JSON-RPC error answer.
fn modern_status(answer: &[u8]) -> StatusCode {
    let code = serde_json::from_slice::<serde_json::Value>(answer)
        .ok()
        .and_then(|v| v.pointer("/error/code")?.as_i64());
    match code {
        Some(codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            codes::INVALID_PARAMS
            | codes::HEADER_MISMATCH
            | codes::MISSING_CLIENT_CAPABILITY
            | codes::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Tells a host's task that nobody reads a stream any more, when dropped before the
/// stream ended; holds a 2026-07-28 declaration's task busy until then.
struct Gone {
    tx: mpsc::UnboundedSender<Command>,
    stream: u64,
    armed: bool,
    _held: Option<InFlight>,
}

impl Gone {
    /// The stream ended as it should: nothing to tell.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Gone {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.send(Command::Gone {
                stream: self.stream,
            });
        }
    }
}

/// A host's `GET` being read: when it is dropped, its events' end is let go of first,
/// then the task told — so that the task finds the stream closed (not one the host
/// opened again since).
struct Listening {
    events: Option<super::queue::Receiver>,
    _gone: Gone,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.events.take();
    }
}

/// `503` with `Retry-After`: every task of a full pool is busy.
pub(super) fn busy(listener: &super::Listener, what: &'static str) -> Response {
    let metrics = listener.target.audit.metrics();
    metrics.refusal(crate::metrics::Refusal::SessionsBusy);
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
        what,
    )
        .into_response()
}

/// A POST refused before anything is served: `status`, and `error` under the
/// request's id.
pub(super) fn refused(message: &Incoming, status: u16, error: &RpcError) -> Response {
    let id = match message {
        Incoming::Request { id, .. } => serde_json::json!(id),
        _ => serde_json::Value::Null,
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let json = [(header::CONTENT_TYPE, "application/json")];
    (status, json, body.to_string()).into_response()
}
