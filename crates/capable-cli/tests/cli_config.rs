//! End-to-end tests of a server named with `--server` from a config file: an
//! `mcpServers` config, a VS Code `servers` config, and an unknown name, which lists the
//! known ones.

mod common;

use std::time::Duration;

use common::{capable, TempFile};
use serde_json::{json, Value};

const MANUAL: &str = "docs://manual/current";
const T: Duration = Duration::from_secs(20);

fn entry() -> Value {
    json!({"command": common::bin(), "args": ["fixture", "--profile", "read-only"]})
}

#[test]
fn a_server_from_an_mcp_servers_config() {
    let config = TempFile::new(
        "mcpServers.json",
        &json!({"mcpServers": {"fx": entry()}}).to_string(),
    );
    let run = capable(
        &[
            "read",
            "--json",
            "--server",
            "fx",
            "--config",
            config.path(),
            MANUAL,
        ],
        T,
    );
    run.expect_code(0);
    let text = run.json()["contents"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(text.contains("Acceptance instructions"), "{text}");
}

#[test]
fn a_server_from_a_vscode_config() {
    let mut e = entry();
    e["type"] = json!("stdio");
    let config = TempFile::new("vscode.json", &json!({"servers": {"fx": e}}).to_string());
    let run = capable(
        &[
            "inspect",
            "--json",
            "--server",
            "fx",
            "--config",
            config.path(),
        ],
        T,
    );
    run.expect_code(0);
    assert_eq!(
        run.json()["serverInfo"]["name"],
        "capable-fixture/read-only"
    );
}

#[test]
fn an_unknown_server_name_lists_the_known_ones() {
    let config = TempFile::new(
        "unknown.json",
        &json!({"mcpServers": {"fx": entry(), "other": entry()}}).to_string(),
    );
    let run = capable(
        &[
            "read",
            "--server",
            "nope",
            "--config",
            config.path(),
            MANUAL,
        ],
        T,
    );
    run.expect_code(2);
    for name in ["nope", "fx", "other"] {
        assert!(
            run.stderr.contains(name),
            "should name {name}: {}",
            run.stderr
        );
    }
}
