//! The listener's host for `capable bridge --listen` tests: the bridge on a loopback
//! port, and raw HTTP to it (every header as a test wants it, streams read as they
//! come).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use super::bridge_support::Bridge;

/// `capable bridge --listen 127.0.0.1:0 [FLAGS] -- capable fixture --profile P`, and
/// the port it listens on.
pub fn listening(flags: &[&str], profile: &str) -> (Bridge, u16) {
    let server = super::common::fixture(profile);
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    listening_to(flags, &server)
}

/// `capable bridge --listen 127.0.0.1:0 [FLAGS] -- SERVER…`, and the port it listens on.
pub fn listening_to(flags: &[&str], server: &[&str]) -> (Bridge, u16) {
    let mut args = flags.to_vec();
    args.push("--");
    args.extend_from_slice(server);
    listening_env(&args, &[])
}

/// `capable bridge --listen 127.0.0.1:0 ARGS` (a `--config`, or `-- SERVER…` among
/// them) with `env` added to its environment, and the port it listens on.
pub fn listening_env(args: &[&str], env: &[(&str, &str)]) -> (Bridge, u16) {
    let mut all = vec!["--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let b = Bridge::start_env(&all, env);
    let url = b.audit_until(|l| l["event"] == "listening")["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    (b, port)
}

/// The peak memory of a process, from /proc (kB).
pub fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// One HTTP exchange, as it came back.
pub struct Http {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body (for SSE, what arrived before the reader stopped).
    pub body: String,
}

impl Http {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The `data:` of each SSE event, as JSON.
    pub fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

/// `METHOD /mcp` with `headers` and `body`; reads the whole answer (a stream: until
/// `stop` says it has what it wants, then hangs up).
pub fn http(
    port: u16,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
    stop: impl Fn(&str) -> bool,
) -> Http {
    exchange(port, method, "/mcp", headers, body, stop)
}

/// `METHOD PATH` with `headers` and `body`, the whole answer read.
pub fn http_at(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Http {
    exchange(port, method, path, headers, body, |_| false)
}

fn exchange(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    stop: impl Fn(&str) -> bool,
) -> Http {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    s.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':').unwrap();
        headers.push((n.trim().to_owned(), v.trim().to_owned()));
    }
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let mut body = String::new();
    if chunked {
        // Read chunk by chunk, so that a stream can be left when it has what is wanted.
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                break;
            }
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            body.push_str(&String::from_utf8_lossy(&chunk[..size]));
            if stop(&body) {
                break;
            }
        }
    } else {
        let _ = reader.read_to_string(&mut body);
    }
    Http {
        status,
        headers,
        body,
    }
}

pub fn post(port: u16, headers: &[(&str, &str)], message: Value) -> Http {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    http(port, "POST", &all, &message.to_string(), |_| false)
}

/// A 2026-07-28 POST of `message`, with the headers that revision requires of it
/// (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for what names a target), as
/// the body has them.
pub fn modern_post(port: u16, message: Value) -> Http {
    let version = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or("2026-07-28")
        .to_owned();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let params = &message["params"];
    let name = ["name", "uri", "taskId"]
        .iter()
        .find_map(|m| params[*m].as_str())
        .map(str::to_owned);
    let mut headers = vec![
        ("MCP-Protocol-Version", version.as_str()),
        ("Mcp-Method", method.as_str()),
    ];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name.as_str()));
    }
    post(port, &headers, message.clone())
}

pub fn initialize(port: u16) -> String {
    initialize_at(port, "2025-11-25")
}

/// The config of replicas that share `redis` as their store: `gateway.store` that
/// Redis (300 ms a call; `whenDown` as `when_down` says, else its default) and
/// `servers` as `mcpServers`, written as `name` in the temporary directory.
pub fn store_config(
    name: &str,
    redis: &capable_test_support::RedisServer,
    when_down: Option<&str>,
    servers: Value,
) -> super::common::TempFile {
    let mut store = json!({"redis": redis.url(), "timeout": "300ms"});
    if let Some(when_down) = when_down {
        store["whenDown"] = json!(when_down);
    }
    let text = json!({"gateway": {"store": store}, "mcpServers": servers});
    super::common::TempFile::new(name, &text.to_string())
}

/// A legacy session at `version`, initialized.
pub fn initialize_at(port: u16, version: &str) -> String {
    let answer = post(
        port,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert_eq!(answer.json()["result"]["protocolVersion"], version);
    let s = [("Mcp-Session-Id", session.as_str())];
    assert_eq!(
        post(
            port,
            &s,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .status,
        202
    );
    session
}

/// A seal key file in a directory of this test process's own: 32 bytes of `byte`, as
/// hex (what `--seal-key-file` reads).
pub fn key_file(name: &str, byte: u8) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("capable-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{byte:02x}").repeat(32)).unwrap();
    path
}

/// The JSON-RPC answer in `answer` (a JSON body, or an event stream's last event).
pub fn answer_of(answer: &Http) -> Value {
    assert_eq!(answer.status, 200, "{}", answer.body);
    match answer.header("content-type") {
        Some(t) if t.starts_with("text/event-stream") => answer.events().pop().unwrap(),
        _ => answer.json(),
    }
}

/// `method` with `params` in legacy session `session` on `port`: its answer.
pub fn ask(port: u16, session: &str, id: i64, method: &str, params: Value) -> Value {
    ask_with(port, &[], session, id, method, params)
}

/// [`ask`] with `headers` added.
pub fn ask_with(
    port: u16,
    headers: &[(&str, &str)],
    session: &str,
    id: i64,
    method: &str,
    params: Value,
) -> Value {
    let mut all = vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    all.extend_from_slice(headers);
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    answer_of(&post(port, &all, message))
}

/// One SSE event of the host's standalone stream: its id and its message.
pub type Event = (Option<String>, Value);

/// The host's standalone `GET` on `port` in `session` (with `Last-Event-ID`
/// `last`): its events as they come, the channel closed when the stream ends.
pub fn standalone(
    port: u16,
    session: &str,
    last: Option<&str>,
) -> std::sync::mpsc::Receiver<Event> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut head = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    );
    if let Some(last) = last {
        head.push_str(&format!("Last-Event-ID: {last}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(s);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "the GET: {status}");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim_end().is_empty() {
            break;
        }
    }
    let (tx, events) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Chunked: each chunk read as it comes; SSE events split at blank lines.
        let (mut text, mut id, mut data) = (String::new(), None, String::new());
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                return;
            }
            let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
                return;
            };
            if size == 0 {
                return;
            }
            let mut chunk = vec![0; size + 2];
            if reader.read_exact(&mut chunk).is_err() {
                return;
            }
            text.push_str(&String::from_utf8_lossy(&chunk[..size]));
            while let Some(end) = text.find('\n') {
                let line: String = text.drain(..=end).collect();
                let line = line.trim_end_matches(['\r', '\n']);
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                } else if line.is_empty() {
                    let message = serde_json::from_str(&data).unwrap_or(Value::Null);
                    if !data.is_empty() && tx.send((id.take(), message)).is_err() {
                        return;
                    }
                    data.clear();
                }
            }
        }
    });
    events
}
