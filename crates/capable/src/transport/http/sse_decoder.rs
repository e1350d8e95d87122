//! The `text/event-stream` format, decoded in one pass: bytes in, events out, no I/O.
//!
//! A stream is lines (ended by CRLF, LF or CR). `data:` lines of one event are joined
//! with newlines, `event:` names its type, `id:` sets the last event id, `retry:` the
//! reconnection delay; a line starting with `:` is a comment; an empty line ends the
//! event. Every byte is looked at once — a long event costs time in proportion to its
//! length, never its square — and memory is bounded: an event, or a line, longer than
//! the limit is an error as soon as it is seen, not after it has been buffered whole.

use std::collections::VecDeque;
use std::time::Duration;

use crate::transport::TransportError;

/// One event, as dispatched by an empty line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `event:` (empty: a `message`).
    pub event: String,
    /// The joined `data:` lines.
    pub data: Vec<u8>,
}

/// A decoder of one event stream. See the module documentation.
#[derive(Debug)]
pub struct SseDecoder {
    limit: usize,
    /// Bytes of the line being read (not yet terminated).
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF that starts the next one belongs to it.
    after_cr: bool,
    /// Whether the stream's first line is still to come (a BOM may start it).
    first_line: bool,
    event: SseEvent,
    /// Whether the event being built has a `data` field at all.
    has_data: bool,
    ready: VecDeque<SseEvent>,
    /// The id of the last event that carried one (`id:`).
    pub last_event_id: Option<String>,
    /// The last `retry` the server asked for.
    pub retry: Option<Duration>,
}

impl SseDecoder {
    /// A decoder that refuses events (and lines) longer than `limit` bytes.
    pub fn new(limit: usize) -> SseDecoder {
        SseDecoder {
            limit,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            event: SseEvent::default(),
            has_data: false,
            ready: VecDeque::new(),
            last_event_id: None,
            retry: None,
        }
    }

    /// Feeds the next chunk of the stream.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<(), TransportError> {
        // An empty chunk tells nothing of the byte after a CR: the next one will.
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            self.append(&chunk[..end])?;
            let line = std::mem::take(&mut self.line);
            self.line_done(&line)?;
            self.line = line;
            self.line.clear();
            let cr = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.append(chunk)
    }

    /// The next complete event, if any.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), TransportError> {
        // The event so far and the line being read: refused before either grows past
        // the limit (the slack is for a field name).
        let pending = self.event.data.len() + self.line.len() + bytes.len();
        if pending > self.limit.saturating_add(64) {
            return Err(TransportError::MessageTooLarge { limit: self.limit });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn line_done(&mut self, mut line: &[u8]) -> Result<(), TransportError> {
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        if line.starts_with(b":") {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.event.data.push(b'\n');
                }
                self.has_data = true;
                if self.event.data.len() + value.len() > self.limit {
                    return Err(TransportError::MessageTooLarge { limit: self.limit });
                }
                self.event.data.extend_from_slice(value);
            }
            b"event" => self.event.event = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.last_event_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok());
                if let Some(ms) = ms {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self) {
        let event = std::mem::take(&mut self.event);
        if std::mem::take(&mut self.has_data) {
            self.ready.push_back(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> (Vec<SseEvent>, SseDecoder) {
        let mut d = SseDecoder::new(1 << 20);
        let mut events = Vec::new();
        for chunk in chunks {
            d.feed(chunk).unwrap();
            while let Some(e) = d.next_event() {
                events.push(e);
            }
        }
        (events, d)
    }

    #[test]
    fn fields_lines_and_terminators_read_as_the_format_says() {
        let (events, d) = decode(&[
            b"\xef\xbb\xbf: a comment\r\nid: 7\r\nretry: 1500\r\ndata: one\r\ndata:two\r\n\r\n",
            b"event: endpoint\rdata: /m?s=1\r\r",
            b"data\n\ndata: x\n",
        ]);
        assert_eq!(
            events,
            [
                SseEvent {
                    event: String::new(),
                    data: b"one\ntwo".to_vec()
                },
                SseEvent {
                    event: "endpoint".into(),
                    data: b"/m?s=1".to_vec()
                },
                SseEvent {
                    event: String::new(),
                    data: Vec::new()
                },
            ]
        );
        assert_eq!(d.last_event_id.as_deref(), Some("7"));
        assert_eq!(d.retry, Some(Duration::from_millis(1500)));
    }

    #[test]
    fn a_crlf_split_across_chunks_is_one_line_end() {
        let (events, _) = decode(&[b"data: a\r", b"\n\r", b"\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, b"a");
    }

    #[test]
    fn an_empty_chunk_between_cr_and_lf_does_not_split_the_line_end() {
        let (events, _) = decode(&[b"data: a\r", b"", b"\ndata: b\n\n"]);
        assert_eq!(
            events,
            [SseEvent {
                event: String::new(),
                data: b"a\nb".to_vec()
            }]
        );
    }

    #[test]
    fn an_event_over_the_limit_is_an_error_as_soon_as_it_is_seen() {
        let mut d = SseDecoder::new(1000);
        let line = vec![b'x'; 600];
        d.feed(b"data: ").unwrap();
        d.feed(&line).unwrap();
        d.feed(b"\ndata: ").unwrap();
        assert!(matches!(
            d.feed(&line),
            Err(TransportError::MessageTooLarge { limit: 1000 })
        ));
        // A line that never ends is refused before it is buffered whole.
        let mut d = SseDecoder::new(1000);
        d.feed(b"data: ").unwrap();
        assert!(d.feed(&vec![b'y'; 5000]).is_err());
    }

    #[test]
    fn a_long_event_is_decoded_whole_in_one_pass() {
        let mut d = SseDecoder::new(32 << 20);
        let body = vec![b'z'; 16 << 20];
        d.feed(b"data: ").unwrap();
        for chunk in body.chunks(16 * 1024) {
            d.feed(chunk).unwrap();
        }
        d.feed(b"\n\n").unwrap();
        let event = d.next_event().expect("the event");
        assert_eq!(event.data.len(), 16 << 20);
    }
}
