//! A transport of the host's own, written against the public traits alone: a server
//! process on pipes, whose sink writes each batch's bytes and whose source reads
//! lines. Plain `send` and `recv` are all it implements (none of the shortcuts this
//! crate's own transports take), and a session on it does everything a session on
//! `StdioTransport` does: the handshake in either era, reads, requests in flight
//! together, closing.

mod common;

use std::process::{ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use capable::transport::{
    BoxFuture, Inbound, MessageSink, MessageSource, Outbox, Peer, Transport, TransportError,
};
use capable::{connect, ClientOptions, Era};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use common::{within, MANUAL};

struct Pipes {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

struct Sink(ChildStdin);
struct Source(BufReader<ChildStdout>);
struct Process(Mutex<Option<Child>>);

impl Pipes {
    fn spawn(profile: &str) -> Pipes {
        let mut child = Command::new(capable_test_support::fixture_bin())
            .args(["--profile", profile])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the fixture server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        Pipes {
            child,
            stdin,
            stdout,
        }
    }
}

impl Transport for Pipes {
    type Sink = Sink;
    type Source = Source;

    fn split(self) -> (Sink, Source, Box<dyn Peer>) {
        (
            Sink(self.stdin),
            Source(BufReader::new(self.stdout)),
            Box::new(Process(Mutex::new(Some(self.child)))),
        )
    }
}

impl MessageSink for Sink {
    async fn send(&mut self, batch: &Outbox) -> Result<(), TransportError> {
        let io = |e| TransportError::io("writing to the server", e);
        self.0.write_all(batch.bytes()).await.map_err(io)?;
        self.0.flush().await.map_err(io)
    }
}

impl MessageSource for Source {
    async fn recv(&mut self) -> Result<Option<Inbound>, TransportError> {
        let mut line = Vec::new();
        let n = self
            .0
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| TransportError::io("reading from the server", e))?;
        if n == 0 {
            return Ok(None);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        Ok(Some(Inbound::Message(line.into())))
    }
}

impl Peer for Process {
    fn exit_status(&self, grace: Duration) -> BoxFuture<'_, Option<ExitStatus>> {
        Box::pin(async move {
            let mut child = self.0.lock().unwrap().take()?;
            tokio::time::timeout(grace, child.wait()).await.ok()?.ok()
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, Option<ExitStatus>> {
        // Its input is closed: the server exits on its own.
        self.exit_status(Duration::from_secs(5))
    }

    fn stderr_tail(&self) -> String {
        String::new()
    }
}

async fn a_session_on_it_reads_and_closes(profile: &str, era: Era) {
    let session = connect(Pipes::spawn(profile), ClientOptions::default())
        .await
        .expect("the handshake over the host's own transport");
    assert_eq!(session.era(), era);
    let read = session.read_resource(MANUAL).await.expect("a read");
    assert!(!read.contents.is_empty());
    // Requests in flight together go out in batches the sink writes whole.
    let reads: Vec<_> = (0..16).map(|_| session.read_resource(MANUAL)).collect();
    for read in common::join_all(reads).await {
        assert_eq!(&*read.expect("a read").uri, MANUAL);
    }
    session.close().await;
}

#[tokio::test]
async fn a_transport_with_plain_send_and_receive_carries_a_legacy_session() {
    within(
        Duration::from_secs(30),
        a_session_on_it_reads_and_closes("read-only", Era::Legacy),
    )
    .await;
}

#[tokio::test]
async fn a_transport_with_plain_send_and_receive_carries_a_modern_session() {
    within(
        Duration::from_secs(30),
        a_session_on_it_reads_and_closes("modern", Era::Modern),
    )
    .await;
}
