//! The `capable-fixture` binary over its real stdio: what a test writes is checked as a
//! client message, and what the fixture answers as the result the schema names, under
//! the protocol version of the exchange.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use capable_core::ProtocolVersion;
use capable_fixture::MANUAL;
use capable_test_support::{assert_valid, assert_valid_result};
use serde_json::{json, Value};

/// How long one answer may take before the test fails (a hang is a failure).
const ANSWER: Duration = Duration::from_secs(10);

/// One fixture process and the lines it wrote.
struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

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
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Fixture {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    /// Writes one client message, first checked against the schema of `version`.
    #[track_caller]
    fn send(&mut self, version: ProtocolVersion, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        assert_valid(version, &line);
        line.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(&line).expect("write to the fixture");
        stdin.flush().expect("flush");
    }

    /// The next message the fixture wrote.
    #[track_caller]
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER)
            .unwrap_or_else(|e| panic!("no message from the fixture within {ANSWER:?}: {e}"));
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the fixture wrote a line that is not JSON ({e}): {line}"))
    }

    /// Closes the fixture's stdin and returns its exit code.
    fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        for _ in 0..(ANSWER.as_millis() / 10) {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the fixture did not exit within {ANSWER:?} of its stdin closing");
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // This one child, by its handle; a no-op once it has exited.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize(version: ProtocolVersion) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version.as_str(),
            "capabilities": {},
            "clientInfo": {"name": "capable-fixture-test", "version": "0.0.0"}
        }
    })
}

fn read(id: i64, meta: Option<Value>) -> Value {
    let mut message = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "resources/read",
        "params": {"uri": MANUAL}
    });
    if let Some(meta) = meta {
        message["params"]["_meta"] = meta;
    }
    message
}

#[test]
fn read_only_answers_initialize_and_a_read_in_each_legacy_version() {
    let legacy = ProtocolVersion::ALL
        .into_iter()
        .filter(|v| v.era() == capable_core::Era::Legacy);
    for version in legacy {
        let mut fixture = Fixture::start(&["--profile", "read-only"]);
        fixture.send(version, initialize(version));
        let answer = fixture.next();
        assert_eq!(answer["id"], 1, "{answer}");
        assert_valid_result(version, "InitializeResult", &answer);
        let result = &answer["result"];
        assert_eq!(result["protocolVersion"], version.as_str(), "{answer}");
        assert_eq!(result["capabilities"], json!({"resources": {}}), "{answer}");
        assert_eq!(
            result["serverInfo"]["name"], "capable-fixture/read-only",
            "{answer}"
        );

        fixture.send(
            version,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        fixture.send(version, read(2, None));
        let answer = fixture.next();
        assert_eq!(answer["id"], 2, "{answer}");
        assert_valid_result(version, "ReadResourceResult", &answer);
        let contents = &answer["result"]["contents"][0];
        assert_eq!(contents["uri"], MANUAL, "{answer}");
        let text = contents["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("Acceptance instructions"), "{answer}");

        assert_eq!(fixture.close(), Some(0), "exits 0 when its stdin closes");
    }
}

#[test]
fn modern_read_only_answers_discover_and_a_read_that_stays_fresh_for_its_ttl() {
    let modern = ProtocolVersion::V2026_07_28;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": modern.as_str(),
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "capable-fixture-test", "version": "0.0.0"}
    });
    let mut fixture = Fixture::start(&["--profile", "modern-read-only"]);
    fixture.send(
        modern,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    );
    let answer = fixture.next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_valid_result(modern, "DiscoverResult", &answer);
    assert_eq!(
        answer["result"]["capabilities"],
        json!({"resources": {}}),
        "{answer}"
    );

    fixture.send(modern, read(2, Some(meta)));
    let answer = fixture.next();
    assert_eq!(answer["id"], 2, "{answer}");
    assert_valid_result(modern, "ReadResourceResult", &answer);
    assert_eq!(answer["result"]["ttlMs"], 1000, "{answer}");
    assert_eq!(answer["result"]["contents"][0]["uri"], MANUAL, "{answer}");
    assert_eq!(fixture.close(), Some(0));
}

#[test]
fn update_interval_sets_how_often_a_subscriber_hears_of_a_change() {
    let version = ProtocolVersion::V2025_11_25;
    let mut fixture = Fixture::start(&["--profile", "subscribe", "--update-interval", "50ms"]);
    fixture.send(version, initialize(version));
    assert_valid_result(version, "InitializeResult", &fixture.next());
    fixture.send(
        version,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    fixture.send(
        version,
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": MANUAL}}),
    );
    let answer = fixture.next();
    assert_eq!(answer["id"], 2, "{answer}");
    assert_valid_result(version, "EmptyResult", &answer);
    // Two updates, each a change of the document the subscription is for.
    for _ in 0..2 {
        let update = fixture.next();
        assert_eq!(
            update,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": MANUAL}})
        );
    }
    assert_eq!(fixture.close(), Some(0));
}

#[test]
fn an_unknown_profile_is_a_usage_error_that_lists_the_profiles() {
    let out = Command::new(env!("CARGO_BIN_EXE_capable-fixture"))
        .args(["--profile", "nope"])
        .stdin(Stdio::null())
        .output()
        .expect("run capable-fixture");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in ["nope", "read-only", "silent-probe"] {
        assert!(stderr.contains(name), "should name {name}: {stderr}");
    }
}
