//! The 2024-11-05 HTTP+SSE transport, reached automatically when a URL refuses
//! Streamable HTTP's `initialize` POST with 400, 404 or 405.
//!
//! The client GETs the URL as an event stream. The server's first event, `endpoint`,
//! names the URL to POST messages to; every answer and server message then arrives as a
//! `message` event on that one stream.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT};
use reqwest::Method as HttpMethod;

use super::http::{Http, Mode};
use super::sse::{SseItem, SseReader};
use super::TransportError;

/// Opens the event stream, waits for its `endpoint` event and switches the connection
/// to it. The stream is then read in the background until it ends.
pub(super) async fn open(http: &Arc<Http>) -> Result<(), TransportError> {
    let url = http.config.url.clone();
    let mut headers = http.user_headers();
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let resp = http.send(HttpMethod::GET, &url, headers, None).await?;
    if !resp.status().is_success() {
        return Err(TransportError::Io(format!(
            "GET {url} answered HTTP {}",
            resp.status()
        )));
    }
    let mut reader = SseReader::new(resp, http.config.max_message_size);
    let first = tokio::time::timeout(Duration::from_secs(10), reader.next())
        .await
        .map_err(|_| TransportError::Io(format!("GET {url}: no `endpoint` event within 10s")))??;
    let endpoint = match first {
        Some(SseItem::Endpoint(path)) => url
            .join(path.trim())
            .map_err(|e| TransportError::Io(format!("GET {url}: bad endpoint {path:?}: {e}")))?,
        Some(SseItem::Message(_)) | None => {
            return Err(TransportError::Io(format!(
                "GET {url}: the stream did not start with an `endpoint` event"
            )))
        }
    };
    tracing::info!("{url} is a 2024-11-05 HTTP+SSE endpoint; posting to {endpoint}");
    http.set_mode(Mode::LegacySse { endpoint });
    let pump = tokio::spawn({
        let http = http.clone();
        async move {
            loop {
                match reader.next().await {
                    Ok(Some(SseItem::Message(m))) => http.deliver(m).await,
                    Ok(Some(SseItem::Endpoint(_))) => {}
                    Ok(None) => {
                        http.deliver_error(TransportError::Io(format!(
                            "the server closed its event stream at {url}"
                        )))
                        .await;
                        return;
                    }
                    Err(e) => {
                        http.deliver_error(e).await;
                        return;
                    }
                }
            }
        }
    });
    http.track(pump.abort_handle());
    Ok(())
}
