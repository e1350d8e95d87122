//! The listener's SSE responses, framed as the transport asks:
//!
//! - each message is one event, its `id` naming its stream (see the core's
//!   [`Streams`](capable::internal::server::streams::Streams)), its JSON in `data` lines;
//! - a legacy session of 2025-11-25 or later gets a **priming event** first — an id,
//!   `retry`, and an empty `data` line — so that a host cut off before anything came
//!   can come back for the whole stream after that long; the empty `data` line is what
//!   makes a client's parser deliver it (an event without one is dropped unseen, its
//!   id with it);
//! - a comment every 15 s while nothing is sent keeps proxies from closing the
//!   connection; `X-Accel-Buffering: no` asks them not to buffer it.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use capable::internal::server::streams::StreamEvent;
use futures_util::stream::{self, Stream, StreamExt};

/// How long a host whose stream broke waits before it comes back for the rest (the
/// priming event's `retry`).
pub const RETRY: Duration = Duration::from_secs(1);

/// How long a stream may stay silent before a comment is sent.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An SSE response of `events`, after a priming event when `priming` names its id.
pub fn response(
    priming: Option<String>,
    events: impl Stream<Item = StreamEvent> + Send + 'static,
) -> Response {
    let first = priming.map(|id| {
        Bytes::from(format!(
            "id: {id}\nretry: {}\ndata: \n\n",
            RETRY.as_millis()
        ))
    });
    let events = Box::pin(events.map(|e| frame(&e.id, &e.data)));
    let kept_alive = stream::unfold(events, |mut events| async move {
        tokio::select! {
            next = events.next() => next.map(|bytes| (bytes, events)),
            () = tokio::time::sleep(KEEP_ALIVE) => Some((Bytes::from_static(b":\n\n"), events)),
        }
    });
    let body = stream::iter(first)
        .chain(kept_alive)
        .map(Ok::<_, Infallible>);
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// One event: its id, and its data a `data:` line for each line of it (a message's
/// JSON is one line; JSON relayed as a server sent it may hold line breaks between its
/// tokens, each of which starts a `data:` line, which the client joins back).
fn frame(id: &str, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + id.len() + 16);
    out.extend_from_slice(b"id: ");
    // An id is the bridge's own (`{stream}-{n}`): no line break in it.
    out.extend_from_slice(id.as_bytes());
    out.push(b'\n');
    for line in data.split(|b| *b == b'\n' || *b == b'\r') {
        if line.is_empty() && !data.is_empty() {
            continue;
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_its_id_and_its_data_lines() {
        let one = frame("2-7", br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(
            &one[..],
            b"id: 2-7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
        );
        // Line breaks between JSON tokens (a server's pretty-printed answer) never end
        // the event early.
        let pretty = frame("0-1", b"{\r\n \"a\": 1\n}");
        assert_eq!(
            &pretty[..],
            b"id: 0-1\ndata: {\ndata:  \"a\": 1\ndata: }\n\n"
        );
    }
}
