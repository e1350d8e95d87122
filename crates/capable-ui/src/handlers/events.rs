//! `GET /api/events`: the page's one live stream (see `bus.rs`).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::Stream;

use std::sync::Arc;

use crate::state::AppState;

/// `GET /api/events`: the stream, resumed after `Last-Event-ID` when the browser sends
/// one.
pub async fn handler(
    State(app): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let events = futures_util::StreamExt::map(app.bus.follow(after), |e| {
        Ok(Event::default()
            .id(e.id.to_string())
            .event(e.kind)
            .data(&*e.data))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
