//! stdio: the server is a child process; messages are newline-delimited JSON on its
//! stdin and stdout. Its stderr is captured (its first and last lines are kept, and the
//! line that names its error) and is not an error signal.
//!
//! Shutdown follows the spec: close the server's stdin, wait for it to exit, then
//! SIGTERM, then SIGKILL, each step bounded and sent to the server's whole process
//! group. Unix only (pipes, process groups, signals).
//!
//! | file | concern |
//! |---|---|
//! | `lines.rs` | newline-delimited messages off the server's stdout |
//! | `overlap.rs` | whether to pause within a burst of answers, so the server works meanwhile ([`BurstPauses`]) |
//! | `process.rs` | stderr, exit status, shutdown of the process group |

mod lines;
mod overlap;
mod process;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use capable_core::Outbox;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout, Command};

pub use lines::LineSource;
pub use overlap::BurstPauses;
use process::{read_stderr, StderrTail, StdioPeer};

use super::shortcut::{Bypass, Sealed};
use super::{Inbound, MessageSink, MessageSource, Peer, Transport, TransportError};

/// The variables a server inherits from capable's environment by default: what a
/// program needs to find itself and its user's files, and nothing that is likely a
/// secret (`GITHUB_TOKEN`, cloud keys). The same set as the reference TypeScript SDK,
/// plus the locale and the temporary directory.
pub const DEFAULT_INHERITED_ENV: [&str; 11] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
    "TZ",
];

/// capable's own secrets in its environment, never passed to a server, even one that
/// inherits the whole environment ([`ServerCommand::inherit_env`]): the bridge
/// listener's bearer token, the gateway's client secret at its issuer.
pub const NEVER_INHERITED_ENV: [&str; 2] = ["CAPABLE_BRIDGE_TOKEN", "CAPABLE_AUTH_CLIENT_SECRET"];

/// How to start a stdio server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment: these variables, on top of [`DEFAULT_INHERITED_ENV`] taken from
    /// capable's own (or of all of capable's, with [`ServerCommand::inherit_env`]).
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Whether the server inherits capable's whole environment instead of the default
    /// set (an explicit opt-in: the environment often holds credentials).
    pub inherit_env: bool,
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

/// Limits and manners of the stdio transport.
#[derive(Clone, Copy, Debug)]
pub struct StdioLimits {
    /// The largest message accepted, in bytes.
    pub max_message_size: usize,
    /// How long shutdown waits after closing stdin, and again after SIGTERM.
    pub shutdown_grace: Duration,
    /// Whether the reader pauses within a long burst of answers ([`BurstPauses`]).
    pub burst_pauses: BurstPauses,
}

impl Default for StdioLimits {
    fn default() -> Self {
        StdioLimits {
            max_message_size: 64 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
            burst_pauses: BurstPauses::default(),
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

/// A started stdio server. Dropping it (or the session on it) without closing kills
/// the server's process group.
pub struct StdioTransport {
    stdin: ChildStdin,
    stdout: ChildStdout,
    peer: StdioPeer,
    /// The server's exit status, once it exited.
    exited: process::Exited,
    limits: StdioLimits,
}

impl StdioTransport {
    /// Starts the server process.
    pub fn spawn(
        command: &ServerCommand,
        limits: StdioLimits,
    ) -> Result<StdioTransport, SpawnError> {
        if let Some(cwd) = command.cwd.as_deref().filter(|d| !d.is_dir()) {
            return Err(SpawnError {
                command: command.display(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("its working directory {} does not exist", cwd.display()),
                ),
            });
        }
        let mut cmd = Command::new(&command.program);
        if !command.inherit_env {
            cmd.env_clear();
            for name in DEFAULT_INHERITED_ENV {
                if let Some(value) = std::env::var_os(name) {
                    cmd.env(name, value);
                }
            }
        }
        for name in NEVER_INHERITED_ENV {
            cmd.env_remove(name);
        }
        cmd.args(&command.args)
            .envs(&command.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group: a Ctrl-C at the terminal reaches capable only, which
        // then ends the session in order (unsubscribe, close stdin, wait, SIGTERM,
        // SIGKILL), and every process the server starts can be signalled with it.
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
        let (stderr_ended_tx, stderr_ended) = tokio::sync::watch::channel(false);
        tokio::spawn({
            let tail = tail.clone();
            async move {
                read_stderr(stderr, tail).await;
                let _ = stderr_ended_tx.send(true);
            }
        });
        let pid = child.id();
        let exited = process::watch_exit(child);
        Ok(StdioTransport {
            stdin,
            stdout,
            peer: StdioPeer {
                pid,
                exited: exited.clone(),
                tail,
                stderr_ended,
                grace: limits.shutdown_grace,
                secrets: {
                    let mut s = capable_core::internal::secrets::Secrets::default();
                    for (name, value) in &command.env {
                        s.add_env(name, value);
                    }
                    s
                },
            },
            exited,
            limits,
        })
    }
}

impl Transport for StdioTransport {
    type Sink = StdioSink;
    type Source = StdoutSource;

    fn split(self) -> (StdioSink, Self::Source, Box<dyn Peer>) {
        (
            StdioSink { stdin: self.stdin },
            StdoutSource::new(
                LineSource::new(self.stdout, self.limits.max_message_size),
                self.exited,
                self.peer.pid,
                self.limits.burst_pauses,
            ),
            Box::new(self.peer),
        )
    }
}

/// How long the server's output is still read after the server exited: what it wrote
/// last (its final answer, a crash report) is delivered, and a child of the server
/// that still holds the pipe does not keep the session waiting.
const AFTER_EXIT: Duration = Duration::from_millis(250);

/// The server's stdout: its lines until it ends — or until the server exited and the
/// output went quiet, even if a child of the server still holds the pipe open.
pub struct StdoutSource {
    lines: LineSource<ChildStdout>,
    exited: process::Exited,
    /// Resolves when the server exited (`true`) or its watcher is gone (`false`, the
    /// runtime is ending); `None` once it did. One future for the whole session: a
    /// read that waits only polls it, it is not set up again for every read.
    exit: Option<Pin<Box<dyn Future<Output = bool> + Send>>>,
    /// The waker `exit` was last polled with: it stays registered with the watch, so
    /// a read that waits in the same task need not poll `exit` again until the watch
    /// changed (which woke that task).
    exit_waker: Option<Waker>,
    /// Whether to pause within a long burst of lines (see `overlap.rs`).
    overlap: overlap::Overlap,
}

impl StdoutSource {
    fn new(
        lines: LineSource<ChildStdout>,
        exited: process::Exited,
        server: Option<u32>,
        pauses: BurstPauses,
    ) -> StdoutSource {
        let mut watch = exited.clone();
        let exit = Box::pin(async move { watch.wait_for(Option::is_some).await.is_ok() });
        StdoutSource {
            lines,
            exited,
            exit: Some(exit),
            exit_waker: None,
            overlap: overlap::Overlap::new(server, pauses),
        }
    }

    /// The next line, or `None` when the server exited first (or its watcher is
    /// gone). `exit` is polled only when it does not hold this task's waker yet or
    /// the watch changed since: a read that waits then costs no look at the exit.
    async fn line_or_exit(&mut self) -> Option<Result<Option<Bytes>, TransportError>> {
        let StdoutSource {
            lines,
            exited,
            exit: Some(exit),
            exit_waker,
            ..
        } = self
        else {
            return None;
        };
        let mut line = std::pin::pin!(lines.next_line());
        std::future::poll_fn(|cx| {
            if let Poll::Ready(line) = line.as_mut().poll(cx) {
                return Poll::Ready(Some(line));
            }
            let registered = exit_waker.as_ref().is_some_and(|w| w.will_wake(cx.waker()));
            if registered && matches!(exited.has_changed(), Ok(false)) {
                return Poll::Pending;
            }
            match exit.as_mut().poll(cx) {
                Poll::Ready(_) => Poll::Ready(None),
                Poll::Pending => {
                    *exit_waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

impl MessageSource for StdoutSource {
    async fn recv(&mut self) -> Result<Option<Inbound>, TransportError> {
        // Deep in a burst of buffered answers, with a server that can work meanwhile:
        // let the callers answered so far send their next requests first.
        let (run, more) = self.lines.run();
        if more && self.overlap.pause_after(run) {
            tokio::task::yield_now().await;
        }
        // A line already read is the next message, whether or not the server exited
        // since: no need to watch for its exit (or the time after it) to hand it out.
        if let Some(line) = self.lines.buffered_line()? {
            return Ok(Some(Inbound::Message(line)));
        }
        if self.exit.is_some() {
            match self.line_or_exit().await {
                Some(line) => return Ok(self.lines.inbound(line?)),
                None => {
                    self.exit = None;
                    self.exit_waker = None;
                }
            }
        }
        if self.exited.borrow().is_none() {
            // The watcher is gone (the runtime is ending): read as usual.
            let line = self.lines.next_line().await?;
            return Ok(self.lines.inbound(line));
        }
        match tokio::time::timeout(AFTER_EXIT, self.lines.next_line()).await {
            Ok(line) => Ok(self.lines.inbound(line?)),
            // Exited, and nothing more came: the end, whoever holds the pipe.
            Err(_) => Ok(None),
        }
    }
}

/// The server's stdin.
pub struct StdioSink {
    stdin: ChildStdin,
}

impl MessageSink for StdioSink {
    async fn send(&mut self, batch: &Outbox) -> Result<(), TransportError> {
        let io = |e| TransportError::io("writing to the server's stdin", e);
        self.stdin.write_all(batch.bytes()).await.map_err(io)?;
        self.stdin.flush().await.map_err(io)
    }

    /// A duplicate of the stdin pipe's descriptor. tokio made the pipe non-blocking
    /// (a flag of the pipe, shared by the duplicate), and a pipe takes a write of up
    /// to `PIPE_BUF` bytes whole or not at all.
    fn bypass(&self, _: Sealed) -> Option<Box<dyn Bypass>> {
        use std::os::fd::AsFd;
        let fd = self.stdin.as_fd().try_clone_to_owned().ok()?;
        Some(Box::new(std::fs::File::from(fd)))
    }
}
