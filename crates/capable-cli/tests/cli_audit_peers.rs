//! `capable audit` against the real MCP servers installed in `.peers` by
//! `.ci/install-peers`: server-everything, the Python SDK server (both eras) and the
//! TypeScript SDK server. Each comes out clean (no contract violation); the checks
//! asserted here are the ones each server's declaration calls for.
//!
//! Set `CAPABLE_SKIP_PEERS=1` to skip these tests where the peers cannot be installed.

mod common;

use std::time::Duration;

use common::{capable_with, peers_wanted, workspace};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

fn node() -> String {
    let on_path = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        "node".into()
    } else {
        path(".peers/node22/node_modules/.bin/node")
    }
}

fn path(rel: &str) -> String {
    workspace().join(rel).display().to_string()
}

const EVERYTHING_JS: &str =
    ".peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const PYTHON: &str = ".peers/venv/bin/python";
const TS_SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk";

fn outcome<'a>(report: &'a Value, capability: &str, check: &str) -> &'a str {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["capability"] == capability && c["check"] == check)
        .and_then(|c| c["outcome"].as_str())
        .unwrap_or_else(|| panic!("no check {capability}/{check}: {report:#}"))
}

/// Audits, asserts a clean verdict, and that no tool was called.
fn clean_audit(args: &[&str], server: &[String]) -> Value {
    let mut all = vec!["audit", "--json", "--trace"];
    all.extend_from_slice(args);
    let run = capable_with(&all, server, T);
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["violations"], serde_json::json!([]), "{report:#}");
    assert!(
        !run.sent_methods().iter().any(|m| m == "tools/call"),
        "tools are never called"
    );
    for c in report["checks"].as_array().expect("checks") {
        assert_ne!(c["outcome"], "violation", "{c:#}");
    }
    report
}

#[test]
fn everything_is_clean() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    let r = clean_audit(&[], &[node(), path(EVERYTHING_JS)]);
    assert_eq!(r["server"]["name"], "mcp-servers/everything");
    assert_eq!(r["era"], "legacy");
    for (cap, check) in [
        ("(lifecycle)", "ping"),
        ("resources", "list"),
        ("resources", "templates/list"),
        ("resources", "read the first listed resource"),
        ("resources.subscribe", "subscribe"),
        ("resources.subscribe", "unsubscribe"),
        ("tools", "list"),
        ("tools", "each tool's input schema is a valid JSON Schema"),
        ("prompts", "list"),
        ("logging", "setLevel"),
        ("completions", "one completion request"),
    ] {
        assert_eq!(outcome(&r, cap, check), "ok", "{cap}/{check}: {r:#}");
    }
    // `tasks` has no read-only probe.
    assert_eq!(outcome(&r, "tasks", "declared"), "skipped");
}

#[test]
fn python_sdk_legacy_is_clean() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let server = vec![path(PYTHON), path("tests/peers/python_server.py")];
    let r = clean_audit(&["--protocol", "legacy"], &server);
    assert_eq!(r["era"], "legacy");
    // `subscribe: false` is not probed: declaring false is honest.
    assert!(!r["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .any(|c| c["capability"] == "resources.subscribe"));
    assert_eq!(
        outcome(&r, "resources", "read the first listed resource"),
        "ok"
    );
    assert_eq!(outcome(&r, "prompts", "list"), "ok");
}

#[test]
fn python_sdk_modern_is_clean_and_acknowledges_listen() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let server = vec![path(PYTHON), path("tests/peers/python_server.py")];
    let r = clean_audit(&[], &server);
    assert_eq!(r["era"], "modern");
    assert_eq!(r["protocolVersion"], "2026-07-28");
    assert_eq!(
        outcome(&r, "resources.subscribe", "open and close a listen stream"),
        "ok"
    );
    assert_eq!(outcome(&r, "(lifecycle)", "handshake"), "ok");
}

#[test]
fn typescript_sdk_is_clean() {
    if !peers_wanted(&[TS_SDK]) {
        return;
    }
    let r = clean_audit(&[], &[node(), path("tests/peers/ts_server.mjs")]);
    assert_eq!(r["server"]["name"], "capable-ts-peer");
    assert_eq!(outcome(&r, "tools", "list"), "ok");
    assert_eq!(
        outcome(&r, "resources.listChanged", "list change notification"),
        "unverifiable"
    );
}
