//! Resources: read one (`capable read --json`'s answer), watch one (its events follow
//! on the stream, `capable watch --json`'s lines), stop watching.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::json;

use crate::extract::{Answer, Command, Deadline, Reply};
use crate::state::AppState;

/// The shortest poll interval the page may ask for.
const MIN_POLL: Duration = Duration::from_millis(100);
/// The longest (a day).
const MAX_POLL: Duration = Duration::from_secs(24 * 60 * 60);

/// `{server, uri}`.
#[derive(Deserialize)]
pub struct Read {
    server: String,
    uri: String,
}

/// `POST /api/read {server, uri}`: `capable read --json`.
pub async fn read(
    State(app): State<Arc<AppState>>,
    deadline: Deadline,
    Command(c): Command<Read>,
) -> Answer {
    let session = app.servers.session(&c.server)?;
    let read = deadline.run(session.read_resource(&c.uri)).await?;
    Ok(Reply(json!(read)))
}

/// `{server, uri, pollMs?}`.
#[derive(Deserialize)]
pub struct Watch {
    server: String,
    uri: String,
    /// Re-read on this schedule when the server offers no subscription (between
    /// 100 ms and a day; none, or 0: no polling).
    #[serde(rename = "pollMs")]
    poll_ms: Option<f64>,
}

/// `POST /api/watch {server, uri, pollMs?}`: `{watch: ID}`; the watch's events
/// follow on the stream.
pub async fn watch(
    State(app): State<Arc<AppState>>,
    headers: HeaderMap,
    Command(c): Command<Watch>,
) -> Answer {
    let session = app.servers.session(&c.server)?;
    let poll = c
        .poll_ms
        .filter(|ms| *ms > 0.0)
        // `as` saturates: no value of the page's makes a duration out of range.
        .map(|ms| Duration::from_millis(ms.round() as u64).clamp(MIN_POLL, MAX_POLL));
    // The page that starts it owns it: it stops when that page is gone.
    let page = headers
        .get(crate::security::PAGE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let id = app
        .watches
        .start(&c.server, page, session, c.uri, poll)
        .await?;
    Ok(Reply(json!({"watch": id})))
}

/// `{watch}`.
#[derive(Deserialize)]
pub struct Unwatch {
    watch: u64,
}

/// `POST /api/unwatch {watch}`: `{stopped}`, whether it was running.
pub async fn unwatch(State(app): State<Arc<AppState>>, Command(c): Command<Unwatch>) -> Answer {
    Ok(Reply(json!({"stopped": app.watches.stop(c.watch).await})))
}
