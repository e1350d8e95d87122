//! `capable tools show NAME`: one tool's arguments in text — type, required,
//! description, choices, default, nested objects indented, `$ref`s into `$defs`
//! followed — as FastMCP and Pydantic write them; `--json` the tool as listed. The
//! fixture's tools take one string, so a scripted HTTP server lists a nested one.

mod common;

use std::time::Duration;

use common::capable;
use common::scripted::{self, Script};
use serde_json::json;

const T: Duration = Duration::from_secs(30);

/// `book_trip(travellers: list[Traveller], cabin: Cabin = "economy", notes: str | None)`
/// as Pydantic writes its schema.
fn book_trip() -> serde_json::Value {
    json!({
        "name": "book_trip",
        "title": "Book a trip",
        "description": "Books a trip.\nEvery traveller needs a seat.",
        "inputSchema": {
            "type": "object",
            "$defs": {
                "Cabin": {"type": "string", "enum": ["economy", "business"]},
                "Traveller": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Full name"},
                        "email": {"type": "string", "format": "email"},
                        "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}
                    },
                    "required": ["name", "email"]
                }
            },
            "properties": {
                "travellers": {"type": "array", "items": {"$ref": "#/$defs/Traveller"}, "description": "Who travels"},
                "cabin": {"$ref": "#/$defs/Cabin", "default": "economy"},
                "notes": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            },
            "required": ["travellers"]
        }
    })
}

#[test]
fn a_tools_arguments_are_shown_nested_and_resolved() {
    let peer = scripted::start(Script {
        tools: vec![
            json!({"name": "ping", "inputSchema": {"type": "object"}}),
            book_trip(),
        ],
        ..Script::default()
    });
    let url = peer.url();
    let run = capable(&["tools", "show", "book_trip", "--url", &url], T);
    run.expect_code(0);
    let out = &run.stdout;
    assert!(
        out.starts_with("tool         book_trip\ntitle        Book a trip\n"),
        "{out}"
    );
    assert!(
        out.contains("description  Books a trip.\n             Every traveller needs a seat.\n"),
        "{out}"
    );
    // One row each, in the schema's order, fields of the traveller indented.
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("argument"))
        .skip(1)
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        names,
        ["travellers", "name", "email", "age", "cabin", "notes"],
        "{out}"
    );
    assert_eq!(
        rows[0],
        ["travellers", "array of object", "yes", "Who travels"]
    );
    assert_eq!(rows[1], ["name", "string", "yes", "Full name"]);
    assert_eq!(rows[2], ["email", "string (email)", "yes"]);
    assert_eq!(rows[3], ["age", "integer or null", "default: null"]);
    assert_eq!(
        rows[4],
        [
            "cabin",
            "string",
            r#"one of: "economy", "business" · default: "economy""#
        ]
    );
    assert_eq!(rows[5], ["notes", "string or null"]);
    assert!(
        out.contains("\n  name "),
        "nested fields are indented: {out}"
    );

    // No arguments, said so; --json is the tool as the server listed it.
    let ping = capable(&["tools", "show", "ping", "--url", &url], T);
    assert!(
        ping.expect_code(0).stdout.ends_with("\nno arguments\n"),
        "{}",
        ping.stdout
    );
    let json = capable(&["--json", "tools", "show", "book_trip", "--url", &url], T);
    assert_eq!(json.expect_code(0).json(), book_trip());
}

#[test]
fn a_tool_the_server_does_not_list_is_named_with_those_it_does() {
    let peer = scripted::start(Script {
        tools: vec![book_trip()],
        ..Script::default()
    });
    let run = capable(&["tools", "show", "book", "--url", &peer.url()], T);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains(r#"the server lists no tool "book": it lists book_trip"#),
        "{}",
        run.stderr
    );
}
