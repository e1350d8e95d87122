//! A server's form asked at a terminal, end to end: `capable tools call confirm`
//! against the fixture's elicitation, in a real pseudo-terminal (util-linux
//! `script`), the person's answers typed ahead. The choices of an enum and of a
//! multiple select are listed by number; what is not one of them (`seat9`), an
//! email address that is none (`not-an-email`) and a required field left empty are
//! asked again, never sent; what is sent is what the schema allows.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, collect, workspace, CacheDir};

/// `'text'` for the shell.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[test]
fn the_terminal_lists_choices_and_asks_again_for_what_the_schema_refuses() {
    let command = [
        bin(),
        "tools",
        "call",
        "confirm",
        "--",
        bin(),
        "fixture",
        "--profile",
        "elicit",
    ]
    .map(quoted)
    .join(" ");
    let cache = CacheDir::new();
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(workspace())
        .env("XDG_CACHE_HOME", &cache.0)
        .env_remove("CAPABLE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux script runs a command in a pseudo-terminal");
    // The fields in the schema's order: approve, note, checks, channel, contact.
    let typed = [
        "",               // approve: its default (true)
        "",               // note: its default
        "1, lint",        // checks: `lint` is not a choice …
        "2",              // … the second is
        "seat9",          // channel: not a choice …
        "1",              // … the first is
        "not-an-email",   // contact: not an email address …
        "me@example.org", // … this is
        "y",              // send
    ];
    // Kept open until the run ends: an early end of input would cancel the form.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(format!("{}\n", typed.join("\n")).as_bytes())
        .expect("typed ahead");
    let run = collect(child, command, Duration::from_secs(30));
    drop(stdin);
    run.expect_code(0);
    let out = &run.stdout;
    for shown in [
        "1) Unit tests (\"unit\")",
        "2) Browser tests (\"browser\")",
        "Checks run (any of the above, comma-separated)",
        "1) Stable release (\"stable\")",
        "Channel (one of the above)",
        "\"lint\" is not one of the choices; type its number; try again",
        "\"seat9\" is not one of the choices; type its number; try again",
        "Contact (string email)",
        "not an email address; try again",
    ] {
        assert!(out.contains(shown), "the terminal shows {shown:?}:\n{out}");
    }
    assert!(
        out.contains(
            r#"confirmed: action=accept content={"approve":true,"note":"looks good","checks":["browser"],"channel":"stable","contact":"me@example.org"}"#
        ),
        "only what the schema allows is sent:\n{out}"
    );
}
