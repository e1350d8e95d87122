//! Any bytes, cut into any chunks (empty ones included), through the SSE decoder:
//! the events, the last event id and the retry are exactly those of a reference
//! written from the `text/event-stream` format alone (CR, LF and CRLF line ends, a
//! BOM at the start, comments, the `data`/`event`/`id`/`retry` fields), read over the
//! whole stream at once; and the size limit ends the stream exactly where it is
//! exceeded.

#![no_main]

use std::time::Duration;

use capable::transport::http::sse_decoder::{SseDecoder, SseEvent};
use capable::transport::TransportError;
use libfuzzer_sys::fuzz_target;

/// The input's layout: the limit (two bytes, little-endian), how many cut bytes
/// follow (one byte, up to 31), the cuts, then the stream itself.
struct Input<'a> {
    limit: u16,
    cuts: &'a [u8],
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    fn read(data: &'a [u8]) -> Option<Input<'a>> {
        let (head, rest) = data.split_at_checked(3)?;
        let (cuts, bytes) = rest.split_at_checked(usize::from(head[2] % 32))?;
        Some(Input {
            limit: u16::from_le_bytes([head[0], head[1]]),
            cuts,
            bytes,
        })
    }
}

/// What a stream holds, as the format reads it.
#[derive(Debug, Default, PartialEq)]
struct Decoded {
    events: Vec<SseEvent>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
    too_large: bool,
}

/// The slack the decoder allows a line beyond the limit (for a field name).
const SLACK: usize = 64;

/// The format over the whole stream: lines first, then fields.
fn reference(stream: &[u8], limit: usize) -> Decoded {
    let mut d = Decoded::default();
    // Lines: ended by CRLF, LF or CR; a last line with no end is never processed.
    let mut lines: Vec<(&[u8], bool)> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < stream.len() {
        match stream[i] {
            b'\n' => {
                lines.push((&stream[start..i], true));
                start = i + 1;
            }
            b'\r' => {
                lines.push((&stream[start..i], true));
                if stream.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    lines.push((&stream[start..], false));

    let (mut data, mut has_data, mut event) = (Vec::<u8>::new(), false, String::new());
    for (n, (raw, ended)) in lines.into_iter().enumerate() {
        // Memory: the event so far and the line being read stay within the limit.
        if data.len() + raw.len() > limit + SLACK {
            d.too_large = true;
            return d;
        }
        if !ended {
            break;
        }
        let line = match n {
            0 => raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw),
            _ => raw,
        };
        if line.is_empty() {
            if has_data {
                d.events.push(SseEvent {
                    event: std::mem::take(&mut event),
                    data: std::mem::take(&mut data),
                });
            }
            (data, has_data, event) = (Vec::new(), false, String::new());
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                let len = if has_data { data.len() + 1 } else { 0 } + value.len();
                if len > limit {
                    d.too_large = true;
                    return d;
                }
                if has_data {
                    data.push(b'\n');
                }
                data.extend_from_slice(value);
                has_data = true;
            }
            b"event" => event = String::from_utf8_lossy(value).into_owned(),
            b"id" => {
                if !value.contains(&0) {
                    d.last_event_id = Some(String::from_utf8_lossy(value).into_owned());
                }
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().try_fold(0u64, |ms, digit| {
                    ms.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
                });
                if let Some(ms) = ms {
                    d.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }
    d
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::read(data) else {
        return;
    };
    let limit = usize::from(input.limit % 2048);
    let mut decoder = SseDecoder::new(limit);
    let mut got = Decoded::default();
    // Each cut feeds `cut / 4` bytes, or (bit 1) up to just after the next CR or LF,
    // then (bit 0) an empty chunk, as a transport may hand one out anywhere; the rest
    // goes in one.
    let mut rest = input.bytes;
    let mut chunks = Vec::new();
    for c in input.cuts.iter().copied() {
        let n = match c & 2 {
            0 => usize::from(c >> 2).min(rest.len()),
            _ => rest
                .iter()
                .position(|b| matches!(b, b'\r' | b'\n'))
                .map_or(rest.len(), |i| i + 1),
        };
        let (chunk, later) = rest.split_at(n);
        rest = later;
        chunks.push(chunk);
        if c & 1 == 1 {
            chunks.push(&[][..]);
        }
    }
    chunks.push(rest);
    for chunk in chunks {
        let fed = decoder.feed(chunk);
        while let Some(event) = decoder.next_event() {
            assert!(event.data.len() <= limit, "an event over the limit");
            got.events.push(event);
        }
        match fed {
            Ok(()) => {}
            Err(TransportError::MessageTooLarge { limit: l }) => {
                assert_eq!(l, limit);
                got.too_large = true;
                break;
            }
            Err(e) => panic!("an error that is not the limit: {e}"),
        }
    }
    let expected = reference(input.bytes, limit);
    assert_eq!(got.events, expected.events, "events");
    assert_eq!(got.too_large, expected.too_large, "the limit");
    if !got.too_large {
        got.last_event_id = decoder.last_event_id.clone();
        got.retry = decoder.retry;
        assert_eq!(got, expected);
    }
});
