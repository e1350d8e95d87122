//! A host for `capable bridge` tests: the bridge as a child process, spoken to over its
//! stdio as a host would, every message it writes validated as a server message of the
//! version the host speaks; its stderr kept (the audit's JSON lines, `--trace`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use capable::internal::ProtocolVersion;
use capable_test_support::assert_valid_from_server;
use serde_json::{json, Value};

/// How long one answer may take.
pub const ANSWER: Duration = Duration::from_secs(20);

/// A running `capable bridge`.
pub struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// The version the host speaks: what every message is validated under.
    pub version: ProtocolVersion,
    /// Notifications and requests that arrived while a test waited for an answer.
    pub seen: Vec<Value>,
}

impl Bridge {
    /// `capable bridge ARGS` (with the environment's `extra` variables).
    pub fn start(args: &[&str]) -> Bridge {
        Bridge::start_env(args, &[])
    }

    /// `capable bridge --trace FLAGS -- ` the fixture server's `profile`.
    pub fn before_fixture(flags: &[&str], profile: &str) -> Bridge {
        let server = super::common::fixture(profile);
        let mut args = vec!["--trace"];
        args.extend(flags);
        args.push("--");
        args.extend(server.iter().map(String::as_str));
        Bridge::start(&args)
    }

    pub fn start_env(args: &[&str], extra: &[(&str, &str)]) -> Bridge {
        let cache =
            std::env::temp_dir().join(format!("capable-bridge-test-{}", std::process::id()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_capable"))
            .arg("bridge")
            .args(args)
            .current_dir(super::common::workspace())
            .env("XDG_CACHE_HOME", &cache)
            .env_remove("CAPABLE_LOG")
            .envs(extra.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start capable bridge");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let kept = stderr.clone();
        let err = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Bridge {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            version: ProtocolVersion::V2025_11_25,
            seen: Vec::new(),
        }
    }

    /// The process id of the bridge.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs the bridge by its pid, as a replica dies with nothing said, and waits
    /// until it is gone; what it wrote stays readable.
    #[track_caller]
    pub fn sigkill(&self) {
        let pid = self.pid();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        wait_gone(pid);
    }

    /// Writes one message to the bridge.
    pub fn send(&mut self, message: Value) {
        self.send_line(&message.to_string());
    }

    /// Writes one line to the bridge, whatever it is.
    pub fn send_line(&mut self, line: &str) {
        self.try_send_line(line).expect("write to the bridge");
    }

    /// Writes one line to the bridge, which may stop reading part-way (a line past its
    /// limit ends the host's side): the write's error, as it came.
    pub fn try_send_line(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}")?;
        stdin.flush()
    }

    /// The next message of the bridge's, validated.
    #[track_caller]
    pub fn next(&mut self) -> Value {
        self.next_within(ANSWER).unwrap_or_else(|| {
            panic!(
                "no message from the bridge within {ANSWER:?}\n--- stderr\n{}",
                self.stderr_text()
            )
        })
    }

    /// The next message within `wait`, validated, if one comes.
    #[track_caller]
    pub fn next_within(&mut self, wait: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(wait).ok()?;
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the bridge wrote a line that is not JSON ({e}): {line}"));
        assert_valid_from_server(self.version, &message);
        Some(message)
    }

    /// The next message within `wait` as it came, not validated (a server's own
    /// notification, which no schema has).
    pub fn next_unchecked_within(&mut self, wait: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(wait).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    /// Sends request `id` and returns its answer; what came before it is kept in
    /// [`Bridge::seen`].
    #[track_caller]
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id)
    }

    /// Waits for the answer to `id`.
    #[track_caller]
    pub fn answer(&mut self, id: i64) -> Value {
        // It may have come while another answer was awaited.
        let seen = self
            .seen
            .iter()
            .position(|m| m.get("method").is_none() && m["id"] == id);
        if let Some(at) = seen {
            return self.seen.remove(at);
        }
        let until = Instant::now() + ANSWER;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let Some(message) = self.next_within(left) else {
                panic!(
                    "no answer to {id} within {ANSWER:?}; seen {:?}\n--- stderr\n{}",
                    self.seen,
                    self.stderr_text()
                )
            };
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
            self.seen.push(message);
        }
    }

    /// A legacy handshake proposing `version`, declaring `capabilities`: the answer.
    #[track_caller]
    pub fn initialize(&mut self, version: ProtocolVersion, capabilities: Value) -> Value {
        self.version = version;
        let answer = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version.as_str(), "capabilities": capabilities,
                "clientInfo": {"name": "bridge-test-host", "version": "1.0"}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// The 2026-07-28 envelope of a host that declares `capabilities`.
    pub fn meta(capabilities: Value) -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "bridge-test-host", "version": "1.0"}})
    }

    /// Everything written to stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// The audit lines (`{"event": …}`) written so far.
    pub fn audit(&self) -> Vec<Value> {
        self.stderr
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("event").is_some())
            .collect()
    }

    /// Waits until an audit line matching `want` was written, and returns it.
    #[track_caller]
    pub fn audit_until(&self, want: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + ANSWER;
        loop {
            if let Some(line) = self.audit().into_iter().find(|l| want(l)) {
                return line;
            }
            assert!(
                Instant::now() < until,
                "no such audit line within {ANSWER:?}\n--- stderr\n{}",
                self.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `n` audit lines matching `want` were written (the audit is read off
    /// stderr on a thread of its own: a line written before an answer may be read after
    /// it), and returns how many there are then.
    #[track_caller]
    pub fn audit_count_until(&self, n: usize, want: impl Fn(&Value) -> bool) -> usize {
        let count = || self.audit().iter().filter(|l| want(l)).count();
        let until = Instant::now() + ANSWER;
        while count() < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        count()
    }

    /// The messages `--trace` shows the bridge sent to the server behind.
    pub fn sent_upstream(&self) -> Vec<Value> {
        self.stderr
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| l.strip_prefix("> "))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// How many messages of `method` the bridge sent the server behind (`--trace`).
    pub fn sent_upstream_count(&self, method: &str) -> usize {
        self.sent_upstream()
            .iter()
            .filter(|m| m["method"] == method)
            .count()
    }

    /// How many messages of `method` the bridge sent the server behind, once there are
    /// `n` (or the time for an answer is up): `--trace` may come after the answer.
    pub fn sent_upstream_count_until(&self, method: &str, n: usize) -> usize {
        let until = Instant::now() + ANSWER;
        while self.sent_upstream_count(method) < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.sent_upstream_count(method)
    }

    /// Waits until the bridge sent the server behind a message of `method`.
    #[track_caller]
    pub fn until_sent_upstream(&self, method: &str) {
        let until = Instant::now() + ANSWER;
        while self.sent_upstream_count(method) == 0 {
            assert!(
                Instant::now() < until,
                "no {method} reached the server\n{}",
                self.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The first message of `method` the bridge sent the server behind, once it did.
    #[track_caller]
    pub fn first_sent_upstream(&self, method: &str) -> Value {
        self.until_sent_upstream(method);
        let sent = self.sent_upstream();
        sent.into_iter().find(|m| m["method"] == method).unwrap()
    }

    /// The pid of the server behind, from the audit's `ready` line.
    #[track_caller]
    pub fn server_pid(&self) -> u32 {
        let ready = self.audit_until(|l| l["state"] == "ready");
        ready["pid"].as_u64().expect("a stdio server's pid") as u32
    }

    /// [`Bridge::close`], and everything it wrote to stderr by its exit.
    #[track_caller]
    pub fn close_with_stderr(self) -> (Option<i32>, String) {
        let stderr = self.stderr.clone();
        let code = self.close();
        // Its stderr is read to the end by a thread: what came before the exit is there
        // once the pipe is closed.
        let until = Instant::now() + ANSWER;
        let mut text = stderr.lock().unwrap().join("\n");
        while Arc::strong_count(&stderr) > 1 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
            text = stderr.lock().unwrap().join("\n");
        }
        (code, text)
    }

    /// Closes the bridge's stdin (the host leaves) and waits for it to exit.
    #[track_caller]
    pub fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let until = Instant::now() + ANSWER;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(
                Instant::now() < until,
                "the bridge did not exit within {ANSWER:?} of its stdin closing\n--- stderr\n{}",
                self.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // This one child, by its handle; its server sees EOF and exits.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts that `update` is `notifications/resources/updated` on the listen stream
/// of request `stream`.
#[track_caller]
pub fn assert_listened_update(update: &Value, stream: i64) {
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], stream,
        "{update}"
    );
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                == Some("Z")
        }
    }
}

/// Waits until process `pid` is gone.
#[track_caller]
pub fn wait_gone(pid: u32) {
    let until = Instant::now() + ANSWER;
    while !gone(pid) {
        assert!(Instant::now() < until, "process {pid} is still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A config entry of a fixture server (`capable fixture --profile P`, more flags after).
pub fn many_entry(profile: &str, more: &[&str]) -> Value {
    let mut args = vec!["fixture", "--profile", profile];
    args.extend_from_slice(more);
    json!({"command": super::common::bin(), "args": args})
}

/// `capable bridge --config F FLAGS` over `servers`, many servers as one (F named
/// after `test`; the bridge reads it as it starts, so keep it while it runs).
pub fn many(test: &str, servers: Value, flags: &[&str]) -> (Bridge, super::common::TempFile) {
    let config = json!({"mcpServers": servers}).to_string();
    let file = super::common::TempFile::new(&format!("bridge-many-{test}.json"), &config);
    let mut args = vec!["--config", file.path()];
    args.extend_from_slice(flags);
    (Bridge::start(&args), file)
}

/// A host that is another SDK's client (a program that starts `capable bridge BRIDGE`
/// as its stdio server and prints one JSON object: what it saw): `program ARGS --
/// capable bridge BRIDGE`. Returns that object and the run (whose stderr holds the
/// bridge's audit lines).
#[track_caller]
pub fn host(program: &str, args: &[&str], bridge: &[&str]) -> (Value, super::common::Run) {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.push(env!("CARGO_BIN_EXE_capable"));
    all.push("bridge");
    all.extend_from_slice(bridge);
    let (seen, run) = client(program, &all);
    // The host went through the bridge: it connected the server behind.
    assert!(
        run.stderr.contains(r#""event":"state""#) && run.stderr.contains(r#""state":"ready""#),
        "the bridge never connected the server behind\n--- stderr\n{}",
        run.stderr
    );
    (seen, run)
}

/// Another SDK's client, run as `program ARGS` (a bridge it reaches over HTTP, say):
/// the JSON object it printed, and the run.
#[track_caller]
pub fn client(program: &str, args: &[&str]) -> (Value, super::common::Run) {
    let workspace = super::common::workspace();
    let run = super::common::run_in(program, args, &workspace, Duration::from_secs(60));
    let seen = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "`{program} {}` printed no JSON ({e})\n--- stdout\n{}\n--- stderr\n{}",
            args.join(" "),
            run.stdout,
            run.stderr
        )
    });
    (seen, run)
}

/// The TypeScript SDK's client (`v1`, `v2` or `v2-modern`) as the host.
#[track_caller]
pub fn ts_host(sdk: &str, bridge: &[&str]) -> Value {
    host("node", &["tests/peers/ts_client.mjs", sdk], bridge).0
}

/// The Python SDK's client (`legacy` or `auto`) as the host.
#[track_caller]
pub fn python_host(mode: &str, bridge: &[&str]) -> Value {
    let python = super::common::servers::path(super::common::servers::PYTHON);
    host(&python, &["tests/peers/py_client.py", mode], bridge).0
}
