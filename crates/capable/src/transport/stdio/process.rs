//! The server as a process: its stderr (its first and last lines, bounded, read to
//! the end whatever it writes), its exit status, and its shutdown — to the whole process group, so that a
//! wrapper's children (`npx` → `node`, a shell script's background jobs) never outlive
//! the session.

use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable_core::internal::secrets::Secrets;
use capable_core::internal::stderr::{StderrLog, LINE_BYTES};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::sync::broadcast;

use crate::transport::{BoxFuture, Peer};

/// What a server wrote to stderr — its first and last lines and the line that names its
/// error, bounded ([`StderrLog`]) — and the channel that hands each new line to whoever
/// follows them live.
#[derive(Default)]
pub(super) struct StderrTail {
    log: StderrLog,
    /// Made when someone first follows the lines (see [`Peer::stderr_lines`]), with
    /// the secrets to scrub out of each line it carries.
    live: Option<(broadcast::Sender<Arc<str>>, Secrets)>,
    /// The server's stderr reached its end: no line comes any more.
    ended: bool,
}

impl StderrTail {
    /// How many lines a follower may fall behind before it misses the oldest.
    const LIVE_LINES: usize = 32;

    fn push(&mut self, line: String) {
        if let Some((live, secrets)) = &self.live {
            if live.receiver_count() > 0 {
                let _ = live.send(Arc::from(secrets.scrub(&line).as_ref()));
            }
        }
        self.log.push(line);
    }

    /// A follower of the lines written from now on; once the stderr ended, one whose
    /// channel is closed.
    fn follow(&mut self, secrets: &Secrets) -> broadcast::Receiver<Arc<str>> {
        match &self.live {
            Some((live, _)) => live.subscribe(),
            None => {
                let (live, lines) = broadcast::channel(Self::LIVE_LINES);
                if !self.ended {
                    self.live = Some((live, secrets.clone()));
                }
                lines
            }
        }
    }

    /// The stderr reached its end: followers see their channel close.
    fn end(&mut self) {
        self.ended = true;
        self.live = None;
    }

    fn text(&self) -> String {
        self.log.text()
    }
}

/// Reads a server's stderr to its end as bytes — any bytes, decoded lossily — into a
/// bounded [`StderrLog`]: a line longer than its limit keeps only its start, so a
/// server that never writes a newline costs no more memory than one that does.
pub(super) async fn read_stderr(mut stderr: impl AsyncRead + Unpin, tail: Arc<Mutex<StderrTail>>) {
    // Room for 8 KiB a read, filled only as far as the server writes: a quiet server's
    // reader holds a few bytes of it, not 8 KiB zeroed up front.
    let mut chunk: Vec<u8> = Vec::with_capacity(8192);
    let mut line: Vec<u8> = Vec::new();
    let mut overlong = false;
    let finish = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line).into_owned();
        line.clear();
        tracing::debug!(target: "capable::server_stderr", "{text}");
        if let Ok(mut t) = tail.lock() {
            t.push(text);
        }
    };
    loop {
        chunk.clear();
        let n = match stderr.read_buf(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for part in chunk[..n].split_inclusive(|b| *b == b'\n') {
            let ends = part.ends_with(b"\n");
            let body = part.strip_suffix(b"\n").unwrap_or(part);
            if !overlong {
                let room = LINE_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&body[..body.len().min(room)]);
                overlong = body.len() > room;
            }
            if ends {
                if line.ends_with(b"\r") {
                    line.pop();
                }
                finish(&mut line);
                overlong = false;
            }
        }
    }
    if !line.is_empty() {
        finish(&mut line);
    }
    if let Ok(mut t) = tail.lock() {
        t.end();
    }
}

/// How long an exited server's last stderr lines may take to be read.
const STDERR_DRAIN: Duration = Duration::from_millis(250);

/// The server's exit status, once it is known (the child was reaped).
pub(super) type Exited = tokio::sync::watch::Receiver<Option<ExitStatus>>;

/// Waits for the server's exit in a task of its own, so that an exit is noticed when it
/// happens — also while a child of the server keeps its output open.
pub(super) fn watch_exit(mut child: Child) -> Exited {
    let (tx, rx) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        let _ = tx.send(status);
        // Dropped here: the child is reaped, kill-on-drop has nothing left to kill.
    });
    rx
}

/// Waits up to `grace` for the exit status.
async fn wait_exit(exited: &Exited, grace: Duration) -> Option<ExitStatus> {
    let mut watch = exited.clone();
    let waited = tokio::time::timeout(grace, async {
        watch.wait_for(Option::is_some).await.ok().and_then(|s| *s)
    })
    .await;
    waited.ok().flatten().or(*exited.borrow())
}

pub(super) struct StdioPeer {
    /// The server's pid, which is also its process group's id.
    pub(super) pid: Option<u32>,
    pub(super) exited: Exited,
    pub(super) tail: Arc<Mutex<StderrTail>>,
    /// Becomes `true` when the server's stderr reaches its end.
    pub(super) stderr_ended: tokio::sync::watch::Receiver<bool>,
    pub(super) grace: Duration,
    /// The secret-looking values of the server's environment, cut out of its words:
    /// a crash report may print its configuration.
    pub(super) secrets: Secrets,
}

impl StdioPeer {
    /// Sends `signal` to the server's whole process group.
    fn signal_group(&self, signal: libc::c_int) -> bool {
        let Some(pid) = self.pid.and_then(|p| libc::pid_t::try_from(p).ok()) else {
            return false;
        };
        // SAFETY: kill(2) with the negated id of the process group our child leads
        // (spawned with `process_group(0)`); no memory is touched.
        unsafe { libc::kill(-pid, signal) == 0 }
    }

    /// Whether any process of the server's group is still alive.
    fn group_alive(&self) -> bool {
        self.signal_group(0)
    }

    /// After the leader exited: its group's leftovers get SIGTERM, then SIGKILL, each
    /// after a bounded wait.
    async fn end_group(&self) {
        for signal in [libc::SIGTERM, libc::SIGKILL] {
            if !self.group_alive() {
                return;
            }
            self.signal_group(signal);
            let deadline = tokio::time::Instant::now() + self.grace;
            while self.group_alive() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

impl Peer for StdioPeer {
    fn exit_status(&self, grace: Duration) -> BoxFuture<'_, Option<ExitStatus>> {
        Box::pin(async move {
            let status = wait_exit(&self.exited, grace).await?;
            // Its last words (a panic, a crash message) are what the host needs in the
            // error: read its stderr to the end first (bounded, since a child of the
            // server may still hold it open).
            let mut ended = self.stderr_ended.clone();
            let _ = tokio::time::timeout(STDERR_DRAIN, ended.wait_for(|e| *e)).await;
            Some(status)
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, Option<ExitStatus>> {
        Box::pin(async move {
            let mut status = wait_exit(&self.exited, self.grace).await;
            for signal in [libc::SIGTERM, libc::SIGKILL] {
                if status.is_some() {
                    break;
                }
                self.signal_group(signal);
                status = wait_exit(&self.exited, self.grace).await;
            }
            self.end_group().await;
            status
        })
    }

    fn stderr_tail(&self) -> String {
        let text = self.tail.lock().map(|t| t.text()).unwrap_or_default();
        self.secrets.scrub(&text).into_owned()
    }

    fn stderr_lines(&self) -> Option<broadcast::Receiver<Arc<str>>> {
        let mut tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        Some(tail.follow(&self.secrets))
    }

    fn process_id(&self) -> Option<u32> {
        self.pid
    }
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        // A session dropped without `close`: while the leader is not reaped its id
        // cannot name another group, so the whole group is killed safely.
        if self.exited.borrow().is_none() {
            self.signal_group(libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn tail_of(bytes: Vec<u8>) -> Vec<String> {
        let tail = Arc::new(Mutex::new(StderrTail::default()));
        read_stderr(&bytes[..], tail.clone()).await;
        let t = tail.lock().unwrap();
        t.text().lines().map(str::to_owned).collect()
    }

    #[tokio::test]
    async fn stderr_is_read_to_its_end_whatever_its_bytes() {
        let lines = tail_of(b"first\r\nbad \xff byte\nlast without newline".to_vec()).await;
        assert_eq!(
            lines,
            ["first", "bad \u{fffd} byte", "last without newline"]
        );
    }

    #[tokio::test]
    async fn a_line_without_end_keeps_only_a_bounded_start() {
        let mut bytes = vec![b'x'; 3 * LINE_BYTES];
        bytes.extend_from_slice(b"\nafter\n");
        let lines = tail_of(bytes).await;
        assert_eq!(lines.last().map(String::as_str), Some("after"));
        assert_eq!(lines[0].len(), LINE_BYTES, "the start of the long line");
    }

    #[tokio::test]
    async fn the_first_lines_are_kept_with_the_last() {
        let mut bytes = b"Error: Cannot find module 'x'\n".to_vec();
        for n in 0..2000 {
            bytes.extend_from_slice(format!("noise {n}\n").as_bytes());
        }
        let lines = tail_of(bytes).await;
        assert_eq!(lines[0], "Error: Cannot find module 'x'");
        assert_eq!(lines.last().map(String::as_str), Some("noise 1999"));
        assert!(lines.iter().any(|l| l.ends_with(" lines left out …")));
    }
}
