//! `capable ui` over plain HTTP (no browser): a stdio server that dies at start shows
//! why — the line of its stderr that names the error (the fifth of Node's fourteen) in
//! its reason, as `cause`, and its whole bounded stderr for the Stderr tab.

#[path = "dying_server/mod.rs"]
mod dying_server;
mod ui_support;

use std::time::Duration;

use dying_server::{dying_server, CAUSE, NODE_TRACE};
use serde_json::json;
use ui_support::Ui;

#[test]
fn a_server_that_died_at_start_shows_its_error_and_its_stderr() {
    let [shell, flag, script]: [String; 3] = dying_server().try_into().unwrap();
    let ui = Ui::with_config(&json!({"mcpServers": {
        "node": {"command": shell, "args": [flag, script]},
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
