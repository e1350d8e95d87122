//! Interop with real servers on the features of the 2026-07-28 client: FastMCP
//! (`tests/peers/fastmcp_server.py`, PyPI `fastmcp`) in both eras over stdio and HTTP
//! — structured output checked against its output schema, MCP Apps metadata kept —
//! and server-everything's tasks (2025-11-25): a long tool call run as a task to
//! its result, and cancelled with `tasks/cancel` on Ctrl-C.
//!
//! Every server binds 127.0.0.1 only and is stopped by its PID. Without `.peers`
//! these tests fail, saying how to install them; `CAPABLE_SKIP_PEERS=1` skips them.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, capable, capable_with, peers_wanted, workspace};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);
const FASTMCP: &str = ".peers/fastmcp/bin/python";
const EVERYTHING_JS: &str =
    ".peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

fn path(rel: &str) -> String {
    workspace().join(rel).display().to_string()
}

fn fastmcp_stdio() -> Vec<String> {
    vec![path(FASTMCP), path("tests/peers/fastmcp_server.py")]
}

/// FastMCP over HTTP on a free loopback port, killed by its PID when dropped.
struct Http {
    child: Child,
    url: String,
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fastmcp_http() -> Http {
    let port = capable_test_support::free_port();
    let child = Command::new(path(FASTMCP))
        .args([
            path("tests/peers/fastmcp_server.py"),
            "--http".into(),
            port.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fastmcp");
    let server = Http {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "FastMCP did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// What every FastMCP session must show, in `era`: the tools (structured output with
/// its schema, the MCP Apps tool with its `_meta.ui` as sent), a structured call with
/// no output-schema complaint, the `ui://` resource read as sent.
fn check_fastmcp(era: &str, server: &dyn Fn(&[&str]) -> common::Run) {
    let inspect = server(&["--json", "--protocol", era, "inspect"]);
    inspect.expect_code(0);
    assert_eq!(inspect.json()["era"], era);
    let tools = server(&["--json", "--protocol", era, "tools"]);
    tools.expect_code(0);
    let tools = tools.json();
    let find = |name: &str| -> Value {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(find("forecast")["outputSchema"]["type"], "object");
    assert_eq!(
        find("shout")["_meta"]["ui"]["resourceUri"],
        "ui://shout/view"
    );
    let human = server(&["--protocol", era, "tools"]);
    assert!(human.stdout.contains("ui://shout/view"), "{}", human.stdout);
    let call = server(&[
        "--json",
        "--protocol",
        era,
        "tools",
        "call",
        "forecast",
        "--args",
        r#"{"city":"Oslo"}"#,
    ]);
    call.expect_code(0);
    assert_eq!(call.json()["structuredContent"]["celsius"], 21.5);
    assert!(
        !call.stderr.contains("outputSchema"),
        "no mismatch: {}",
        call.stderr
    );
    let view = server(&["--json", "--protocol", era, "read", "ui://shout/view"]);
    view.expect_code(0);
    assert_eq!(
        view.json()["contents"][0]["mimeType"],
        "text/html;profile=mcp-app"
    );
}

#[test]
fn fastmcp_over_stdio_in_both_eras() {
    if !peers_wanted(&[FASTMCP]) {
        return;
    }
    let command = fastmcp_stdio();
    for era in ["legacy", "modern"] {
        check_fastmcp(era, &|args| capable_with(args, &command, T));
    }
    let modern = capable_with(&["--protocol", "modern", "inspect"], &command, T);
    assert!(
        modern.stdout.contains("io.modelcontextprotocol/ui"),
        "{}",
        modern.stdout
    );
}

#[test]
fn fastmcp_over_http_in_both_eras() {
    if !peers_wanted(&[FASTMCP]) {
        return;
    }
    let server = fastmcp_http();
    for era in ["legacy", "modern"] {
        check_fastmcp(era, &|args| {
            let mut all = args.to_vec();
            all.extend(["--url", server.url.as_str()]);
            capable(&all, T)
        });
    }
}

fn node() -> String {
    let local = workspace().join(".peers/node22/node_modules/.bin/node");
    match local.exists() {
        true => local.display().to_string(),
        false => "node".into(),
    }
}

fn everything() -> Vec<String> {
    vec![node(), path(EVERYTHING_JS)]
}

/// server-everything over Streamable HTTP, forced onto 127.0.0.1 by a preloaded
/// script (it has no host option of its own).
fn everything_http() -> Http {
    let port = capable_test_support::free_port();
    let preload = format!("--require {}", path("tests/peers/loopback.cjs"));
    let child = Command::new(node())
        .args([path(EVERYTHING_JS), "streamableHttp".into()])
        .env("PORT", port.to_string())
        .env("NODE_OPTIONS", preload)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server-everything");
    let server = Http {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// A long research query runs as a task to its report, its status shown; a tool
/// with an output schema answers structured content that matches it.
fn check_everything(server: &dyn Fn(&[&str]) -> common::Run) {
    let research = r#"{"topic":"rust"}"#;
    let run = server(&[
        "tools",
        "call",
        "simulate-research-query",
        "--args",
        research,
        "--task",
    ]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("Research Report: rust"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(" working: Gathering sources"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(" completed"), "{}", run.stderr);
    let chicago = r#"{"location":"Chicago"}"#;
    let structured = server(&[
        "--json",
        "tools",
        "call",
        "get-structured-content",
        "--args",
        chicago,
    ]);
    structured.expect_code(0);
    assert!(structured.json()["structuredContent"]["temperature"].is_number());
    assert!(
        !structured.stderr.contains("outputSchema"),
        "{}",
        structured.stderr
    );
}

#[test]
fn server_everything_runs_a_task_and_checks_structured_output_over_stdio() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    check_everything(&|args| capable_with(args, &everything(), T));
}

#[test]
fn server_everything_runs_a_task_and_checks_structured_output_over_http() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let server = everything_http();
    check_everything(&|args| {
        let mut all = args.to_vec();
        all.extend(["--url", server.url.as_str()]);
        capable(&all, T)
    });
}

#[test]
fn ctrl_c_cancels_a_running_task_with_tasks_cancel() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let cache = common::CacheDir::new();
    let mut child = Command::new(bin())
        .args([
            "--trace",
            "tools",
            "call",
            "simulate-research-query",
            "--args",
            r#"{"topic":"rust"}"#,
            "--task",
            "--",
        ])
        .args(everything())
        .env("XDG_CACHE_HOME", &cache.0)
        .current_dir(workspace())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("capable");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    // Wait until the task is running (its first status), then Ctrl-C.
    for line in lines.by_ref() {
        let line = line.expect("stderr");
        let running = line.starts_with("task ") && line.contains(" working");
        seen.push(line);
        if running {
            break;
        }
    }
    // SAFETY: sends SIGINT to the child we started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
    let sent: Vec<Value> = seen
        .iter()
        .filter_map(|l| l.strip_prefix("> "))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let cancels: Vec<&Value> = sent
        .iter()
        .filter(|m| m["method"] == "tasks/cancel")
        .collect();
    assert_eq!(cancels.len(), 1, "{}", seen.join("\n"));
    assert!(
        sent.iter()
            .all(|m| m["method"] != "notifications/cancelled"),
        "a task is never cancelled with notifications/cancelled: {}",
        seen.join("\n")
    );
}
