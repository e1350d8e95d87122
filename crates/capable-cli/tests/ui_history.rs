//! `capable ui` over plain HTTP (no browser): the history says how each call ended at
//! the server, not how capable's own API answered — a tool that reports its own
//! failure (`isError: true`) is a `tool_error`, as the CLI's exit code 9 says, though
//! the page's request got HTTP 200 with the result.

mod ui_support;

use std::time::Duration;

use serde_json::{json, Value};
use ui_support::{bin, Ui};

#[test]
fn the_history_says_tool_error_for_a_tool_that_failed() {
    let ui = Ui::start(&["--", bin(), "fixture", "--profile", "no-resources"]);
    let cookie = ui.cookie();
    let servers = ui.settled(&cookie, Duration::from_secs(10));
    assert_eq!(servers[0]["state"], "ready", "{servers}");

    let failed = ui.post(
        &cookie,
        "/api/call",
        &json!({"server": "capable", "tool": "nope", "arguments": {}}),
    );
    assert_eq!(failed.status, 200, "{failed:?}");
    assert_eq!(failed.json()["result"]["isError"], true);
    let fine = ui.post(
        &cookie,
        "/api/call",
        &json!({"server": "capable", "tool": "echo", "arguments": {"message": "hi"}}),
    );
    assert_eq!(fine.status, 200, "{fine:?}");

    let history = ui.api_get(&cookie, "/api/history?server=capable").json();
    let calls: Vec<(&str, &str, bool)> = history
        .as_array()
        .expect("an array of entries")
        .iter()
        .filter(|e| e["method"] == "tools/call")
        .map(|e| {
            (
                e["body"]["tool"].as_str().unwrap_or_default(),
                e["outcome"].as_str().unwrap_or_default(),
                e["ok"] == Value::Bool(true),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [("nope", "tool_error", false), ("echo", "result", true)],
        "{history}"
    );
}
