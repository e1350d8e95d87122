//! stdio: the server is a child process; messages are newline-delimited JSON on its
//! stdin and stdout. Its stderr is captured (the last lines are kept) and is not an
//! error signal.
//!
//! Shutdown follows the spec: close the server's stdin, wait for it to exit, then
//! SIGTERM, then SIGKILL, each step bounded.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::{BoxFuture, DirectWriter, MessageSink, MessageSource, Peer, Transport, TransportError};

/// How to start a stdio server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (added to the inherited environment).
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
}

impl ServerCommand {
    /// A command with arguments.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ServerCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// The command line, for messages.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Limits of the stdio transport.
#[derive(Clone, Copy, Debug)]
pub struct StdioLimits {
    /// The largest message accepted, in bytes.
    pub max_message_size: usize,
    /// How long shutdown waits after closing stdin, and again after SIGTERM.
    pub shutdown_grace: Duration,
}

impl Default for StdioLimits {
    fn default() -> Self {
        StdioLimits {
            max_message_size: 64 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
#[error("could not start `{command}`: {source}")]
pub struct SpawnError {
    /// The command line.
    pub command: String,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// A started stdio server.
pub struct StdioTransport {
    stdin: ChildStdin,
    stdout: ChildStdout,
    peer: StdioPeer,
    limits: StdioLimits,
}

impl StdioTransport {
    /// Starts the server process.
    pub fn spawn(
        command: &ServerCommand,
        limits: StdioLimits,
    ) -> Result<StdioTransport, SpawnError> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .envs(&command.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group: a Ctrl-C at the terminal reaches capable only, which
        // then ends the session in order (unsubscribe, close stdin, wait, SIGTERM, SIGKILL).
        #[cfg(unix)]
        cmd.process_group(0);
        if let Some(cwd) = &command.cwd {
            cmd.current_dir(cwd);
        }
        let err = |source| SpawnError {
            command: command.display(),
            source,
        };
        let mut child = cmd.spawn().map_err(err)?;
        let missing = || err(std::io::Error::other("stdio pipe missing"));
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;
        let tail = Arc::new(Mutex::new(StderrTail::default()));
        let tail2 = tail.clone();
        let (stderr_ended_tx, stderr_ended) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "capable::server_stderr", "{line}");
                if let Ok(mut t) = tail2.lock() {
                    t.push(line);
                }
            }
            let _ = stderr_ended_tx.send(true);
        });
        Ok(StdioTransport {
            stdin,
            stdout,
            peer: StdioPeer {
                pid: child.id(),
                child: tokio::sync::Mutex::new(child),
                tail,
                stderr_ended,
                command: command.display(),
                grace: limits.shutdown_grace,
            },
            limits,
        })
    }
}

impl Transport for StdioTransport {
    type Sink = StdioSink;
    type Source = LineSource<ChildStdout>;

    fn split(self) -> (StdioSink, Self::Source, Box<dyn Peer>) {
        (
            StdioSink { stdin: self.stdin },
            LineSource::new(self.stdout, self.limits.max_message_size),
            Box::new(self.peer),
        )
    }
}

/// The server's stdin.
pub struct StdioSink {
    stdin: ChildStdin,
}

impl MessageSink for StdioSink {
    async fn send(&mut self, batch: &[u8]) -> Result<(), TransportError> {
        let io =
            |e: std::io::Error| TransportError::Io(format!("writing to the server's stdin: {e}"));
        self.stdin.write_all(batch).await.map_err(io)?;
        self.stdin.flush().await.map_err(io)
    }

    /// A duplicate of the stdin pipe's descriptor. tokio made the pipe non-blocking
    /// (a flag of the pipe, shared by the duplicate), and a pipe takes a write of up
    /// to `PIPE_BUF` bytes whole or not at all.
    fn direct(&self) -> Option<DirectWriter> {
        use std::os::fd::AsFd;
        let fd = self.stdin.as_fd().try_clone_to_owned().ok()?;
        Some(Box::new(std::fs::File::from(fd)))
    }
}

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
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageSource for LineSource<R> {
    async fn recv(&mut self) -> Result<Option<Bytes>, TransportError> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
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
                return Ok(Some(line.freeze()));
            }
            self.scanned = self.buf.len();
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
                .map_err(|e| TransportError::Io(format!("reading the server's stdout: {e}")))?;
            self.ended = n == 0;
        }
    }
}

#[derive(Default)]
struct StderrTail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl StderrTail {
    const MAX_LINES: usize = 200;
    const MAX_BYTES: usize = 64 * 1024;

    fn push(&mut self, mut line: String) {
        if line.len() > Self::MAX_BYTES {
            let mut cut = Self::MAX_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.lines.len() > Self::MAX_LINES || self.bytes > Self::MAX_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }
}

struct StdioPeer {
    pid: Option<u32>,
    child: tokio::sync::Mutex<Child>,
    tail: Arc<Mutex<StderrTail>>,
    /// Becomes `true` when the server's stderr reaches its end.
    stderr_ended: tokio::sync::watch::Receiver<bool>,
    command: String,
    grace: Duration,
}

/// How long an exited server's last stderr lines may take to be read.
const STDERR_DRAIN: Duration = Duration::from_millis(250);

fn describe_status(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => status.to_string(),
    }
}

impl StdioPeer {
    fn signal(&self, signal: libc::c_int) {
        if let Some(pid) = self.pid {
            // SAFETY: kill(2) with our own child's pid; no memory is touched.
            unsafe {
                libc::kill(pid as libc::pid_t, signal);
            }
        }
    }
}

impl Peer for StdioPeer {
    fn exit_status(&self, grace: Duration) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let mut child = self.child.lock().await;
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(Ok(status)) => {
                    // Its last words (a panic, a crash message) are what the host needs
                    // in the error: read its stderr to the end first (bounded, since a
                    // child of the server may still hold it open).
                    let mut ended = self.stderr_ended.clone();
                    let _ = tokio::time::timeout(STDERR_DRAIN, ended.wait_for(|e| *e)).await;
                    Some(describe_status(status))
                }
                _ => None,
            }
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let mut child = self.child.lock().await;
            if let Ok(Some(status)) = child.try_wait() {
                return Some(describe_status(status));
            }
            if let Ok(Ok(status)) = tokio::time::timeout(self.grace, child.wait()).await {
                return Some(describe_status(status));
            }
            self.signal(libc::SIGTERM);
            if let Ok(Ok(status)) = tokio::time::timeout(self.grace, child.wait()).await {
                return Some(describe_status(status));
            }
            let _ = child.start_kill();
            match tokio::time::timeout(self.grace, child.wait()).await {
                Ok(Ok(status)) => Some(describe_status(status)),
                _ => None,
            }
        })
    }

    fn stderr_tail(&self) -> String {
        self.tail
            .lock()
            .map(|t| {
                t.lines
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    fn describe(&self) -> String {
        self.command.clone()
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
            match source.recv().await {
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
            assert_eq!(error, Some(TransportError::MessageTooLarge { limit: 1000 }));
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
