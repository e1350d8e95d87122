//! End-to-end tests of the commands over a whole config: `capable servers` (one row per
//! entry, broken ones included, checked concurrently, the exit code of the worst),
//! `capable tools --all` and `capable tools call SERVER/TOOL`. Every server started
//! is gone when the command returns (checked in /proc).

mod common;

use std::time::Duration;

use common::{bin, capable, TempFile};
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(60);

/// A fixture entry whose processes carry `mark` in their environment.
fn fixture(profile: &str, mark: &str) -> Value {
    json!({"command": bin(), "args": ["fixture", "--profile", profile], "env": {"CAPABLE_SERVERS_TEST": mark}})
}

/// The processes whose environment carries `mark`.
fn processes_marked(mark: &str) -> Vec<u32> {
    capable_test_support::processes_with_env("CAPABLE_SERVERS_TEST", mark)
}

fn config(name: &str, servers: Value) -> TempFile {
    TempFile::new(name, &json!({ "mcpServers": servers }).to_string())
}

fn row<'a>(rows: &'a Value, server: &str) -> &'a Value {
    rows.as_array()
        .expect("an array of rows")
        .iter()
        .find(|r| r["server"] == server)
        .unwrap_or_else(|| panic!("no row for {server} in {rows}"))
}

#[test]
fn servers_checks_every_entry_at_once_and_exits_with_the_worst_code() {
    let mark = format!("servers-{}", std::process::id());
    let file = config(
        "servers.json",
        json!({
            "docs": fixture("read-only", &mark),
            "modern": fixture("modern", &mark),
            "tools": fixture("tools-changed", &mark),
            "old": fixture("unsupported-version", &mark),
            "crashy": fixture("crash", &mark),
            "stuck-1": fixture("hang-start", &mark),
            "stuck-2": fixture("hang-start", &mark),
            "stuck-3": fixture("hang-start", &mark),
            "missing": {"command": "/nonexistent/capable-servers-test"},
            "broken": {"args": ["no command"]},
            "unset": {"command": "${CAPABLE_SERVERS_TEST_UNSET}"},
            "gone": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
        }),
    );
    let run = capable(
        &[
            "servers",
            "--json",
            "--timeout",
            "2s",
            "--config",
            file.path(),
        ],
        T,
    );
    // The worst: a refused protocol version (4) outranks a timeout or an exit (3) and
    // a broken entry (2).
    run.expect_code(4);
    let rows = run.json();
    assert_eq!(rows.as_array().unwrap().len(), 12, "one row per entry");
    for (server, era, version) in [
        ("docs", "legacy", "2025-11-25"),
        ("modern", "modern", "2026-07-28"),
        ("tools", "legacy", "2025-11-25"),
    ] {
        let r = row(&rows, server);
        assert_eq!(r["state"], "ready", "{r}");
        assert_eq!(
            (r["era"].as_str(), r["protocolVersion"].as_str()),
            (Some(era), Some(version))
        );
        assert!(r["error"].is_null(), "{r}");
        assert!(r["handshakeMs"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
    }
    assert_eq!(
        (
            row(&rows, "docs")["resources"].as_u64(),
            row(&rows, "docs")["tools"].as_u64()
        ),
        (Some(2), None)
    );
    assert_eq!(row(&rows, "tools")["tools"], 2);
    for (server, state, kind, code) in [
        ("old", "refused", "protocol_version_refused", 4),
        ("stuck-1", "failed", "timeout", 3),
        ("missing", "refused", "transport", 3),
        ("broken", "refused", "usage", 2),
        ("unset", "refused", "usage", 2),
        ("gone", "failed", "transport", 3),
    ] {
        let r = row(&rows, server);
        assert_eq!(r["state"], state, "{r}");
        assert_eq!(r["error"]["kind"], kind, "{r}");
        assert_eq!(r["error"]["exitCode"], code, "{r}");
        assert!(r["restarts"] == 0, "a check never restarts: {r}");
    }
    assert!(
        row(&rows, "unset")["error"]["message"]
            .as_str()
            .unwrap()
            .contains("${CAPABLE_SERVERS_TEST_UNSET}"),
        "the error says what is wrong"
    );
    // The crash profile crashes on a read only: a check sees it ready.
    assert_eq!(row(&rows, "crashy")["state"], "ready");
    // Concurrently: three servers that hang 2 s each took 2 s together, not 6.
    assert!(
        run.elapsed < Duration::from_millis(5500),
        "took {:?}",
        run.elapsed
    );
    assert_eq!(
        processes_marked(&mark),
        Vec::<u32>::new(),
        "processes left behind"
    );
}

#[test]
fn servers_prints_a_table_people_read_and_escapes_what_servers_and_configs_say() {
    let mark = format!("table-{}", std::process::id());
    let file = config(
        "table.json",
        json!({
            "docs": fixture("read-only", &mark),
            "hostile": fixture("hostile", &mark),
            "evil\u{1b}[2J": fixture("read-only", &mark),
        }),
    );
    let run = capable(&["servers", "--config", file.path()], T);
    run.expect_code(2);
    let lines: Vec<&str> = run.stdout.lines().collect();
    for column in [
        "server",
        "state",
        "era",
        "version",
        "tools",
        "resources",
        "prompts",
        "handshake(ms)",
        "error",
    ] {
        assert!(lines[0].contains(column), "{}", lines[0]);
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("docs ") && l.contains("ready")),
        "{}",
        run.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("hostile ") && l.contains("ready")),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains('\u{1b}'),
        "no escape reaches the terminal: {:?}",
        run.stdout
    );
    let evil = lines
        .iter()
        .find(|l| l.starts_with("evil"))
        .expect("the badly named entry has its row");
    assert!(
        evil.contains("refused") && evil.contains("may not contain control characters"),
        "{evil}"
    );
    assert!(run.stdout.contains("2 of 3 healthy"), "{}", run.stdout);
    assert!(
        run.stderr.contains("1 of 3 servers are not healthy"),
        "{}",
        run.stderr
    );
    assert_eq!(
        processes_marked(&mark),
        Vec::<u32>::new(),
        "processes left behind"
    );
}

#[test]
fn all_healthy_is_exit_zero_and_the_default_search_finds_the_projects_config() {
    let mark = format!("healthy-{}", std::process::id());
    let servers = json!({"mcpServers": {"a": fixture("read-only", &mark), "b": fixture("no-resources", &mark)}});
    // Without --config: ./.mcp.json comes first.
    let dir = std::env::temp_dir().join(format!("capable-servers-project-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".mcp.json"), servers.to_string()).unwrap();
    let run = common::run_in(bin(), &["servers", "--json"], &dir, T);
    run.expect_code(0);
    let rows = run.json();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["server"].as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    // Headers are the config entries' business here: --header names one server.
    let header = common::run_in(bin(), &["servers", "--header", "A: b"], &dir, T);
    header.expect_code(2);
    assert!(header.stderr.contains("headers"), "{}", header.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        processes_marked(&mark),
        Vec::<u32>::new(),
        "processes left behind"
    );
}

#[test]
fn tools_all_merges_every_server_and_tools_call_reaches_one_by_its_host_name() {
    let mark = format!("tools-{}", std::process::id());
    let file = config(
        "tools.json",
        json!({
            "a": fixture("tools-changed", &mark),
            "b": fixture("no-resources", &mark),
            "docs": fixture("read-only", &mark),
        }),
    );
    let run = capable(&["tools", "--all", "--json", "--config", file.path()], T);
    run.expect_code(0);
    let tools: Vec<(String, String, String)> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (s(&t["server"]), s(&t["name"]), s(&t["tool"]["name"]))
        })
        .collect();
    for (server, name, tool) in [
        ("a", "a/echo", "echo"),
        ("a", "a/grow", "grow"),
        ("b", "b/echo", "echo"),
        ("b", "b/confirm", "confirm"),
    ] {
        assert!(
            tools.contains(&(server.into(), name.into(), tool.into())),
            "{name} in {tools:?}"
        );
    }
    assert!(
        tools.iter().all(|(s, _, _)| s != "docs"),
        "docs has no tools"
    );

    let table = capable(&["tools", "--all", "--config", file.path()], T);
    table.expect_code(0);
    assert!(
        table.stdout.lines().next().unwrap().starts_with("server"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("b/confirm"), "{}", table.stdout);

    let call = capable(
        &[
            "tools",
            "call",
            "b/echo",
            "--args",
            r#"{"message":"routed"}"#,
            "--config",
            file.path(),
        ],
        T,
    );
    call.expect_code(0);
    assert_eq!(call.stdout.trim(), "routed");
    let unknown = capable(&["tools", "call", "nope/echo", "--config", file.path()], T);
    unknown.expect_code(2);
    assert!(
        unknown.stderr.contains("it has: a, b, docs"),
        "{}",
        unknown.stderr
    );
    // Gating as always: docs declares no tools, so nothing is called.
    capable(&["tools", "call", "docs/echo", "--config", file.path()], T).expect_code(5);
    assert_eq!(
        processes_marked(&mark),
        Vec::<u32>::new(),
        "processes left behind"
    );
}
