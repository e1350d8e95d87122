//! Shared helpers for the library's integration tests: the servers to talk to (the
//! `capable-fixture` binary, the real peers in `.peers/`), a wire recorder on
//! [`ClientOptions::tap`], schema validation of everything the client sent, a scripted
//! in-process transport, and a deadline for every test.
//!
//! Each test file uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use capable::transport::{
    BoxFuture, Inbound, MessageSink, MessageSource, Peer, Transport, TransportError,
};
use capable::{ClientOptions, Direction, Era, ProtocolVersion, ServerCommand, Session, Tap};
use serde_json::Value;
use tokio::sync::mpsc;

/// The document every test server serves.
pub const MANUAL: &str = "docs://manual/current";

/// Fails the test if `fut` has not finished within `limit`: a hang is a failure, never a
/// stuck test run.
#[track_caller]
pub fn within<F: Future>(limit: Duration, fut: F) -> impl Future<Output = F::Output> {
    let caller = std::panic::Location::caller();
    async move {
        match tokio::time::timeout(limit, fut).await {
            Ok(out) => out,
            Err(_) => panic!("the test did not finish within {limit:?} (started at {caller})"),
        }
    }
}

/// The workspace root (where `.peers`, `tests/peers` and `schemas` live).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// `capable-fixture --profile P [EXTRA…]`. The binary is found next
/// to the test executable; a missing one fails the test, saying how to build it.
pub fn fixture_with(profile: &str, extra: &[&str]) -> ServerCommand {
    let mut args = vec!["--profile".to_owned(), profile.into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    ServerCommand::new(
        capable_test_support::fixture_bin().display().to_string(),
        args,
    )
}

/// `capable-fixture --profile P`.
pub fn fixture(profile: &str) -> ServerCommand {
    fixture_with(profile, &[])
}

/// The real peers installed by `.ci/install-peers`.
#[derive(Clone, Copy, Debug)]
pub enum RealPeer {
    /// server-everything (legacy only).
    Everything,
    /// The Python SDK 2.3 server (dual-era).
    Python,
    /// The TypeScript SDK server (legacy only).
    Ts,
}

const EVERYTHING_JS: &str =
    ".peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const PYTHON: &str = ".peers/venv/bin/python";
const TS_SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk";

fn node() -> String {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("node").is_file()));
    if on_path {
        return "node".into();
    }
    let local = workspace().join(".peers/node22/node_modules/.bin/node");
    assert!(
        local.exists(),
        "no `node` on PATH and none in .peers: run `.ci/install-peers`"
    );
    local.display().to_string()
}

/// The command of a real peer; `None` when `CAPABLE_SKIP_PEERS=1`.
/// Fails the test, saying how to install the peers, when they are missing.
pub fn real_peer(peer: RealPeer) -> Option<ServerCommand> {
    if std::env::var("CAPABLE_SKIP_PEERS").is_ok_and(|v| v == "1") {
        eprintln!("CAPABLE_SKIP_PEERS=1: skipping a real-peer test ({peer:?})");
        return None;
    }
    let root = workspace();
    let needs = match peer {
        RealPeer::Everything => EVERYTHING_JS,
        RealPeer::Python => PYTHON,
        RealPeer::Ts => TS_SDK,
    };
    assert!(
        root.join(needs).exists(),
        "{} is missing: run `.ci/install-peers` in {} to install the real MCP peers \
         (or set CAPABLE_SKIP_PEERS=1 to skip these tests)",
        root.join(needs).display(),
        root.display()
    );
    let path = |p: &str| root.join(p).display().to_string();
    let mut command = match peer {
        RealPeer::Everything => ServerCommand::new(node(), [path(EVERYTHING_JS)]),
        RealPeer::Python => {
            ServerCommand::new(path(PYTHON), [path("tests/peers/python_server.py")])
        }
        RealPeer::Ts => ServerCommand::new(node(), [path("tests/peers/ts_server.mjs")]),
    };
    command.cwd = Some(root);
    Some(command)
}

/// One message seen on the wire.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Which way it went.
    pub direction: Direction,
    /// Exactly the line (without its newline).
    pub line: Vec<u8>,
}

impl Seen {
    /// The message as JSON (`None` for a line that is not JSON).
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.line).ok()
    }
}

/// Records every message a session sends and receives, in order.
#[derive(Clone, Default)]
pub struct Wire(Arc<Mutex<Vec<Seen>>>);

impl Wire {
    /// A tap that records into this wire.
    pub fn tap(&self) -> Tap {
        let log = self.0.clone();
        Tap::new(move |direction, line| {
            log.lock().unwrap().push(Seen {
                direction,
                line: line.to_vec(),
            })
        })
    }

    /// Client options with this wire's tap and limits fit for tests.
    ///
    /// The probe timeout is raised from 3 s: on a loaded machine the Python server can
    /// take longer than that to answer `server/discover`, and once it has seen the
    /// probe it refuses the fallback `initialize` (-32022), so the test would fail for
    /// the machine's load, not for the client. The silent-probe test sets its own.
    pub fn options(&self) -> ClientOptions {
        ClientOptions::default()
            .with_tap(self.tap())
            .with_request_timeout(Duration::from_secs(10))
            .with_probe_timeout(Duration::from_secs(10))
    }

    /// Everything seen so far.
    pub fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }

    /// Everything the client sent, as JSON (a sent line that is not JSON fails the
    /// test).
    #[track_caller]
    pub fn sent(&self) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|s| s.direction == Direction::Sent)
            .map(|s| {
                s.json().unwrap_or_else(|| {
                    panic!(
                        "the client sent a line that is not JSON: {}",
                        String::from_utf8_lossy(&s.line)
                    )
                })
            })
            .collect()
    }

    /// Everything received that is JSON.
    pub fn received(&self) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|s| s.direction == Direction::Received)
            .filter_map(|s| s.json())
            .collect()
    }

    /// The methods of what the client sent (responses: `""`).
    pub fn sent_methods(&self) -> Vec<String> {
        self.sent()
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// The sent requests of one method.
    pub fn sent_requests(&self, method: &str) -> Vec<Value> {
        self.sent()
            .into_iter()
            .filter(|m| m["method"] == method && m.get("id").is_some())
            .collect()
    }

    /// The `notifications/cancelled` the client sent.
    pub fn cancellations(&self) -> Vec<Value> {
        self.sent()
            .into_iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .collect()
    }

    /// Waits (briefly) until `pred` holds for what was sent; the writer is a separate
    /// task, so a message queued a moment ago may not be on the wire yet.
    pub async fn until_sent(&self, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let sent = self.sent();
            if pred(&sent) {
                return sent;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("never sent: {what}; the client sent:\n{}", show(&sent));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Asserts every message the client sent is valid under the official schema of the
    /// version it was sent under: the modern probe under 2026-07-28, `initialize` under
    /// the version it proposed, everything else under `session`'s negotiated version.
    #[track_caller]
    pub fn assert_schema_valid(&self, session: ProtocolVersion) {
        let sent = self.sent();
        assert!(!sent.is_empty(), "the client sent nothing");
        for message in &sent {
            let version = match message["method"].as_str() {
                Some("server/discover") => {
                    let v = message
                        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("2026-07-28");
                    v.parse().unwrap_or(ProtocolVersion::V2026_07_28)
                }
                Some("initialize") => message["params"]["protocolVersion"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(session),
                _ => session,
            };
            let line = serde_json::to_vec(message).unwrap();
            capable_test_support::assert_valid(version, &line);
        }
    }

    /// Legacy order: `initialize` was answered before anything else was sent (but a
    /// reply to the server's `ping`), and `notifications/initialized` is the first
    /// message after the answer.
    #[track_caller]
    pub fn assert_legacy_order(&self) {
        let all = self.all();
        let (init_at, init_id) = all
            .iter()
            .enumerate()
            .find_map(|(i, s)| {
                let m = s.json()?;
                (s.direction == Direction::Sent && m["method"] == "initialize")
                    .then(|| (i, m["id"].clone()))
            })
            .unwrap_or_else(|| panic!("no initialize was sent:\n{}", show_seen(&all)));
        let answer_at = all
            .iter()
            .enumerate()
            .skip(init_at + 1)
            .find_map(|(i, s)| {
                let m = s.json()?;
                (s.direction == Direction::Received
                    && m.get("method").is_none()
                    && m["id"] == init_id)
                    .then_some(i)
            })
            .unwrap_or_else(|| panic!("initialize was never answered:\n{}", show_seen(&all)));
        for s in &all[init_at + 1..answer_at] {
            if s.direction == Direction::Sent {
                let m = s.json().unwrap_or_default();
                assert!(
                    m.get("method").is_none() && m.get("result").is_some(),
                    "the client sent something other than a ping reply before initialize was \
                     answered: {m}\n{}",
                    show_seen(&all)
                );
            }
        }
        let first_after = all[answer_at + 1..]
            .iter()
            .find(|s| s.direction == Direction::Sent)
            .and_then(Seen::json)
            .unwrap_or_else(|| panic!("nothing was sent after initialize:\n{}", show_seen(&all)));
        assert_eq!(
            first_after["method"],
            "notifications/initialized",
            "the first message after the initialize answer must be notifications/initialized:\n{}",
            show_seen(&all)
        );
    }
}

/// Messages, one a line, for failure output.
pub fn show(messages: &[Value]) -> String {
    messages
        .iter()
        .map(|m| {
            let s = m.to_string();
            if s.len() > 400 {
                format!("  {}…", &s[..s.floor_char_boundary_compat(400)])
            } else {
                format!("  {s}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn show_seen(seen: &[Seen]) -> String {
    seen.iter()
        .map(|s| {
            let arrow = match s.direction {
                Direction::Sent => ">",
                Direction::Received => "<",
            };
            let text = String::from_utf8_lossy(&s.line);
            let end = text.floor_char_boundary_compat(400);
            format!("  {arrow} {}", &text[..end])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, at: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, at: usize) -> usize {
        if at >= self.len() {
            return self.len();
        }
        let mut end = at;
        while !self.is_char_boundary(end) {
            end -= 1;
        }
        end
    }
}

/// Connects to `server` with a wire tap that records every message.
pub async fn connect_wire(server: &ServerCommand) -> (Session, Wire) {
    let wire = Wire::default();
    let session = capable::connect_stdio(server, wire.options())
        .await
        .expect("connect");
    (session, wire)
}

/// Connects to `server` with a wire tap and checks the era it ends up in.
pub async fn open(server: &ServerCommand, era: Era) -> (Session, Wire) {
    let (session, wire) = connect_wire(server).await;
    assert_era(&session, era, &wire);
    (session, wire)
}

/// Asserts the session is of `era`, naming what was sent otherwise.
#[track_caller]
pub fn assert_era(session: &Session, era: Era, wire: &Wire) {
    assert_eq!(
        session.era(),
        era,
        "expected the {era} era, negotiated {}; the client sent:\n{}",
        session.protocol_version(),
        show(&wire.sent())
    );
}

/// Polls every future concurrently on the current task (no spawning) and returns their
/// outputs in order. Futures are first polled in order, so requests are issued in order.
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("polled to completion"))
        .collect()
}

/// Whether a process with this PID exists (a reaped child does not).
pub fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

// ---------------------------------------------------------------------------------
// A scripted in-process server behind the library's own `Transport` trait: for results
// no real server sends (no `resultType` at all, an unknown one), and for timing rules
// under tokio's paused clock (`#[tokio::test(start_paused = true)]`), which cannot be
// used with a real child process: tokio would advance the clock while waiting on its
// pipe.

/// How a scripted server answers one client message: the messages to send back (a
/// bare JSON string is sent as raw text instead: truncated or garbled answers).
pub type Script = Box<dyn FnMut(&Value) -> Vec<Value> + Send>;

/// Like [`Script`], with a delay before each message (counted from the previous one).
pub type TimedScript = Box<dyn FnMut(&Value) -> Vec<(Duration, Value)> + Send>;

/// A transport whose server is a function of each client message.
pub struct Scripted {
    sink: ScriptedSink,
    source: ScriptedSource,
}

/// The client's sending half.
pub struct ScriptedSink(mpsc::UnboundedSender<Vec<u8>>);

/// The client's receiving half.
pub struct ScriptedSource(mpsc::UnboundedReceiver<Vec<u8>>);

struct ScriptedPeer;

impl Scripted {
    /// Starts the scripted server task; every answer is sent at once.
    pub fn new(mut script: Script) -> Scripted {
        Scripted::timed(Box::new(move |msg: &Value| {
            script(msg)
                .into_iter()
                .map(|reply| (Duration::ZERO, reply))
                .collect()
        }))
    }

    /// Starts a scripted server that sleeps (on tokio's clock) before each message it
    /// sends. Like a single-threaded server, it reads the client's next message only
    /// once it has sent every answer to the last one.
    pub fn timed(mut script: TimedScript) -> Scripted {
        let (to_server, mut server_in) = mpsc::unbounded_channel::<Vec<u8>>();
        let (server_out, from_server) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            while let Some(line) = server_in.recv().await {
                let Ok(msg) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                for (delay, reply) in script(&msg) {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    // A bare JSON string is no JSON-RPC message: it stands for raw text to
                    // send as it is (a truncated answer, garbage).
                    let bytes = match reply {
                        Value::String(raw) => raw.into_bytes(),
                        other => serde_json::to_vec(&other).unwrap(),
                    };
                    if server_out.send(bytes).is_err() {
                        return;
                    }
                }
            }
        });
        Scripted {
            sink: ScriptedSink(to_server),
            source: ScriptedSource(from_server),
        }
    }
}

impl MessageSink for ScriptedSink {
    async fn send(&mut self, batch: &capable_core::Outbox) -> Result<(), TransportError> {
        for line in batch.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            self.0
                .send(line.to_vec())
                .map_err(|_| TransportError::Broken("the scripted server is gone".into()))?;
        }
        Ok(())
    }
}

impl MessageSource for ScriptedSource {
    async fn recv(&mut self) -> Result<Option<Inbound>, TransportError> {
        Ok(self
            .0
            .recv()
            .await
            .map(|line| Inbound::Message(bytes::Bytes::from(line))))
    }
}

impl Peer for ScriptedPeer {
    fn exit_status(&self, _grace: Duration) -> BoxFuture<'_, Option<ExitStatus>> {
        Box::pin(async { Some(ExitStatus::from_raw(0)) })
    }
    fn shutdown(&self) -> BoxFuture<'_, Option<ExitStatus>> {
        Box::pin(async { Some(ExitStatus::from_raw(0)) })
    }
    fn stderr_tail(&self) -> String {
        String::new()
    }
}

impl Transport for Scripted {
    type Sink = ScriptedSink;
    type Source = ScriptedSource;
    fn split(self) -> (ScriptedSink, ScriptedSource, Box<dyn Peer>) {
        (self.sink, self.source, Box::new(ScriptedPeer))
    }
}
