//! End-to-end tests of the real `capable` binary against real MCP servers installed
//! in `.peers` by `.ci/install-peers` (see tests/peers/FINDINGS.md).
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{capable_with, peers_wanted, revision, workspace};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);

/// `node` from PATH, else the one `.ci/install-peers` installs.
fn node() -> String {
    let on_path = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        return "node".into();
    }
    let local = workspace().join(".peers/node22/node_modules/.bin/node");
    assert!(
        local.exists(),
        "no `node` on PATH and none in .peers: run `.ci/install-peers`"
    );
    local.display().to_string()
}

const EVERYTHING_JS: &str =
    ".peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const PYTHON: &str = ".peers/venv/bin/python";
const TS_SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk";

fn everything() -> Vec<String> {
    vec![node(), path(EVERYTHING_JS)]
}

fn python() -> Vec<String> {
    vec![path(PYTHON), path("tests/peers/python_server.py")]
}

fn ts() -> Vec<String> {
    vec![node(), path("tests/peers/ts_server.mjs")]
}

fn path(rel: &str) -> String {
    let p = workspace().join(rel);
    assert!(Path::new(&p).exists(), "{} is missing", p.display());
    p.display().to_string()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap_or_else(|| panic!("not a string: {s}")))
        .collect()
}

// ── server-everything ─────────────────────────────────────────────────────────

#[test]
fn everything_inspect() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let run = capable_with(&["inspect", "--json"], &everything(), T);
    run.expect_code(0);
    let r = run.json();
    assert_eq!(r["era"], "legacy", "{r:#}");
    assert_eq!(r["serverInfo"]["name"], "mcp-servers/everything", "{r:#}");
    assert_eq!(r["capabilities"]["resources"]["subscribe"], true, "{r:#}");
    assert!(r["capabilities"]["logging"].is_object(), "{r:#}");
    let actions = strings(&r["actions"]);
    for m in [
        "resources/read",
        "resources/subscribe",
        "tools/call",
        "prompts/get",
    ] {
        assert!(actions.contains(&m), "{m} missing from {actions:?}");
    }
}

#[test]
fn everything_resources_and_read() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let run = capable_with(&["resources", "--json"], &everything(), T);
    run.expect_code(0);
    let list = run.json();
    let uris: Vec<&str> = list
        .as_array()
        .expect("an array of resources")
        .iter()
        .map(|r| r["uri"].as_str().expect("uri"))
        .collect();
    let expected: Vec<String> = [
        "architecture",
        "extension",
        "features",
        "how-it-works",
        "instructions",
        "startup",
        "structure",
    ]
    .iter()
    .map(|d| format!("demo://resource/static/document/{d}.md"))
    .collect();
    let mut sorted = uris.clone();
    sorted.sort();
    assert_eq!(sorted, expected);

    let first = uris[0];
    let run = capable_with(&["read", "--json", first], &everything(), T);
    run.expect_code(0);
    let r = run.json();
    assert_eq!(r["uri"], first, "{r:#}");
    assert!(revision(&r["revision"]).starts_with("sha256:"), "{r:#}");
    let text = r["contents"][0]["text"].as_str().unwrap_or("");
    assert!(text.starts_with("# "), "a markdown document: {text}");
}

#[test]
fn everything_tools_call_echo() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let run = capable_with(
        &["tools", "call", "echo", "--args", r#"{"message":"hi"}"#],
        &everything(),
        T,
    );
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "Echo: hi");
}

#[test]
fn everything_prompts() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let run = capable_with(&["prompts", "--json"], &everything(), T);
    run.expect_code(0);
    let list = run.json();
    let names: Vec<&str> = list
        .as_array()
        .expect("an array of prompts")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    for n in ["simple-prompt", "args-prompt"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }

    let run = capable_with(&["prompts", "get", "simple-prompt"], &everything(), T);
    run.expect_code(0);
    assert!(
        run.stdout.contains("user: This is a simple prompt"),
        "{}",
        run.stdout
    );
}

// ── Python SDK server ─────────────────────────────────────────────────────────

#[test]
fn python_inspect_declares_no_subscribe() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let run = capable_with(&["inspect", "--json", "--protocol", "legacy"], &python(), T);
    run.expect_code(0);
    let r = run.json();
    assert_eq!(r["era"], "legacy", "{r:#}");
    assert_eq!(r["serverInfo"]["name"], "capable-python-peer", "{r:#}");
    assert_eq!(r["capabilities"]["resources"]["subscribe"], false, "{r:#}");
    let actions = strings(&r["actions"]);
    assert!(actions.contains(&"resources/read"), "{actions:?}");
    assert!(
        !actions.contains(&"resources/subscribe"),
        "subscribe: false must not be callable: {actions:?}"
    );
    assert!(!actions.contains(&"resources/unsubscribe"), "{actions:?}");
}

#[test]
fn python_read_and_tool_call() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let run = capable_with(
        &[
            "read",
            "--json",
            "--protocol",
            "legacy",
            "docs://manual/current",
        ],
        &python(),
        T,
    );
    run.expect_code(0);
    let r = run.json();
    assert!(revision(&r["revision"]).starts_with("sha256:"), "{r:#}");
    let text = r["contents"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("Acceptance instructions"), "{r:#}");

    let run = capable_with(
        &[
            "tools",
            "call",
            "add",
            "--json",
            "--protocol",
            "legacy",
            "--args",
            r#"{"a":2,"b":3}"#,
        ],
        &python(),
        T,
    );
    run.expect_code(0);
    let r = run.json();
    assert_eq!(r["structuredContent"]["result"], 5, "{r:#}");
    assert_eq!(r["content"][0]["text"], "5", "{r:#}");
}

// ── TypeScript SDK server ─────────────────────────────────────────────────────

#[test]
fn ts_inspect_and_read() {
    if !peers_wanted(&[TS_SDK]) {
        return;
    }
    let run = capable_with(&["inspect", "--json"], &ts(), T);
    run.expect_code(0);
    let r = run.json();
    assert_eq!(r["serverInfo"]["name"], "capable-ts-peer", "{r:#}");
    let resources = &r["capabilities"]["resources"];
    assert_eq!(resources["listChanged"], true, "{r:#}");
    assert_ne!(resources["subscribe"], true, "{r:#}");
    assert!(r["capabilities"].get("prompts").is_none(), "{r:#}");
    let actions = strings(&r["actions"]);
    assert!(!actions.contains(&"resources/subscribe"), "{actions:?}");
    assert!(!actions.contains(&"prompts/list"), "{actions:?}");

    let run = capable_with(&["read", "docs://manual/current"], &ts(), T);
    run.expect_code(0);
    assert!(
        run.stdout.contains("Acceptance instructions"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("sha256:"), "{}", run.stdout);
}

#[test]
fn ts_prompts_are_refused_locally() {
    if !peers_wanted(&[TS_SDK]) {
        return;
    }
    let run = capable_with(&["prompts", "--trace"], &ts(), T);
    run.expect_code(5);
    let message = common::untraced(&run.stderr);
    assert!(message.contains("`prompts`"), "{message}");
    assert!(message.contains("nothing was sent"), "{message}");
    let sent = run.sent_methods();
    assert!(
        !sent.iter().any(|m| m.starts_with("prompts/")),
        "refused locally means not sent: {sent:?}"
    );
}
