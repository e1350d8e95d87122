//! Newline-delimited JSON over a byte stream (the server's stdout), split into lines
//! without copying them, with a size limit that bounds memory.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::transport::{Inbound, MessageSource, TransportError};

/// Newline-delimited messages from any byte stream, with a size limit.
///
/// Bytes are read into one growing buffer and each line is split off it, not copied:
/// the line handed out shares the buffer's memory, and the buffer moves on past it.
/// Memory stays bounded: a line over `limit` is an error as soon as the buffered part
/// exceeds it, and reading never buffers more than `limit` plus one read.
pub struct LineSource<R> {
    reader: R,
    limit: usize,
    buf: BytesMut,
    /// How much of `buf` is known to hold no newline (not searched again).
    scanned: usize,
    /// The stream ended; what is left in `buf` is a last, unterminated line.
    ended: bool,
    /// The line handed out last was that unterminated rest.
    unterminated: bool,
    /// Lines handed out since the stream was last read: how far into a burst of
    /// buffered lines the caller is.
    run: u32,
}

/// How much a read asks for at a time.
const READ_SIZE: usize = 64 * 1024;

impl<R> LineSource<R> {
    /// Reads lines from `reader`, refusing any longer than `limit` bytes.
    pub fn new(reader: R, limit: usize) -> Self {
        LineSource {
            reader,
            limit,
            buf: BytesMut::new(),
            scanned: 0,
            ended: false,
            unterminated: false,
            run: 0,
        }
    }
}

impl<R> LineSource<R> {
    /// Whether the line [`next_line`](LineSource::next_line) gave last was the rest of
    /// a stream that ended without a final newline.
    pub fn ended_mid_line(&self) -> bool {
        self.unterminated
    }

    /// How many lines were handed out since the stream was last read, and whether
    /// more bytes wait in the buffer: `(run, more)`.
    pub fn run(&self) -> (u32, bool) {
        (self.run, self.scanned < self.buf.len())
    }

    /// `line` as the [`Inbound`] it is: a message, or an unterminated rest.
    pub fn inbound(&self, line: Option<Bytes>) -> Option<Inbound> {
        line.map(|l| match self.unterminated {
            true => Inbound::Unterminated(l),
            false => Inbound::Message(l),
        })
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageSource for LineSource<R> {
    async fn recv(&mut self) -> Result<Option<Inbound>, TransportError> {
        let line = self.next_line().await?;
        Ok(self.inbound(line))
    }
}

impl<R> LineSource<R> {
    /// The next whole line already in the buffer, without reading; `Ok(None)` when
    /// the buffer holds no whole line.
    pub fn buffered_line(&mut self) -> Result<Option<Bytes>, TransportError> {
        // Nothing new since the last look (a reader that waits looks twice per read):
        // no search.
        if self.scanned == self.buf.len() {
            return Ok(None);
        }
        while let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
            let len = self.scanned + i;
            self.scanned = 0;
            if len > self.limit {
                return Err(TransportError::MessageTooLarge { limit: self.limit });
            }
            let mut line = self.buf.split_to(len + 1);
            line.truncate(if line.ends_with(b"\r\n") {
                len - 1
            } else {
                len
            });
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.run = self.run.saturating_add(1);
            return Ok(Some(line.freeze()));
        }
        self.scanned = self.buf.len();
        Ok(None)
    }
}

impl<R: AsyncRead + Unpin> LineSource<R> {
    /// The next line without its terminator; `None` at the end of the stream.
    pub async fn next_line(&mut self) -> Result<Option<Bytes>, TransportError> {
        loop {
            if let Some(line) = self.buffered_line()? {
                return Ok(Some(line));
            }
            if self.buf.len() > self.limit {
                return Err(TransportError::MessageTooLarge { limit: self.limit });
            }
            if self.ended {
                // End of stream; a last unterminated line still counts.
                self.scanned = 0;
                let rest = self.buf.split().freeze();
                if rest.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                self.unterminated = true;
                return Ok(Some(rest));
            }
            if self.buf.capacity() - self.buf.len() < READ_SIZE {
                // Room for a full read: a short one would cost another read and
                // wake-up for what is already waiting in the pipe. A new buffer (lines
                // of the old one may still be out) holds two reads. A long partial
                // line's room at least doubles: growth stays geometric, so a line of n
                // bytes is copied O(n) times in all, never O(n²).
                self.buf.reserve((2 * READ_SIZE).max(self.buf.len()));
            }
            let n = self
                .reader
                .read_buf(&mut self.buf)
                .await
                .map_err(|e| TransportError::io("reading the server's stdout", e))?;
            self.ended = n == 0;
            self.run = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::transport::test_rng::Rng;

    /// Hands out its bytes at most `chunk` at a time, as a pipe may.
    struct Chunked {
        bytes: Vec<u8>,
        at: usize,
        chunk: usize,
    }

    impl AsyncRead for Chunked {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let n = self
                .chunk
                .min(buf.remaining())
                .min(self.bytes.len() - self.at);
            buf.put_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            std::task::Poll::Ready(Ok(()))
        }
    }

    async fn read_all(
        bytes: Vec<u8>,
        chunk: usize,
        limit: usize,
    ) -> (Vec<Vec<u8>>, Option<TransportError>) {
        let reader = Chunked {
            bytes,
            at: 0,
            chunk,
        };
        let mut source = LineSource::new(reader, limit);
        let mut lines = Vec::new();
        loop {
            match source.next_line().await {
                Ok(Some(line)) => lines.push(line.to_vec()),
                Ok(None) => return (lines, None),
                Err(e) => return (lines, Some(e)),
            }
        }
    }

    #[tokio::test]
    async fn lines_survive_any_chunking_and_blank_lines_are_skipped() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let count = rng.below(20) as usize;
            let mut expected = Vec::new();
            let mut bytes = Vec::new();
            for _ in 0..count {
                let len = 1 + rng.below(300) as usize;
                // Printable bytes (no newline), as a JSON line would be.
                let line: Vec<u8> = (0..len).map(|_| b'!' + rng.below(90) as u8).collect();
                bytes.extend_from_slice(&line);
                bytes.extend_from_slice(if rng.below(2) == 0 { b"\n" } else { b"\r\n" });
                if rng.below(4) == 0 {
                    bytes.extend_from_slice(b"\n  \n");
                }
                expected.push(line);
            }
            let buffer = 1 + rng.below(64) as usize;
            let (lines, error) = read_all(bytes, buffer, 1 << 20).await;
            assert!(error.is_none(), "{error:?}");
            assert_eq!(lines, expected, "buffer {buffer}");
        }
    }

    #[tokio::test]
    async fn a_long_line_arrives_whole_between_short_ones() {
        let long: Vec<u8> = (0..3_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut bytes = b"{\"first\":1}\n".to_vec();
        bytes.extend_from_slice(&long);
        bytes.extend_from_slice(b"\r\n{\"last\":1}");
        let (lines, error) = read_all(bytes, 64 * 1024, 4 << 20).await;
        assert!(error.is_none(), "{error:?}");
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], b"{\"first\":1}");
        assert!(lines[1] == long, "the long line differs");
        assert_eq!(
            lines[2], b"{\"last\":1}",
            "an unterminated last line still counts"
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_an_error_never_a_hang_or_a_panic() {
        let mut bytes = b"{\"ok\":1}\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 10_000));
        bytes.extend_from_slice(b"\n{\"after\":1}\n");
        for buffer in [1, 7, 64, 4096] {
            let (lines, error) = read_all(bytes.clone(), buffer, 1000).await;
            assert_eq!(lines, vec![b"{\"ok\":1}".to_vec()]);
            assert!(
                matches!(error, Some(TransportError::MessageTooLarge { limit: 1000 })),
                "{error:?}"
            );
        }
    }

    #[tokio::test]
    async fn arbitrary_bytes_never_panic_the_reader() {
        let mut rng = Rng(42);
        for _ in 0..500 {
            let len = rng.below(2000) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            let limit = 1 + rng.below(500) as usize;
            let (lines, _) = read_all(bytes, 1 + rng.below(32) as usize, limit).await;
            assert!(lines
                .iter()
                .all(|l| l.len() <= limit && !l.contains(&b'\n')));
        }
    }
}
