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
    // While a page's stream is open the page is there (its watches go when it is not).
    let page = headers
        .get(crate::security::PAGE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|page| app.watches.page_opened(page));
    let events = futures_util::StreamExt::map(app.bus.follow(after), move |e| {
        let _page = &page;
        Ok(Event::default()
            .id(e.id.to_string())
            .event(e.kind)
            .data(&*e.data))
    });
    // A keep-alive every 5 s: a page gone without a word is noticed at the second
    // write after it went (the first is taken by the system, the second refused).
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(5)))
}
