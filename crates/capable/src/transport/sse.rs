//! Reading a `text/event-stream` HTTP body as MCP messages, with the bookkeeping
//! resumption needs: the last event id seen and the server's `retry` advice.
//!
//! Parsing the SSE format itself is left to `eventsource-stream`; this file adds a size
//! limit per event (memory stays bounded) and tells MCP messages apart from priming and
//! keep-alive events.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;

use super::TransportError;

/// One SSE event that matters to MCP.
#[derive(Debug)]
pub enum SseItem {
    /// A message (`data` holds one JSON-RPC message).
    Message(Vec<u8>),
    /// The `endpoint` event of the 2024-11-05 HTTP+SSE transport.
    Endpoint(String),
}

/// An SSE response body being read.
pub struct SseReader {
    events: futures_util::stream::BoxStream<'static, Result<eventsource_stream::Event, String>>,
    /// The id of the last event that carried one.
    pub last_event_id: Option<String>,
    /// The last `retry` the server asked for.
    pub retry: Option<Duration>,
    limit: usize,
}

impl SseReader {
    /// Reads `response` as an event stream, refusing events larger than `limit` bytes.
    pub fn new(response: reqwest::Response, limit: usize) -> Self {
        let mut pending = 0usize;
        let bytes = response.bytes_stream().map(move |chunk| {
            let chunk = chunk.map_err(|e| e.to_string())?;
            // A rough bound: bytes received since the last event boundary.
            if chunk.windows(2).any(|w| w == b"\n\n") {
                pending = 0;
            }
            pending += chunk.len();
            if pending > limit.saturating_add(64 * 1024) {
                return Err(format!(
                    "an SSE event larger than the limit of {limit} bytes"
                ));
            }
            Ok(chunk)
        });
        let events = bytes
            .eventsource()
            .map(|e| e.map_err(|e| e.to_string()))
            .boxed();
        SseReader {
            events,
            last_event_id: None,
            retry: None,
            limit,
        }
    }

    /// The next MCP item; `Ok(None)` when the stream ended.
    pub async fn next(&mut self) -> Result<Option<SseItem>, TransportError> {
        while let Some(event) = self.events.next().await {
            let event = event.map_err(TransportError::Io)?;
            if !event.id.is_empty() {
                self.last_event_id = Some(event.id.clone());
            }
            if event.retry.is_some() {
                self.retry = event.retry;
            }
            if event.data.trim().is_empty() {
                // A priming event (id and retry only) or a keep-alive.
                continue;
            }
            if event.data.len() > self.limit {
                return Err(TransportError::MessageTooLarge { limit: self.limit });
            }
            match event.event.as_str() {
                "endpoint" => return Ok(Some(SseItem::Endpoint(event.data))),
                "message" | "" => return Ok(Some(SseItem::Message(event.data.into_bytes()))),
                other => {
                    tracing::debug!("ignored SSE event of type {other:?}");
                }
            }
        }
        Ok(None)
    }
}
