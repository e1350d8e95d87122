//! The on-disk tool cache, end to end: a one-shot `capable tools call` to a
//! 2026-07-28 HTTP server lists first when it knows nothing, then — in the next
//! process, while the list is fresh — calls at once, and both calls carry the
//! `Mcp-Param-*` header the tool's `x-mcp-header` asks for; `--no-cache` and
//! `--refresh` list again; the tool's `outputSchema`, known from the cache, checks
//! the result. The server is `tests/peers/modern_headers_server.py` on a loopback port.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{bin, run_cached, workspace, CacheDir, Run};
use serde_json::Value;

/// The server, killed by its PID when dropped; its request log on a channel.
struct Server {
    child: Child,
    url: String,
    log: mpsc::Receiver<Value>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start() -> Server {
        let script = workspace().join("tests/peers/modern_headers_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("a first line").expect("stdout");
        let port = first.strip_prefix("PORT ").expect("PORT n").to_owned();
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        Server {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        }
    }

    /// The requests logged since the last call, discover left out: everything up to
    /// a marker the test posts itself (the log is in arrival order).
    fn requests(&self) -> Vec<(String, Option<String>)> {
        use std::io::{Read, Write};
        let addr = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let body = r#"{"jsonrpc":"2.0","method":"test/mark"}"#;
        let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
        write!(
            tcp,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("mark");
        let _ = tcp.read_to_end(&mut Vec::new());
        let mut seen = Vec::new();
        loop {
            let v = self
                .log
                .recv_timeout(Duration::from_secs(10))
                .expect("the marker");
            match v["method"].as_str().unwrap_or("") {
                "test/mark" => return seen,
                "server/discover" => {}
                method => seen.push((
                    method.to_owned(),
                    v["mcp-param-region"].as_str().map(str::to_owned),
                )),
            }
        }
    }
}

fn call(server: &Server, cache: &CacheDir, extra: &[&str]) -> Run {
    let mut args = vec![
        "tools",
        "call",
        "deploy",
        "--args",
        r#"{"region":"eu-west"}"#,
    ];
    args.extend_from_slice(extra);
    args.extend(["--url", server.url.as_str()]);
    run_cached(bin(), &args, &workspace(), cache, Duration::from_secs(30))
}

fn listed_then_called() -> Vec<(String, Option<String>)> {
    vec![
        ("tools/list".into(), None),
        ("tools/call".into(), Some("eu-west".into())),
    ]
}

#[test]
fn a_one_shot_call_sends_its_param_headers_listing_only_when_the_kept_list_is_not_fresh() {
    let server = Server::start();
    let cache = CacheDir::new();
    let first = call(&server, &cache, &[]);
    first.expect_code(0);
    assert_eq!(
        server.requests(),
        listed_then_called(),
        "nothing kept yet: list first"
    );
    assert!(
        first.stderr.contains("does not match its outputSchema"),
        "the result is checked: {}",
        first.stderr
    );
    call(&server, &cache, &[]).expect_code(0);
    assert_eq!(
        server.requests(),
        [("tools/call".to_owned(), Some("eu-west".to_owned()))],
        "the fresh kept list gives the header without listing"
    );
    call(&server, &cache, &["--refresh"]).expect_code(0);
    assert_eq!(
        server.requests(),
        listed_then_called(),
        "--refresh lists again"
    );
    call(&server, &cache, &["--no-cache"]).expect_code(0);
    assert_eq!(
        server.requests(),
        listed_then_called(),
        "--no-cache reads nothing"
    );
}
