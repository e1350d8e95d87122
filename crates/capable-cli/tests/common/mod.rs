//! Shared helpers for the end-to-end tests: run the real `capable` binary with a
//! deadline, read its `--trace` output, check timestamps.
//!
//! Each test file uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod journey;
pub mod oauth;
pub mod scripted;
pub mod servers;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// The `capable` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_capable")
}

/// The workspace root (where `.peers` and `tests/peers` live).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// `<capable> fixture --profile P`, the server command after `--`.
pub fn fixture(profile: &str) -> Vec<String> {
    vec![
        bin().to_owned(),
        "fixture".into(),
        "--profile".into(),
        profile.into(),
    ]
}

/// What one run of `capable` produced.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The command line, for failure messages.
    pub shown: String,
}

impl Run {
    /// Asserts the exit code, showing everything the process printed otherwise.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "`{}` exited with {:?}, expected {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.shown,
            self.code,
            cut(&self.stdout),
            cut(&self.stderr)
        );
        self
    }

    /// Stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "`{}`: stdout is not JSON ({e})\n--- stdout\n{}\n--- stderr\n{}",
                self.shown,
                cut(&self.stdout),
                cut(&self.stderr)
            )
        })
    }

    /// The messages `--trace` says were sent (`> ` lines), parsed.
    #[track_caller]
    pub fn sent(&self) -> Vec<Value> {
        trace(&self.stderr, "> ")
    }

    /// The methods of the sent messages, in order (responses to server requests: "").
    #[track_caller]
    pub fn sent_methods(&self) -> Vec<String> {
        self.sent()
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

fn cut(s: &str) -> String {
    if s.len() <= 6000 {
        s.to_owned()
    } else {
        let mut end = 6000;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes in all)", &s[..end], s.len())
    }
}

/// The trace lines of one direction (`"> "` sent, `"< "` received), parsed as JSON.
#[track_caller]
pub fn trace(stderr: &str, prefix: &str) -> Vec<Value> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|json| {
            serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("trace line is not JSON ({e}): {json}"))
        })
        .collect()
}

/// Runs `capable ARGS` in the workspace root; fails the test if it has not exited
/// within `deadline` (the child is killed by its PID first).
pub fn capable(args: &[&str], deadline: Duration) -> Run {
    run_in(bin(), args, &workspace(), deadline)
}

/// `capable ARGS -- SERVER...`.
pub fn capable_with(args: &[&str], server: &[String], deadline: Duration) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.extend(server.iter().map(String::as_str));
    capable(&all, deadline)
}

/// A cache directory of its own for one run (removed when dropped): no run sees
/// what another kept on disk unless a test shares one on purpose ([`run_cached`]).
pub struct CacheDir(pub PathBuf);

impl CacheDir {
    pub fn new() -> CacheDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("capable-test-cache-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("cache dir");
        CacheDir(dir)
    }
}

impl Drop for CacheDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `program ARGS` in `dir` with a deadline, with a cache directory of its own.
pub fn run_in(program: &str, args: &[&str], dir: &Path, deadline: Duration) -> Run {
    let cache = CacheDir::new();
    run_cached(program, args, dir, &cache, deadline)
}

/// Runs `program ARGS` in `dir` with a deadline, keeping its on-disk cache in `cache`.
pub fn run_cached(
    program: &str,
    args: &[&str],
    dir: &Path,
    cache: &CacheDir,
    deadline: Duration,
) -> Run {
    let shown = format!("capable {}", args.join(" "));
    let child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", &cache.0)
        .env_remove("CAPABLE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    collect(child, shown, deadline)
}

/// Waits for a started child (stdout and stderr piped) to exit within `deadline`
/// from now, and collects what it printed; a child still running then is killed by
/// its PID and fails the test.
pub fn collect(mut child: Child, shown: String, deadline: Duration) -> Run {
    let started = Instant::now();
    let pid = child.id();
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let status = loop {
        match child.try_wait().expect("wait") {
            Some(status) => break status,
            None if started.elapsed() >= deadline => {
                // Kill this one process by its PID; its server gets EOF and exits.
                let _ = child.kill();
                let _ = child.wait();
                let err = stderr
                    .recv_timeout(Duration::from_secs(2))
                    .unwrap_or_default();
                panic!(
                    "`{shown}` (pid {pid}) did not finish within {deadline:?}; killed it\n--- stderr\n{}",
                    cut(&err)
                );
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let elapsed = started.elapsed();
    // The pipes close when the process exits (the server's pipes are its own).
    let stdout = stdout
        .recv_timeout(Duration::from_secs(10))
        .expect("stdout closed after exit");
    let stderr = stderr
        .recv_timeout(Duration::from_secs(10))
        .expect("stderr closed after exit");
    Run {
        code: status.code(),
        stdout,
        stderr,
        elapsed,
        shown,
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

/// A revision as `read --json` prints it: a string, or `{"source","value"}`.
#[track_caller]
pub fn revision(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("revision without a value: {v}"))
            .to_owned(),
        other => panic!("not a revision: {other}"),
    }
}

/// Checks `s` is an RFC 3339 UTC timestamp (`YYYY-MM-DDTHH:MM:SS[.fff]Z`) and returns
/// its Unix time in seconds.
#[track_caller]
pub fn rfc3339_utc(s: &str) -> i64 {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> i64 {
        let part = s.get(r.clone()).unwrap_or("");
        assert!(
            part.len() == r.len() && part.bytes().all(|c| c.is_ascii_digit()),
            "{s:?} is not RFC 3339 (expected digits at {r:?})"
        );
        part.parse().unwrap()
    };
    assert!(b.len() >= 20, "{s:?} is too short for RFC 3339");
    for (i, c) in [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')] {
        assert_eq!(
            b[i], c,
            "{s:?} is not RFC 3339 (expected {:?} at {i})",
            c as char
        );
    }
    let (year, month, day) = (digits(0..4), digits(5..7), digits(8..10));
    let (hour, minute, second) = (digits(11..13), digits(14..16), digits(17..19));
    assert!(
        (1..=12).contains(&month) && (1..=31).contains(&day),
        "{s:?}: bad date"
    );
    assert!(hour < 24 && minute < 60 && second < 61, "{s:?}: bad time");
    let rest = &s[19..];
    let rest = match rest.strip_prefix('.') {
        Some(frac) => {
            let n = frac.bytes().take_while(u8::is_ascii_digit).count();
            assert!(n > 0, "{s:?}: empty fraction");
            &frac[n..]
        }
        None => rest,
    };
    assert_eq!(rest, "Z", "{s:?} is not in UTC (must end in Z)");
    days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Now, in Unix seconds.
pub fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// A temporary file that is removed when dropped.
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// A file named after `name`, of this process and this call alone (tests that run
    /// at once never write each other's).
    pub fn new(name: &str, contents: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "capable-cli-test-{}-{n}-{name}",
            std::process::id()
        ));
        std::fs::write(&path, contents).expect("write temp file");
        TempFile(path)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        // A config's pinned definitions, which `bridge --config` keeps beside it.
        if let Some(stem) = self.0.file_stem() {
            let mut pins = stem.to_os_string();
            pins.push(".pins.json");
            let _ = std::fs::remove_file(self.0.with_file_name(pins));
        }
    }
}

/// Stderr without the `--trace` lines: what a person reads.
pub fn untraced(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("> ") && !l.starts_with("< "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether to run a real-peer test: `false` when `CAPABLE_SKIP_PEERS=1`; otherwise a
/// missing peer (any of `needs`, relative to the workspace) fails the test with how to
/// install it.
#[track_caller]
pub fn peers_wanted(needs: &[&str]) -> bool {
    if std::env::var("CAPABLE_SKIP_PEERS").is_ok_and(|v| v == "1") {
        eprintln!("CAPABLE_SKIP_PEERS=1: skipping a real-peer test");
        return false;
    }
    for rel in needs {
        let path = workspace().join(rel);
        assert!(
            path.exists(),
            "{} is missing: run `.ci/install-peers` in {} to install the real MCP peers \
             (or set CAPABLE_SKIP_PEERS=1 to skip these tests)",
            path.display(),
            workspace().display()
        );
    }
    true
}
