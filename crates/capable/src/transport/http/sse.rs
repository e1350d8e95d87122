//! Reading a `text/event-stream` HTTP body as MCP events, with the bookkeeping
//! resumption needs: the last event id seen and the server's `retry` advice.
//!
//! The format is decoded by [`SseDecoder`], in one pass
//! with a size limit per event (memory stays bounded); this file tells MCP messages
//! apart from priming and keep-alive events. What an event means is the core's
//! business.

use std::time::Duration;

pub use capable_core::internal::http::StreamEvent;
use futures_util::StreamExt;

use super::sse_decoder::SseDecoder;
use crate::transport::TransportError;

type Chunks = futures_util::stream::BoxStream<
    'static,
    Result<bytes::Bytes, Box<dyn std::error::Error + Send + Sync>>,
>;

/// An SSE response body being read.
pub struct SseReader {
    chunks: Chunks,
    decoder: SseDecoder,
    /// The id of the last event that carried one.
    pub last_event_id: Option<String>,
    /// The last `retry` the server asked for.
    pub retry: Option<Duration>,
}

impl SseReader {
    /// Reads `response` as an event stream, refusing events larger than `limit` bytes.
    pub fn new(response: reqwest::Response, limit: usize) -> Self {
        SseReader::from_body(reqwest::Body::from(response), limit)
    }

    /// Reads an answer's `body` as an event stream, refusing events larger than
    /// `limit` bytes.
    pub fn from_body<B>(body: B, limit: usize) -> Self
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let chunks =
            http_body_util::BodyDataStream::new(body).map(|chunk| chunk.map_err(Into::into));
        SseReader {
            chunks: chunks.boxed(),
            decoder: SseDecoder::new(limit),
            last_event_id: None,
            retry: None,
        }
    }

    /// The next MCP event; `Ok(None)` when the stream ended; an error when it broke
    /// ([`TransportError::Broken`]) or an event was over the limit
    /// ([`TransportError::MessageTooLarge`], at once).
    pub async fn next(&mut self) -> Result<Option<StreamEvent>, TransportError> {
        loop {
            while let Some(event) = self.decoder.next_event() {
                self.last_event_id = self.decoder.last_event_id.clone();
                self.retry = self.decoder.retry;
                if event.data.iter().all(u8::is_ascii_whitespace) {
                    // A priming event (id and retry only) or a keep-alive.
                    continue;
                }
                match event.event.as_str() {
                    "endpoint" => {
                        let path = String::from_utf8_lossy(&event.data).into_owned();
                        return Ok(Some(StreamEvent::Endpoint(path)));
                    }
                    "message" | "" => return Ok(Some(StreamEvent::Message(event.data))),
                    other => tracing::debug!("ignored SSE event of type {other:?}"),
                }
            }
            self.last_event_id = self.decoder.last_event_id.clone();
            self.retry = self.decoder.retry;
            match self.chunks.next().await {
                Some(Ok(chunk)) => self.decoder.feed(&chunk)?,
                Some(Err(e)) => {
                    return Err(TransportError::Broken(format!(
                        "the event stream broke: {e}"
                    )))
                }
                None => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::transport::test_rng::Rng;

    /// A response whose body arrives in the given chunks.
    fn response(chunks: Vec<Vec<u8>>) -> reqwest::Response {
        let stream = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        let body = reqwest::Body::wrap_stream(stream);
        reqwest::Response::from(http::Response::new(body))
    }

    fn chunked(bytes: &[u8], rng: &mut Rng) -> Vec<Vec<u8>> {
        let mut chunks = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let n = (1 + rng.below(40) as usize).min(bytes.len() - at);
            chunks.push(bytes[at..at + n].to_vec());
            at += n;
        }
        chunks
    }

    #[tokio::test]
    async fn messages_ids_and_retry_survive_any_chunking() {
        let mut rng = Rng(7);
        for _ in 0..200 {
            let mut text = String::new();
            let mut expected = Vec::new();
            let mut last_id = None;
            let mut retry = None;
            let nl = if rng.below(2) == 0 { "\n" } else { "\r\n" };
            for i in 0..rng.below(8) {
                if rng.below(3) == 0 {
                    // A priming event: id and retry, no data.
                    let ms = rng.below(5000);
                    text.push_str(&format!("id: p{i}{nl}retry: {ms}{nl}data: {nl}{nl}"));
                    last_id = Some(format!("p{i}"));
                    retry = Some(Duration::from_millis(ms));
                } else if rng.below(5) == 0 {
                    text.push_str(&format!(": keep-alive{nl}{nl}"));
                } else {
                    let message = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{}}}}");
                    text.push_str(&format!(
                        "id: m{i}{nl}event: message{nl}data: {message}{nl}{nl}"
                    ));
                    last_id = Some(format!("m{i}"));
                    expected.push(message.into_bytes());
                }
            }
            let mut reader = SseReader::new(response(chunked(text.as_bytes(), &mut rng)), 1 << 20);
            let mut got = Vec::new();
            while let Some(item) = reader.next().await.unwrap() {
                match item {
                    StreamEvent::Message(m) => got.push(m),
                    StreamEvent::Endpoint(e) => panic!("unexpected endpoint {e}"),
                }
            }
            assert_eq!(got, expected, "{text:?}");
            assert_eq!(reader.last_event_id, last_id, "{text:?}");
            assert_eq!(reader.retry, retry, "{text:?}");
        }
    }

    #[tokio::test]
    async fn the_endpoint_event_is_told_apart_from_messages() {
        let text =
            b"event: endpoint\ndata: /message?sessionId=1\n\nevent: message\ndata: {}\n\n".to_vec();
        let mut reader = SseReader::new(response(vec![text]), 1024);
        assert!(
            matches!(reader.next().await.unwrap(), Some(StreamEvent::Endpoint(e)) if e == "/message?sessionId=1")
        );
        assert!(
            matches!(reader.next().await.unwrap(), Some(StreamEvent::Message(m)) if m == b"{}")
        );
        assert!(reader.next().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn an_event_over_the_limit_is_an_error_and_garbage_never_panics() {
        let big = format!("data: {}\n\n", "x".repeat(5000));
        let mut reader = SseReader::new(response(vec![big.into_bytes()]), 1000);
        assert!(reader.next().await.is_err());
        let mut rng = Rng(99);
        for _ in 0..200 {
            let bytes: Vec<u8> = (0..rng.below(600)).map(|_| rng.below(256) as u8).collect();
            let mut reader = SseReader::new(response(chunked(&bytes, &mut rng)), 256);
            for _ in 0..1000 {
                match reader.next().await {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => break,
                }
            }
        }
    }
}
