//! The processes the replica and agentgateway rows run, each stopped by its own handle
//! when dropped: the HTTP upstream they share, `capable bridge --listen` replicas, HAProxy
//! in front of them, agentgateway; the capable client that loads them; and what the bench
//! reads of a process from `/proc` (its CPU time and resident set).

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::shared::sibling;
use crate::Settings;

/// A process of the bench's, killed and reaped (by its handle) when dropped.
pub struct Proc {
    child: Child,
    /// Held open: the upstream serves until its stdin closes.
    _stdin: Option<ChildStdin>,
    /// Where a client reaches it (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The CPU time (user and system, all threads) it has used so far, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.pid())
    }

    /// A field of its `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
    pub fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let line = status.lines().find(|l| l.starts_with(field))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CPU time process `pid` has used, in seconds (`utime + stime` of `/proc/PID/stat`).
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // The fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11).unwrap_or(0.0) + ticks(12).unwrap_or(0.0)) / per_second
}

/// A loopback port nobody holds now (bound, then let go: the process binds it next).
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// Waits until something accepts connections on `port` (10 s at most).
fn wait_listening(port: u16, what: &str) -> Result<(), String> {
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > until {
            return Err(format!("{what} did not listen within 10 s"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn spawn(mut command: Command) -> Result<Child, String> {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{:?}: {e}", command.get_program()))
}

/// `capable-bench-http-server`: the legacy Streamable HTTP upstream every gateway of a
/// run is in front of (one process, so replicas share it).
pub fn upstream() -> Result<Proc, String> {
    let mut child = Command::new(sibling("capable-bench-http-server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("capable-bench-http-server: {e}"))?;
    let stdin = child.stdin.take();
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let url = line.trim().to_owned();
    let proc = Proc {
        child,
        _stdin: stdin,
        url,
    };
    match proc.url.starts_with("http://127.0.0.1:") {
        true => Ok(proc),
        false => Err("the HTTP upstream printed no URL".into()),
    }
}

/// A key file of 32 bytes (hex) in a directory of this run's own.
pub fn seal_key() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("capable-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("seal.key");
    std::fs::write(&path, "5a".repeat(32)).map_err(|e| e.to_string())?;
    Ok(path)
}

/// `capable bridge --listen 127.0.0.1:PORT [--seal-key-file KEY] --url UPSTREAM`,
/// listening.
pub fn replica(key: Option<&Path>, upstream: &str) -> Result<Proc, String> {
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let mut command = Command::new(sibling("capable"));
    command.args(["bridge", "--listen", &listen]);
    if let Some(key) = key {
        command.arg("--seal-key-file").arg(key);
    }
    command.args(["--url", upstream]).stdin(Stdio::null());
    for name in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "CAPABLE_SEAL_KEY",
    ] {
        command.env_remove(name);
    }
    let proc = Proc {
        child: spawn(command)?,
        _stdin: None,
        url: format!("http://{listen}/mcp"),
    };
    wait_listening(port, "a replica")?;
    Ok(proc)
}

/// HAProxy in front of `replicas` (their ports), round robin with no affinity, in the
/// shape of `deploy/haproxy.cfg` on loopback: each request is balanced on its own, a
/// kept-alive client connection included. Health checks are left out (they would add
/// traffic of their own to the rows).
pub fn haproxy(replicas: &[&Proc]) -> Result<Proc, String> {
    let port = free_port()?;
    let servers: String = replicas
        .iter()
        .map(|r| {
            let addr = r.url.trim_start_matches("http://").trim_end_matches("/mcp");
            // The server's name is its address: `http-send-name-header Host` sends it,
            // as the replica's own-host check wants.
            format!("  server {addr} {addr}\n")
        })
        .collect();
    let config = format!(
        "global\n  maxconn 1024\n\
         defaults\n  mode http\n  timeout connect 1s\n  timeout client 60s\n  timeout server 60s\n\
         frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
         backend replicas\n  balance roundrobin\n  http-send-name-header Host\n{servers}"
    );
    let dir = std::env::temp_dir().join(format!("capable-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&path, config).map_err(|e| e.to_string())?;
    let mut command = Command::new("haproxy");
    command.arg("-db").arg("-f").arg(&path).stdin(Stdio::null());
    let proc = Proc {
        child: spawn(command)?,
        _stdin: None,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    wait_listening(port, "haproxy")?;
    Ok(proc)
}

/// agentgateway (`binary -f CONFIG`) as an MCP gateway in front of `upstream`: one
/// Streamable HTTP target, on a port of its own; its admin, stats and readiness
/// listeners on loopback ports of their own too.
pub fn agentgateway(binary: &Path, upstream: &str) -> Result<Proc, String> {
    let port = free_port()?;
    let config = format!(
        "binds:\n- port: {port}\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n          \
         targets:\n          - name: bench\n            mcp:\n              host: {upstream}\n"
    );
    let dir = std::env::temp_dir().join(format!("capable-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join(format!("agentgateway-{port}.yaml"));
    std::fs::write(&path, config).map_err(|e| e.to_string())?;
    let mut command = Command::new(binary);
    command.arg("-f").arg(&path).stdin(Stdio::null());
    for (name, port) in [
        ("ADMIN_ADDR", free_port()?),
        ("STATS_ADDR", free_port()?),
        ("READINESS_ADDR", free_port()?),
    ] {
        command.env(name, format!("127.0.0.1:{port}"));
    }
    command.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    let proc = Proc {
        child: spawn(command)?,
        _stdin: None,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    wait_listening(port, "agentgateway")?;
    Ok(proc)
}

/// The capable client's run against `url` (`capable-bench client capable --latency`;
/// `legacy`: a legacy session, else 2026-07-28 requests): its figures.
pub fn client(url: &str, legacy: bool, s: &Settings) -> Result<Value, String> {
    let mut client = Command::new(sibling("capable-bench"));
    client.args(["client", "capable", "--url", url, "--latency"]);
    if legacy {
        client.arg("--legacy");
    }
    client.args(["-n", &s.n.to_string(), "-c", &s.c.to_string()]);
    client.args(["--warmup", &s.warmup.to_string(), "--handshakes", "5"]);
    let out = client
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    let figures: Value =
        serde_json::from_slice(&out.stdout).map_err(|_| format!("the client failed on {url}"))?;
    match figures["errors"].as_u64() {
        Some(0) => Ok(figures),
        _ => Err(format!("the client had errors on {url}: {figures}")),
    }
}

/// How many requests one client run sends (its warm-up, sequential and pipelined reads),
/// handshakes aside: what CPU seconds are divided by.
pub fn reads(s: &Settings) -> f64 {
    (s.warmup + 2 * s.n) as f64
}
