//! Real MCP servers for the end-to-end tests: each on 127.0.0.1 (server-everything
//! forced there by a preloaded script; it has no host option), stopped by its PID.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use super::oauth::free_port;
use super::workspace;

/// server-everything's entry point, relative to the workspace.
pub const EVERYTHING_JS: &str =
    ".peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
/// The Python SDK's venv interpreter, relative to the workspace.
pub const PYTHON: &str = ".peers/venv/bin/python";
/// FastMCP's venv interpreter, relative to the workspace.
pub const FASTMCP: &str = ".peers/fastmcp/bin/python";

/// A server process on a loopback port, killed by its PID when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `program ARGS` (env `env`) and waits until it listens on `port`.
pub fn start(program: &str, args: &[&str], env: &[(&str, String)], port: u16) -> Server {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(workspace())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let server = Server { child, port };
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{program} did not listen on 127.0.0.1:{port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// A path of the workspace, as a string.
pub fn path(rel: &str) -> String {
    workspace().join(rel).display().to_string()
}

/// server-everything on stdio: the command.
pub fn everything_stdio() -> Vec<String> {
    vec!["node".into(), path(EVERYTHING_JS)]
}

/// server-everything in `mode` (`streamableHttp` or `sse`) on a loopback port.
pub fn everything(mode: &str) -> Server {
    let port = free_port();
    let preload = format!("--require {}", path("tests/peers/loopback.cjs"));
    let js = path(EVERYTHING_JS);
    start(
        "node",
        &[&js, mode],
        &[("PORT", port.to_string()), ("NODE_OPTIONS", preload)],
        port,
    )
}

/// The Python SDK server (dual-era) on stdio: the command.
pub fn python_stdio() -> Vec<String> {
    vec![path(PYTHON), path("tests/peers/python_server.py")]
}

/// The Python SDK server over Streamable HTTP.
pub fn python() -> Server {
    let port = free_port();
    let py = path(PYTHON);
    start(
        &py,
        &["tests/peers/python_server.py", "--http", &port.to_string()],
        &[],
        port,
    )
}

/// The TypeScript SDK server over Streamable HTTP.
pub fn ts() -> Server {
    let port = free_port();
    start(
        "node",
        &["tests/peers/ts_server.mjs", "--http", &port.to_string()],
        &[],
        port,
    )
}

/// FastMCP over Streamable HTTP.
pub fn fastmcp() -> Server {
    let port = free_port();
    let py = path(FASTMCP);
    start(
        &py,
        &["tests/peers/fastmcp_server.py", "--http", &port.to_string()],
        &[],
        port,
    )
}
