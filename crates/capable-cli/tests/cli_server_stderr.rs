//! End-to-end tests of a stdio server that dies at start: the line of its stderr that
//! names the error — here the fifth of Node's fourteen — is shown by `capable servers`
//! (text and `--json`) and in the error of a command given the server after `--`, not
//! only the last lines of its stderr.

mod common;
#[path = "dying_server/mod.rs"]
mod dying_server;

use std::time::Duration;

use common::{capable, capable_with, TempFile};
use dying_server::{dying_server, CAUSE};
use serde_json::json;

const T: Duration = Duration::from_secs(30);

#[test]
fn servers_shows_the_line_that_names_the_error_of_a_server_that_died_at_start() {
    let server = dying_server();
    let file = TempFile::new(
        "dying.json",
        &json!({"mcpServers": {"node": {"command": server[0], "args": server[1..]}}}).to_string(),
    );
    let json = capable(
        &[
            "servers",
            "--json",
            "--timeout",
            "10s",
            "--config",
            file.path(),
        ],
        T,
    );
    json.expect_code(3);
    let rows = json.json();
    let row = &rows[0];
    assert_eq!(row["state"], "failed", "{row}");
    assert_eq!(row["error"]["kind"], "server_exited", "{row}");
    assert_eq!(row["error"]["cause"], CAUSE, "{row}");
    let message = row["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(CAUSE), "{message}");

    let text = capable(&["servers", "--timeout", "10s", "--config", file.path()], T);
    text.expect_code(3);
    let line = text
        .stdout
        .lines()
        .find(|l| l.starts_with("node "))
        .unwrap_or_else(|| panic!("no row for node:\n{}", text.stdout));
    assert!(line.contains(CAUSE), "{line}");
}

#[test]
fn a_failed_connect_names_the_error_the_server_wrote() {
    let run = capable_with(&["tools", "--timeout", "10s"], &dying_server(), T);
    run.expect_code(3);
    assert!(run.stderr.contains(CAUSE), "{}", run.stderr);
    // Its last lines are there too, as before.
    assert!(run.stderr.contains("Node.js v20.11.0"), "{}", run.stderr);
}
