//! The way docs/bridge.md puts the bridge behind another host's CLI, run as written:
//! the MCP Inspector's CLI (on Node 22) with its flags first and the server's command
//! after `--` — `inspector --cli --method tools/call --tool-name echo --tool-arg
//! message=hi -- capable bridge -- CMD` — the bridge's own `--` passed through to it.
//!
//! Without `.peers` this test fails, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip it instead.

mod common;

use common::peers_wanted;
use common::servers::path;
use serde_json::Value;

const INSPECTOR: &str =
    ".peers/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js";
const NODE22: &str = ".peers/node22/node_modules/.bin/node";

#[test]
fn the_inspector_cli_runs_the_bridge_as_its_command() {
    if !peers_wanted(&[INSPECTOR, NODE22]) {
        return;
    }
    let mut args = vec![
        path(INSPECTOR),
        "--cli".into(),
        "--method".into(),
        "tools/call".into(),
        "--tool-name".into(),
        "echo".into(),
        "--tool-arg".into(),
        "message=hi".into(),
        "--".into(),
        common::bin().into(),
        "bridge".into(),
        "--".into(),
    ];
    args.extend(common::fixture("modern"));
    let out = std::process::Command::new(path(NODE22))
        .args(&args)
        .current_dir(common::workspace())
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("run the inspector");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "the inspector printed no JSON ({e})\n--- stdout\n{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(result["content"][0]["text"], "hi", "{result:#}");
}
