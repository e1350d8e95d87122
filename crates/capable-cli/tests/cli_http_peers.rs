//! End-to-end tests of `capable --url` against real MCP servers over HTTP:
//! server-everything (Streamable HTTP and the 2024-11-05 `sse` mode), the Python SDK
//! server (2026-07-28 and, forced, legacy Streamable HTTP) and the TypeScript SDK
//! server. Every server binds 127.0.0.1 only and is stopped by its PID.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::servers::{everything, free_port, python, ts, EVERYTHING_JS};
use common::{capable, peers_wanted, revision};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);

fn run(args: &[&str]) -> common::Run {
    capable(args, T)
}

#[test]
fn everything_over_streamable_http() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let s = everything("streamableHttp");
    let u = s.url("/mcp");
    let inspect = run(&["inspect", "--json", "--url", &u])
        .expect_code(0)
        .json();
    assert_eq!(inspect["era"], "legacy");
    assert_eq!(inspect["capabilities"]["resources"]["subscribe"], true);
    let read = run(&[
        "read",
        "demo://resource/static/document/architecture.md",
        "--json",
        "--url",
        &u,
    ])
    .expect_code(0)
    .json();
    assert!(revision(&read["revision"]).starts_with("sha256:"));
    let call = run(&[
        "tools",
        "call",
        "echo",
        "--args",
        r#"{"message":"hi"}"#,
        "--url",
        &u,
    ]);
    call.expect_code(0);
    assert!(call.stdout.contains("Echo: hi"), "{}", call.stdout);
    // The negotiated version travels on every request after initialize.
    let traced = run(&[
        "--trace",
        "tools",
        "call",
        "echo",
        "--args",
        r#"{"message":"x"}"#,
        "--url",
        &u,
    ]);
    traced.expect_code(0);
    assert_eq!(
        traced.sent_methods()[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
}

#[test]
fn everything_over_legacy_http_sse_is_found_from_its_sse_url() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let s = everything("sse");
    let u = s.url("/sse");
    let inspect = run(&["inspect", "--json", "--url", &u])
        .expect_code(0)
        .json();
    assert_eq!(inspect["serverInfo"]["name"], "mcp-servers/everything");
    let call = run(&[
        "tools",
        "call",
        "echo",
        "--args",
        r#"{"message":"over sse"}"#,
        "--url",
        &u,
    ]);
    call.expect_code(0);
    assert!(call.stdout.contains("Echo: over sse"), "{}", call.stdout);
    let read = run(&[
        "read",
        "demo://resource/static/document/architecture.md",
        "--url",
        &u,
    ]);
    read.expect_code(0);
    assert!(read.stdout.contains("Architecture"));
}

#[test]
fn python_sdk_over_http_in_both_eras() {
    if !peers_wanted(&[".peers/venv/bin/python"]) {
        return;
    }
    let s = python();
    let u = s.url("/mcp");
    let modern = run(&["inspect", "--json", "--url", &u])
        .expect_code(0)
        .json();
    assert_eq!(modern["era"], "modern");
    assert_eq!(modern["protocolVersion"], "2026-07-28");
    let read = run(&["read", "docs://manual/current", "--json", "--url", &u])
        .expect_code(0)
        .json();
    assert!(read["contents"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Acceptance instructions"));
    let add = run(&[
        "tools",
        "call",
        "add",
        "--args",
        r#"{"a":2,"b":3}"#,
        "--url",
        &u,
    ]);
    add.expect_code(0);
    assert!(add.stdout.lines().next() == Some("5"), "{}", add.stdout);
    let prompt = run(&[
        "prompts",
        "get",
        "greet",
        "--args",
        r#"{"name":"Ada"}"#,
        "--url",
        &u,
    ]);
    prompt.expect_code(0);
    assert!(prompt.stdout.contains("Ada"));

    let legacy = run(&["--protocol", "legacy", "inspect", "--json", "--url", &u])
        .expect_code(0)
        .json();
    assert_eq!(legacy["era"], "legacy");
    assert_eq!(legacy["capabilities"]["resources"]["subscribe"], false);
    let add = run(&[
        "--protocol",
        "legacy",
        "tools",
        "call",
        "add",
        "--args",
        r#"{"a":4,"b":5}"#,
        "--url",
        &u,
    ]);
    add.expect_code(0);
    assert!(add.stdout.starts_with('9'), "{}", add.stdout);
}

#[test]
fn typescript_sdk_over_http_with_sessions() {
    if !peers_wanted(&[".peers/npm/node_modules/@modelcontextprotocol/sdk"]) {
        return;
    }
    let s = ts();
    let u = s.url("/mcp");
    let inspect = run(&["inspect", "--json", "--url", &u])
        .expect_code(0)
        .json();
    assert_eq!(inspect["era"], "legacy");
    assert_eq!(
        inspect["capabilities"],
        serde_json::json!({"resources": {"listChanged": true}, "tools": {"listChanged": true}})
    );
    let read = run(&["read", "docs://manual/current", "--url", &u]);
    read.expect_code(0);
    assert!(read.stdout.contains("Acceptance instructions"));
    let call = run(&[
        "tools",
        "call",
        "echo",
        "--args",
        r#"{"message":"ts"}"#,
        "--url",
        &u,
    ]);
    call.expect_code(0);
    assert_eq!(call.stdout.trim(), "ts");
    // Prompts were not declared: refused locally, nothing sent.
    let prompts = run(&["--trace", "prompts", "--url", &u]);
    prompts.expect_code(5);
    assert!(!prompts
        .sent_methods()
        .iter()
        .any(|m| m.starts_with("prompts/")));
}

#[test]
fn http_errors_name_the_url_and_status() {
    let port = free_port();
    let u = format!("http://127.0.0.1:{port}/mcp");
    let out = run(&["inspect", "--json", "--url", &u]);
    out.expect_code(3);
    let v: Value = out.json();
    assert_eq!(v["error"]["kind"], "transport");
    assert!(out.stderr.contains(&u), "{}", out.stderr);
}

#[test]
fn a_watch_over_http_listen_sees_an_update_made_by_another_client() {
    if !peers_wanted(&[".peers/venv/bin/python"]) {
        return;
    }
    let s = python();
    let u = s.url("/mcp");
    let watch = Command::new(common::bin())
        .args([
            "watch",
            "docs://manual/current",
            "--updates",
            "1",
            "--json",
            "--url",
            &u,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let watch = ChildGuard(Some(watch));
    // Let the listen stream open, then change the document from another client.
    std::thread::sleep(Duration::from_millis(1500));
    run(&[
        "tools",
        "call",
        "touch",
        "--args",
        r#"{"uri":"docs://manual/current"}"#,
        "--url",
        &u,
    ])
    .expect_code(0);
    let out = watch.wait_within(Duration::from_secs(20));
    assert!(
        out.status.success(),
        "watch failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    assert_eq!(events[0]["event"], "mode");
    assert_eq!(events[0]["mode"], "listen");
    let revisions: Vec<&Value> = events.iter().filter(|e| e["event"] == "revision").collect();
    assert_eq!(
        revisions.len(),
        2,
        "the first state and one update: {events:?}"
    );
    assert_ne!(revisions[0]["revision"], revisions[1]["revision"]);
}

#[test]
fn servers_checks_a_modern_and_a_legacy_http_server_next_to_a_stdio_one() {
    if !peers_wanted(&[
        ".peers/venv/bin/python",
        ".peers/npm/node_modules/@modelcontextprotocol/sdk",
    ]) {
        return;
    }
    let (py, ts) = (python(), ts());
    let config = serde_json::json!({"mcpServers": {
        "py": {"type": "http", "url": py.url("/mcp")},
        "ts": {"type": "http", "url": ts.url("/mcp")},
        "fx": {"command": common::bin(), "args": ["fixture", "--profile", "read-only"]},
    }});
    let file = common::TempFile::new("http-servers.json", &config.to_string());
    let rows = run(&["servers", "--json", "--config", file.path()])
        .expect_code(0)
        .json();
    let era = |name: &str| {
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["server"] == name);
        row.map(|r| (r["state"].clone(), r["era"].clone()))
    };
    assert_eq!(era("py"), Some(("ready".into(), "modern".into())), "{rows}");
    assert_eq!(era("ts"), Some(("ready".into(), "legacy".into())), "{rows}");
    assert_eq!(era("fx"), Some(("ready".into(), "legacy".into())), "{rows}");
}

/// Kills a child by its PID unless it finished.
struct ChildGuard(Option<Child>);

impl ChildGuard {
    fn wait_within(mut self, limit: Duration) -> std::process::Output {
        let mut child = self.0.take().unwrap();
        let deadline = Instant::now() + limit;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the watch did not finish within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
