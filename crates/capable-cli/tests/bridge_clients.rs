//! `capable bridge` between clients and servers nobody here wrote: the TypeScript SDK's
//! client (v1 1.32.2 and v2 2.4.0, legacy and 2026-07-28), the Python SDK's client
//! (`mcp` 2.3.0, both modes), rmcp's client and the MCP Inspector's CLI (on Node 22), in
//! front of the fixture, server-everything, FastMCP, the Python and TypeScript SDK
//! servers — over stdio and, behind the bridge, Streamable HTTP and HTTP+SSE.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use bridge_support::{python_host, ts_host};
use common::peers_wanted;
use common::servers::{self, path, EVERYTHING_JS, FASTMCP, PYTHON};
use serde_json::{json, Value};

const TS_V2: &str = ".peers/client-v2/node_modules/@modelcontextprotocol/client/package.json";
const INSPECTOR: &str =
    ".peers/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js";
const NODE22: &str = ".peers/node22/node_modules/.bin/node";

/// `-- capable fixture --profile P`, as the bridge's own arguments.
fn fixture(profile: &str) -> Vec<String> {
    let mut args = vec!["--".to_owned()];
    args.extend(common::fixture(profile));
    args
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[track_caller]
fn no_error(seen: &Value) {
    assert!(seen.get("error").is_none(), "the host failed: {seen}");
}

#[test]
fn the_typescript_sdk_clients_through_the_bridge_in_both_eras() {
    if !peers_wanted(&[".peers/npm/node_modules/@modelcontextprotocol/sdk", TS_V2]) {
        return;
    }
    // The server asks the host (elicitation) through the bridge; each client answers.
    for sdk in ["v1", "v2"] {
        let seen = ts_host(sdk, &strs(&fixture("elicit")));
        no_error(&seen);
        assert_eq!(seen["capabilities"], json!({"tools": {}}), "{sdk}: {seen}");
        assert_eq!(seen["serverInfo"]["name"], "capable-fixture/elicit");
        assert_eq!(seen["tools"], json!(["echo", "confirm"]));
        assert_eq!(seen["echo"], "hi from ts");
        assert_eq!(
            seen["confirm"],
            r#"confirmed: action=accept content={"approve":true}"#
        );
    }
    // 2026-07-28 on both sides: the server's input_required result reaches the host,
    // whose retry reaches the server.
    let seen = ts_host("v2-modern", &strs(&fixture("modern")));
    no_error(&seen);
    assert_eq!(seen["protocolVersion"], "2026-07-28");
    assert_eq!(
        seen["capabilities"],
        json!({"resources": {"subscribe": true, "listChanged": true}, "tools": {}})
    );
    assert_eq!(
        seen["confirm"],
        r#"confirmed: action=accept content={"approve":true}"#
    );
    assert!(seen["read"]
        .as_str()
        .unwrap()
        .starts_with("Acceptance instructions"));
}

#[test]
fn the_python_sdk_client_through_the_bridge_in_both_modes() {
    if !peers_wanted(&[PYTHON, EVERYTHING_JS]) {
        return;
    }
    let seen = python_host("legacy", &strs(&fixture("elicit")));
    no_error(&seen);
    assert_eq!(seen["protocolVersion"], "2025-11-25");
    assert_eq!(
        seen["confirm"],
        r#"confirmed: action=accept content={"approve":true}"#
    );
    // A dual-era server behind: the auto client ends up modern, as with the server itself.
    let mut bridge = vec!["--".to_owned()];
    bridge.extend(servers::python_stdio());
    let seen = python_host("auto", &strs(&bridge));
    no_error(&seen);
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    assert_eq!(seen["serverInfo"]["name"], "capable-python-peer");
    assert_eq!(seen["echo"], "hi from python");
    assert!(seen["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "docs://manual/current"));
    // A legacy-only server behind: the bridge serves it in 2026-07-28 to a client that
    // speaks it, telling it only what that version defines (no core tasks).
    let mut bridge = vec!["--".to_owned()];
    bridge.extend(servers::everything_stdio());
    let seen = python_host("auto", &strs(&bridge));
    no_error(&seen);
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    assert_eq!(seen["echo"], "Echo: hi from python");
    let caps = &seen["capabilities"];
    for declared in ["tools", "prompts", "resources", "logging", "completions"] {
        assert!(caps.get(declared).is_some(), "{declared}: {caps}");
    }
    assert!(caps.get("tasks").is_none(), "{caps}");
}

#[tokio::test]
async fn rmcps_client_through_the_bridge() {
    if !peers_wanted(&[EVERYTHING_JS]) {
        return;
    }
    use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;
    let bridged = |server: Vec<String>| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_capable"));
        command.arg("bridge").arg("--").args(server);
        command.current_dir(common::workspace());
        TokioChildProcess::new(command).expect("spawn the bridge")
    };
    let client = ().serve(bridged(common::fixture("read-only"))).await.expect("rmcp connects");
    let info = client.peer_info().expect("the server's info").clone();
    assert_eq!(
        info.server_info.as_ref().unwrap().name,
        "capable-fixture/read-only"
    );
    assert!(info.capabilities.resources.is_some() && info.capabilities.tools.is_none());
    let read = client
        .read_resource(ReadResourceRequestParams::new("docs://manual/current"))
        .await
        .expect("a read");
    let text = serde_json::to_value(&read.contents[0]).unwrap()["text"].clone();
    assert!(
        text.as_str()
            .unwrap()
            .starts_with("Acceptance instructions"),
        "{text}"
    );
    // Not declared: refused by the bridge as method-not-found.
    let refused = client
        .list_tools(None)
        .await
        .expect_err("no tools declared");
    assert!(
        refused.to_string().contains("-32601") || refused.to_string().contains("not found"),
        "{refused}"
    );
    let _ = client.cancel().await;

    let client = ().serve(bridged(servers::everything_stdio())).await.expect("rmcp connects");
    let mut call = CallToolRequestParams::new("echo");
    call.arguments = Some(serde_json::from_value(json!({"message": "hi from rmcp"})).unwrap());
    let echoed = client.call_tool(call).await.expect("echo");
    let text = serde_json::to_value(&echoed.content[0]).unwrap()["text"].clone();
    assert_eq!(text, "Echo: hi from rmcp");
    let _ = client.cancel().await;
}

/// The Inspector's CLI with a config file whose one server is the bridge (as a desktop
/// app's config would hold it): `inspector --cli --config F --server bridged ARGS`.
fn inspector(bridge: &[String], args: &[&str]) -> Value {
    let mut bridge_args = vec!["bridge".to_owned()];
    bridge_args.extend_from_slice(bridge);
    let config = json!({"mcpServers": {"bridged": {
        "command": env!("CARGO_BIN_EXE_capable"), "args": bridge_args}}});
    let file = common::TempFile::new("inspector.json", &config.to_string());
    let mut all = vec![
        path(INSPECTOR),
        "--cli".into(),
        "--config".into(),
        file.path().into(),
    ];
    all.extend(["--server".to_owned(), "bridged".to_owned()]);
    all.extend(args.iter().map(|a| a.to_string()));
    let out = std::process::Command::new(path(NODE22))
        .args(&all)
        .current_dir(common::workspace())
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("run the inspector");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "the inspector printed no JSON ({e})\n--- stdout\n{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn the_inspector_cli_on_node_22_through_the_bridge() {
    if !peers_wanted(&[INSPECTOR, NODE22]) {
        return;
    }
    let tools = inspector(&fixture("no-resources"), &["--method", "tools/list"]);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "confirm"]);
    let call = inspector(
        &fixture("no-resources"),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=inspected",
        ],
    );
    assert_eq!(call["content"][0]["text"], "inspected", "{call}");
    let read = inspector(
        &fixture("read-only"),
        &[
            "--method",
            "resources/read",
            "--uri",
            "docs://manual/current",
        ],
    );
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Acceptance instructions"),
        "{read}"
    );
}

/// server-everything sends `notifications/tools/list_changed` (and asks `roots/list`)
/// without params: the bridge passes them on without the member, never as
/// `"params":null`, which JSON-RPC forbids and which made the Inspector's CLI (a
/// TypeScript SDK host) drop the connection and list nothing.
#[test]
fn the_inspector_cli_lists_server_everything_through_the_bridge() {
    if !peers_wanted(&[INSPECTOR, NODE22, EVERYTHING_JS]) {
        return;
    }
    let mut everything = vec!["--".to_owned()];
    everything.extend(servers::everything_stdio());
    let names = |seen: &Value, list: &str| -> Vec<String> {
        let items = seen[list].as_array().unwrap_or_else(|| panic!("{seen}"));
        let key = if list == "resources" { "uri" } else { "name" };
        items
            .iter()
            .map(|i| i[key].as_str().unwrap().to_owned())
            .collect()
    };
    let tools = inspector(&everything, &["--method", "tools/list"]);
    assert!(
        names(&tools, "tools").iter().any(|n| n == "echo"),
        "{tools}"
    );
    let prompts = inspector(&everything, &["--method", "prompts/list"]);
    assert!(!names(&prompts, "prompts").is_empty(), "{prompts}");
    let resources = inspector(&everything, &["--method", "resources/list"]);
    assert!(!names(&resources, "resources").is_empty(), "{resources}");
}

#[test]
fn stdio_hosts_in_front_of_http_servers_of_every_kind() {
    if !peers_wanted(&[EVERYTHING_JS, PYTHON, FASTMCP, TS_V2]) {
        return;
    }
    // server-everything: legacy Streamable HTTP, and a 2024-11-05 HTTP+SSE endpoint.
    let everything = servers::everything("streamableHttp");
    let seen = ts_host("v1", &["--url", &everything.url("/mcp")]);
    no_error(&seen);
    assert_eq!(seen["echo"], "Echo: hi from ts");
    assert!(
        seen["capabilities"]["resources"]["subscribe"] == true,
        "{seen}"
    );
    let sse = servers::everything("sse");
    let seen = ts_host("v1", &["--url", &sse.url("/sse")]);
    no_error(&seen);
    assert_eq!(seen["echo"], "Echo: hi from ts");
    // The Python SDK server (2026-07-28 over HTTP) to a modern host, and to a legacy
    // one (the server answers initialize too).
    let python = servers::python();
    let seen = ts_host("v2-modern", &["--url", &python.url("/mcp")]);
    no_error(&seen);
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    assert_eq!(seen["echo"], "hi from ts");
    let seen = python_host("auto", &["--url", &python.url("/mcp")]);
    no_error(&seen);
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    // FastMCP and the TypeScript SDK server.
    let fastmcp = servers::fastmcp();
    let seen = python_host("legacy", &["--url", &fastmcp.url("/mcp")]);
    no_error(&seen);
    assert_eq!(seen["serverInfo"]["name"], "capable-fastmcp-peer");
    assert_eq!(seen["echo"], "hi from python");
    let ts = servers::ts();
    let seen = ts_host("v2", &["--url", &ts.url("/mcp")]);
    no_error(&seen);
    assert_eq!(seen["serverInfo"]["name"], "capable-ts-peer");
    assert!(seen["read"]
        .as_str()
        .unwrap()
        .starts_with("Acceptance instructions"));
}

#[test]
fn real_clients_in_front_of_many_servers_with_colliding_names() {
    if !peers_wanted(&[EVERYTHING_JS, PYTHON]) {
        return;
    }
    let command = |cmd: Vec<String>| json!({"command": cmd[0], "args": cmd[1..]});
    let config = json!({"mcpServers": {
        "everything": command(servers::everything_stdio()),
        "python": command(servers::python_stdio()),
        "fixture": command(common::fixture("no-resources")),
    }});
    let file = common::TempFile::new("bridge-clients-many.json", &config.to_string());
    // A legacy host and a 2026-07-28 one, each calling one server's own echo.
    let (seen, _) = bridge_support::host(
        "node",
        &["tests/peers/ts_client.mjs", "v1", "--echo", "python__echo"],
        &["--config", file.path()],
    );
    no_error(&seen);
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for echo in ["everything__echo", "python__echo", "fixture__echo"] {
        assert!(tools.contains(&echo), "{echo}: {tools:?}");
    }
    // Every merged name keeps to the function-name rule hosts apply to tools.
    let rule = |n: &str| {
        (1..=64).contains(&n.len())
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    assert!(tools.iter().all(|n| rule(n)), "{tools:?}");
    assert_eq!(seen["echo"], "hi from ts", "{seen}");
    let (seen, _) = bridge_support::host(
        "node",
        &[
            "tests/peers/ts_client.mjs",
            "v2-modern",
            "--echo",
            "everything__echo",
        ],
        &["--config", file.path()],
    );
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    assert_eq!(seen["echo"], "Echo: hi from ts", "{seen}");
    // The Python SDK's client lists the same names and calls one.
    let python = servers::path(servers::PYTHON);
    let (seen, _) = bridge_support::host(
        &python,
        &[
            "tests/peers/py_client.py",
            "auto",
            "--echo",
            "fixture__echo",
        ],
        &["--config", file.path()],
    );
    no_error(&seen);
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    // (What a server offers follows what the host declared: not the TypeScript list.)
    for echo in ["everything__echo", "python__echo", "fixture__echo"] {
        assert!(names.contains(&echo), "{echo}: {names:?}");
    }
    assert!(names.iter().all(|n| rule(n)), "{names:?}");
    assert_eq!(seen["echo"], "hi from python", "{seen}");
}
