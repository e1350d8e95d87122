//! The profiles a host of many servers meets, over the fixture's real stdio: one that
//! hangs at start, one that crashes soon after its handshake, one whose tools change.
//! Answers are checked against the schema of the negotiated version.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use capable_core::ProtocolVersion;
use capable_test_support::assert_valid_result;
use serde_json::{json, Value};

const V: ProtocolVersion = ProtocolVersion::V2025_11_25;
const ANSWER: Duration = Duration::from_secs(10);

/// A fixture process, killed by its handle when dropped, and the lines it writes.
struct Fixture(Child, mpsc::Receiver<Value>);

impl Fixture {
    fn start(args: &[&str]) -> Fixture {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capable-fixture"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start capable-fixture");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str(&line).expect("a JSON line"));
            }
        });
        Fixture(child, rx)
    }

    /// Writes a message; to a fixture that exited (crash-soon) it is lost, which the
    /// tests check by the exit status, not here.
    fn send(&mut self, message: Value) {
        let stdin = self.0.stdin.as_mut().expect("stdin");
        let _ = writeln!(stdin, "{message}").and_then(|()| stdin.flush());
    }

    fn next(&self, within: Duration) -> Option<Value> {
        self.1.recv_timeout(within).ok()
    }

    fn initialize(&mut self) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": V.as_str(), "capabilities": {},
            "clientInfo": {"name": "capable-fixture-test", "version": "0.0.0"}}}),
        );
        let answer = self.next(ANSWER).expect("an answer to initialize");
        assert_valid_result(V, "InitializeResult", &answer);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn hang_start_answers_nothing_not_even_initialize() {
    let mut fixture = Fixture::start(&["--profile", "hang-start"]);
    fixture.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}));
    fixture.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(fixture.next(Duration::from_millis(500)), None);
    assert_eq!(fixture.0.try_wait().unwrap(), None, "still running");
}

#[test]
fn crash_soon_answers_its_handshake_then_exits_3() {
    let mut fixture = Fixture::start(&["--profile", "crash-soon", "--update-interval", "200ms"]);
    let answer = fixture.initialize();
    assert_eq!(answer["result"]["capabilities"], json!({"tools": {}}));
    let deadline = Instant::now() + ANSWER;
    let status = loop {
        if let Some(status) = fixture.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "it did not crash");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(3));
}

#[test]
fn tools_changed_says_its_list_changed_before_answering_grow() {
    let mut fixture = Fixture::start(&["--profile", "tools-changed"]);
    let answer = fixture.initialize();
    assert_eq!(
        answer["result"]["capabilities"],
        json!({"tools": {"listChanged": true}})
    );
    let list = |fixture: &mut Fixture, id: i64| {
        fixture.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let answer = fixture.next(ANSWER).expect("a list");
        assert_valid_result(V, "ListToolsResult", &answer);
        let tools = answer["result"]["tools"].as_array().unwrap().clone();
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(list(&mut fixture, 2), ["echo", "grow"]);
    fixture.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "grow"}}),
    );
    assert_eq!(
        fixture.next(ANSWER),
        Some(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}))
    );
    let grown = fixture.next(ANSWER).expect("the call's answer");
    assert_valid_result(V, "CallToolResult", &grown);
    assert_eq!(list(&mut fixture, 4), ["echo", "grow", "grown-1"]);
}
