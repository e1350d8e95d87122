//! End-to-end tests of the real `capable` binary's usage errors: bad tool arguments,
//! an unknown subcommand and no server at all each exit with code 2, saying what is
//! wrong.

mod common;

use std::time::Duration;

use common::{capable, capable_with, fixture};

const MANUAL: &str = "docs://manual/current";
const T: Duration = Duration::from_secs(20);

#[test]
fn invalid_tool_arguments_are_a_usage_error() {
    let run = capable_with(
        &["tools", "call", "echo", "--args", "{not json"],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(2);
    assert!(run.stderr.contains("--args"), "{}", run.stderr);

    let run = capable_with(
        &["tools", "call", "echo", "--args", "[1,2]"],
        &fixture("slow-progress"),
        T,
    );
    run.expect_code(2);
    assert!(run.stderr.contains("JSON object"), "{}", run.stderr);
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let run = capable(&["frobnicate"], T);
    run.expect_code(2);
    assert!(run.stderr.contains("frobnicate"), "{}", run.stderr);
}

#[test]
fn no_server_is_a_usage_error_that_says_how() {
    let run = capable(&["read", MANUAL], T);
    run.expect_code(2);
    assert!(run.stderr.contains("--"), "{}", run.stderr);
    assert!(run.stderr.contains("--server"), "{}", run.stderr);

    let run = capable(&["inspect", "--json"], T);
    run.expect_code(2);
    assert_eq!(run.json()["error"]["kind"], "usage");
}
