//! `capable ui` over plain HTTP (no browser): a stdio server that dies at start shows
//! why — the line of its stderr that names the error (the fifth of Node's fourteen) in
//! its reason, as `cause`, and its whole bounded stderr for the Stderr tab.

mod ui_support;

use std::time::Duration;

use serde_json::json;
use ui_support::Ui;

const NODE_TRACE: &str = "node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/srv/mcp/dist/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:174:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.11.0";

const CAUSE: &str = "Error: Cannot find module '/srv/mcp/dist/index.js'";

#[test]
fn a_server_that_died_at_start_shows_its_error_and_its_stderr() {
    let script = format!("cat >&2 <<'EOF'\n{NODE_TRACE}\nEOF\nexit 1");
    let ui = Ui::with_config(&json!({"mcpServers": {
        "node": {"command": "/bin/sh", "args": ["-c", script]},
    }}));
    let cookie = ui.cookie();
    let servers = ui.settled(&cookie, Duration::from_secs(10));
    let s = &servers[0];
    assert_eq!(s["state"], "failed", "{s}");
    assert_eq!(s["cause"], CAUSE, "{s}");
    let reason = s["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(CAUSE), "{reason}");
    // The Stderr tab: all fourteen lines, the first and the last included.
    assert_eq!(s["stderr"], NODE_TRACE, "{s}");
}
