//! Secrets never reach an output: a marker is planted in every place a user puts one —
//! each `--header`, a config entry's `headers` and `env`, the URL's userinfo and query —
//! and every output path is searched for it: stdout and stderr of `--trace` and
//! `--json` runs, errors (an unreachable URL, an HTTP 500, a JSON-RPC error, a failed
//! spawn, a crash), the audit's Markdown report, a watch. Servers that echo what they
//! were sent (a header in an error body, an environment variable in their last words)
//! are included: what capable prints of them is scrubbed too.

mod common;
use capable_test_support::http_peer;

use std::time::Duration;

use common::{bin, capable, Run, TempFile};
use http_peer::faults::{OwnRuntimePeer, MANUAL};
use http_peer::{initialize_result, result, Reply, Seen};
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(30);

/// Every planted secret, each distinct so a leak names its source.
const HEADER: &str = "hdr-5ecret-a81f";
const BEARER: &str = "bearer-5ecret-c09d";
const USERINFO: &str = "pw-5ecret-77e2";
const QUERY: &str = "query-5ecret-4b1c";
const CONFIG_HEADER: &str = "cfghdr-5ecret-913a";
const CONFIG_QUERY: &str = "cfgquery-5ecret-2d6e";
const ENV: &str = "env-5ecret-e45b";
const ALL: [&str; 7] = [
    HEADER,
    BEARER,
    USERINFO,
    QUERY,
    CONFIG_HEADER,
    CONFIG_QUERY,
    ENV,
];

/// Fails with every secret found in `texts`, and where.
fn no_secret(what: &str, texts: &[(&str, &str)]) -> Result<(), String> {
    let mut found = Vec::new();
    for (name, text) in texts {
        for secret in ALL {
            if text.contains(secret) {
                found.push(format!("{secret} in {name}"));
            }
        }
    }
    match found.is_empty() {
        true => Ok(()),
        false => Err(format!("{what}: {}", found.join(", "))),
    }
}

fn outputs(run: &Run) -> [(&'static str, &str); 2] {
    [("stdout", &run.stdout), ("stderr", &run.stderr)]
}

fn id(s: &Seen) -> Value {
    s.rpc_id().cloned().unwrap_or(Value::Null)
}

/// A legacy HTTP server; with `echo`, it fails reads with everything it was sent: the
/// headers in an HTTP 500 body, and in a JSON-RPC error's message and data.
fn server(echo: bool) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |s: &Seen| {
        let sent = format!("{:?} {}", s.headers, s.path);
        match (s.method.as_str(), s.rpc_method()) {
            ("POST", Some("server/discover")) => Reply::Status(400, vec![]),
            ("POST", Some("initialize")) => Reply::Json(
                200,
                vec![],
                initialize_result(&id(s), "2025-06-18", json!({"resources": {}})),
            ),
            ("POST", Some(m)) if m.starts_with("notifications/") => Reply::Status(202, vec![]),
            ("POST", Some("resources/list")) => Reply::Json(
                200,
                vec![],
                result(
                    &id(s),
                    json!({"resources": [{"uri": MANUAL, "name": "manual"}]}),
                ),
            ),
            ("POST", Some("resources/templates/list")) => Reply::Json(
                200,
                vec![],
                result(&id(s), json!({"resourceTemplates": []})),
            ),
            ("POST", Some("resources/read")) if echo && s.rpc_id() == Some(&json!(2)) => {
                Reply::Raw(500, vec![], format!("you sent {sent}").into_bytes())
            }
            ("POST", Some("resources/read")) if echo => Reply::Json(
                200,
                vec![],
                json!({"jsonrpc": "2.0", "id": id(s), "error": {
                    "code": -32603, "message": format!("you sent {sent}"), "data": sent}}),
            ),
            ("POST", Some("resources/read")) => Reply::Json(
                200,
                vec![],
                result(
                    &id(s),
                    json!({"contents": [{"uri": MANUAL, "text": "Acceptance instructions"}]}),
                ),
            ),
            ("GET", _) => Reply::Status(405, vec![]),
            ("DELETE", _) => Reply::Status(200, vec![]),
            _ => Reply::Status(404, vec![]),
        }
    }
}

/// The URL with the userinfo and query secrets.
fn secret_url(peer: &OwnRuntimePeer) -> String {
    peer.url()
        .replace("http://", &format!("http://user:{USERINFO}@"))
        + &format!("?api_key={QUERY}")
}

fn with_flags<'a>(url: &'a str, headers: &'a [String; 2], rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--trace",
        "--url",
        url,
        "--header",
        &headers[0],
        "--header",
        &headers[1],
    ];
    args.extend_from_slice(rest);
    args
}

#[test]
fn no_output_path_shows_a_planted_secret() {
    let mut failures = Vec::new();
    let headers = [
        format!("X-Api-Key: {HEADER}"),
        format!("Authorization: Bearer {BEARER}"),
    ];
    let report = TempFile::new("secrets-audit.md", "");

    // Flags: every command a user runs against an HTTP server, then its error paths.
    let peer = OwnRuntimePeer::start(server(false));
    let url = secret_url(&peer);
    let runs: Vec<(&str, Vec<&str>)> = vec![
        ("inspect --json", vec!["--json", "inspect"]),
        ("inspect", vec!["inspect"]),
        ("read --json", vec!["--json", "read", MANUAL]),
        ("resources", vec!["resources"]),
        ("tools (not offered)", vec!["tools"]),
        ("audit", vec!["audit", "--report", report.path()]),
        (
            "watch",
            vec![
                "--json",
                "watch",
                "--poll",
                "100ms",
                "--updates",
                "0",
                MANUAL,
            ],
        ),
    ];
    for (what, rest) in &runs {
        let run = capable(&with_flags(&url, &headers, rest), T);
        let text = std::fs::read_to_string(report.path()).unwrap_or_default();
        if let Err(e) = no_secret(
            what,
            &[outputs(&run)[0], outputs(&run)[1], ("the report", &text)],
        ) {
            failures.push(e);
        }
    }
    let echo = OwnRuntimePeer::start(server(true));
    let echo_url = secret_url(&echo);
    for (what, json) in [("an HTTP 500", false), ("a JSON-RPC error", true)] {
        // The first read is answered with a 500, a second one with a JSON-RPC error.
        let reads: Vec<&str> = if json {
            vec!["--json", "read", "docs://none", MANUAL]
        } else {
            vec!["--json", "read", MANUAL]
        };
        let run = capable(&with_flags(&echo_url, &headers, &reads), T);
        if let Err(e) = no_secret(what, &outputs(&run)) {
            failures.push(e);
        }
    }
    let unreachable = format!("http://user:{USERINFO}@127.0.0.1:1/mcp?api_key={QUERY}");
    let run = capable(
        &with_flags(&unreachable, &headers, &["--json", "inspect"]),
        T,
    );
    if let Err(e) = no_secret("an unreachable server", &outputs(&run)) {
        failures.push(e);
    }
    let typo = format!("http://user:{USERINFO}@127.0.0.1:99999/mcp?api_key={QUERY}");
    let run = capable(&["--url", &typo, "inspect"], T);
    if let Err(e) = no_secret("a URL with a typo", &outputs(&run)) {
        failures.push(e);
    }
    if !run.stderr.contains("127.0.0.1:99999") {
        failures.push(format!(
            "a URL with a typo: the host and port help find it: {}",
            run.stderr
        ));
    }
    let bad = format!("X-Api-Key {HEADER}");
    let run = capable(&["--header", &bad, "--url", &peer.url(), "inspect"], T);
    if let Err(e) = no_secret("a mistyped --header", &outputs(&run)) {
        failures.push(e);
    }

    // A config file: an HTTP entry's URL and headers, a stdio entry's env (a healthy
    // server, one that cannot start, one that says its secret as it crashes).
    let config = TempFile::new(
        "secrets-config.json",
        &json!({"mcpServers": {
            "remote": {"url": format!("{}?token={CONFIG_QUERY}", peer.url()), "headers": {"X-Token": CONFIG_HEADER}},
            "echo": {"url": format!("{}?token={CONFIG_QUERY}", echo.url()), "headers": {"X-Token": CONFIG_HEADER}},
            "local": {"command": bin(), "args": ["fixture"], "env": {"API_TOKEN": ENV}},
            "missing": {"command": "/nonexistent/server", "env": {"API_TOKEN": ENV}},
            "blabbing": {"command": "sh", "args": ["-c", "echo \"starting with token $API_TOKEN\" >&2; exit 3"], "env": {"API_TOKEN": ENV}},
        }})
        .to_string(),
    );
    for (server, rest) in [
        ("remote", vec!["--json", "inspect"]),
        ("remote", vec!["read", MANUAL]),
        ("echo", vec!["read", MANUAL]),
        ("local", vec!["--json", "inspect"]),
        ("local", vec!["audit"]),
        ("missing", vec!["inspect"]),
        ("missing", vec!["--json", "inspect"]),
        ("blabbing", vec!["inspect"]),
        ("blabbing", vec!["--json", "inspect"]),
    ] {
        let mut args = vec!["--trace", "--config", config.path(), "--server", server];
        args.extend(rest.iter().copied());
        let run = capable(&args, T);
        if let Err(e) = no_secret(
            &format!("--server {server} {}", rest.join(" ")),
            &outputs(&run),
        ) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
