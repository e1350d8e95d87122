//! End-to-end tests of how `capable tools call` ends when the tool reports its own
//! failure (`isError: true`, as SDK servers answer a tool they do not serve): exit 9,
//! kind `tool_error`, the same for one server and for `SERVER/TOOL` across a config —
//! and the result is still the output, as text or as `--json`.

mod common;

use std::time::Duration;

use common::{bin, capable, capable_with, fixture, TempFile};
use serde_json::json;

const T: Duration = Duration::from_secs(30);

#[test]
fn a_tool_error_exits_9_and_its_result_is_still_printed() {
    let run = capable_with(&["tools", "call", "nope"], &fixture("no-resources"), T);
    run.expect_code(9);
    assert_eq!(run.stdout.trim(), "Tool nope not found", "the tool's words");
    assert!(
        run.stderr.contains("the tool nope reported an error"),
        "{}",
        run.stderr
    );

    let json = capable_with(
        &["tools", "call", "--json", "nope"],
        &fixture("no-resources"),
        T,
    );
    json.expect_code(9);
    // One JSON document on stdout: the result as the server gave it, no error object.
    let result = json.json();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["content"][0]["text"], "Tool nope not found");
    assert!(result.get("error").is_none(), "{result}");

    // A tool that succeeds still exits 0.
    let ok = capable_with(
        &["tools", "call", "echo", "--args", r#"{"message":"fine"}"#],
        &fixture("no-resources"),
        T,
    );
    ok.expect_code(0);
    assert_eq!(ok.stdout.trim(), "fine");
}

#[test]
fn a_tool_error_across_a_config_exits_the_same() {
    let server = json!({"command": bin(), "args": ["fixture", "--profile", "modern"]});
    let file = TempFile::new(
        "tool-errors.json",
        &json!({"mcpServers": {"b": server}}).to_string(),
    );
    let run = capable(&["tools", "call", "b/nope", "--config", file.path()], T);
    run.expect_code(9);
    assert_eq!(run.stdout.trim(), "Tool nope not found");

    let json = capable(
        &["tools", "call", "--json", "b/nope", "--config", file.path()],
        T,
    );
    json.expect_code(9);
    assert_eq!(json.json()["isError"], true, "{}", json.stdout);
}
