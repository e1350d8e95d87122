//! Any bytes, cut into any chunks, through the stdio line framer (`LineSource`): the
//! lines it hands out are exactly those of a naive split on `\n` (a CR before the LF
//! dropped, blank lines skipped, a last unterminated line kept), and a line over the
//! limit is the limit error at that point, after the lines before it.

#![no_main]

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use capable::transport::stdio::LineSource;
use capable::transport::TransportError;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, ReadBuf};

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

/// A pipe that hands out its bytes a chunk at a time.
struct Chunked<'a> {
    bytes: &'a [u8],
    cuts: &'a [u8],
    reads: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let cut = match self.cuts {
            [] => usize::MAX,
            cuts => usize::from(cuts[self.reads % cuts.len()]) + 1,
        };
        self.reads += 1;
        let n = cut.min(buf.remaining()).min(self.bytes.len());
        let (now, later) = self.bytes.split_at(n);
        buf.put_slice(now);
        self.bytes = later;
        Poll::Ready(Ok(()))
    }
}

/// Runs a future whose reader is always ready.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a ready reader left the framer pending"),
    }
}

/// The framer's contract, naively: lines and whether the limit ended them.
fn reference(bytes: &[u8], limit: usize) -> (Vec<&[u8]>, bool) {
    let mut lines = Vec::new();
    let segments: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last = segments.len() - 1;
    for (i, segment) in segments.into_iter().enumerate() {
        if segment.len() > limit {
            return (lines, true);
        }
        let line = match i < last {
            true => segment.strip_suffix(b"\r").unwrap_or(segment),
            false => segment,
        };
        if !line.iter().all(u8::is_ascii_whitespace) {
            lines.push(line);
        }
    }
    (lines, false)
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::read(data) else {
        return;
    };
    let limit = usize::from(input.limit % 1024);
    let reader = Chunked {
        bytes: input.bytes,
        cuts: input.cuts,
        reads: 0,
    };
    let mut source = LineSource::new(reader, limit);
    let mut lines = Vec::new();
    let too_large = loop {
        match block_on(source.next_line()) {
            Ok(Some(line)) => {
                assert!(line.len() <= limit, "a line over the limit was handed out");
                lines.push(line);
            }
            Ok(None) => break false,
            Err(TransportError::MessageTooLarge { limit: l }) => {
                assert_eq!(l, limit);
                break true;
            }
            Err(e) => panic!("an error that is not the limit: {e}"),
        }
    };
    let (expected, expected_too_large) = reference(input.bytes, limit);
    assert_eq!(
        lines.iter().map(|l| &l[..]).collect::<Vec<_>>(),
        expected,
        "lines"
    );
    assert_eq!(too_large, expected_too_large, "the limit error");
});
