//! The `conformance` profile: what the official MCP conformance suite's server
//! scenarios call, in both eras (one process serves whichever era the client speaks).
//!
//! The suite checks a server against fixed names, so the names here are the suite's:
//!
//! | kind | names |
//! |---|---|
//! | tools with fixed content | `test_simple_text`, `test_image_content`, `test_audio_content`, `test_embedded_resource`, `test_multiple_content_types`, `test_error_handling` (a tool error) |
//! | tools whose schemas are read | see `conformance_schemas.rs` |
//! | tools that take time | `test_tool_with_logging` and `test_logging_tool` (three `info` lines 50 ms apart), `test_tool_with_progress` (0, 50, 100 of 100, 50 ms apart), `test_reconnection` (answers after 100 ms) |
//! | tools that ask the client | see `conformance_asks.rs` |
//! | resources | `test://static-text`, `test://static-binary`, `test://watched-resource` (subscribable), the template `test://template/{id}/data` |
//! | prompts | `test_simple_prompt`, `test_prompt_with_arguments` (`arg1`, `arg2`), `test_prompt_with_embedded_resource` (`resourceUri`), `test_prompt_with_image` |
//!
//! `completion/complete` offers values that start with what was typed, and
//! `logging/setLevel` is acknowledged (the engine keeps the level and filters the tool's
//! log lines by it). A 2026-07-28 answer says it is `complete`, and lists and reads say
//! how long they stay fresh, as that era's caching rules ask.

use std::sync::Arc;
use std::time::Duration;

use capable_core::internal::jsonrpc::{codes, RequestId};
use capable_core::internal::server::ClientRequest;
use capable_core::Era;
use serde_json::{json, Value};

use super::answers::fresh_for_a_second;
use super::{conformance_asks, conformance_input, conformance_schemas, Fixture};

/// A 1×1 PNG, the image every image content carries.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file with no samples, the audio `test_audio_content` returns.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
/// The text of `test://static-text`.
const STATIC_TEXT: &str = "This is the content of the static text resource.";
/// The URI the suite subscribes to.
pub(super) const WATCHED: &str = "test://watched-resource";

/// What the profile declares.
pub(crate) fn capabilities() -> Value {
    json!({
        "tools": {},
        "resources": {"subscribe": true},
        "prompts": {},
        "logging": {},
        "completions": {}
    })
}

/// A tool without arguments.
fn plain(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}})
}

/// A tool with one required string argument.
fn with_string(name: &str, description: &str, arg: &str) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}
    })
}

/// Every tool, as `tools/list` gives them.
fn tools() -> Vec<Value> {
    let mut tools = vec![
        plain("test_simple_text", "Returns a simple text."),
        plain("test_image_content", "Returns an image."),
        plain("test_audio_content", "Returns audio."),
        plain("test_embedded_resource", "Returns an embedded resource."),
        plain(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
        ),
        plain("test_error_handling", "Always fails (a tool error)."),
        plain("test_tool_with_logging", "Logs three lines while it runs."),
        plain("test_tool_with_progress", "Reports progress while it runs."),
        plain("test_reconnection", "Answers after a short while."),
        plain(
            "test_logging_tool",
            "Logs three lines while it runs, to a client that asked for log lines.",
        ),
        with_string(
            "test_sampling",
            "Asks the client's model (sampling).",
            "prompt",
        ),
        with_string(
            "test_elicitation",
            "Asks the user (elicitation).",
            "message",
        ),
    ];
    tools.extend(conformance_schemas::tools());
    tools.extend(conformance_asks::tools());
    tools
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// The content of a tool without side effects, or `None` for another tool.
fn content_of(tool: &str) -> Option<Value> {
    let image = json!({"type": "image", "data": PNG, "mimeType": "image/png"});
    Some(match tool {
        "test_simple_text" => {
            json!({"content": [text("This is a simple text response for testing.")]})
        }
        "test_image_content" => json!({"content": [image]}),
        "test_audio_content" => {
            json!({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]})
        }
        "test_embedded_resource" => json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."
        }}]}),
        "test_multiple_content_types" => json!({"content": [
            text("Multiple content types test:"),
            image,
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json",
                "text": "{\"test\":\"data\",\"value\":123}"
            }}
        ]}),
        "test_error_handling" => json!({
            "isError": true,
            "content": [text("This tool intentionally returns an error for testing")]
        }),
        _ => return None,
    })
}

/// Answers one request the engine let through.
pub(super) fn serve(f: &Arc<Fixture>, request: ClientRequest) {
    let modern = request.version.era() == Era::Modern;
    let params: Value = request.params.decode_or_default().unwrap_or(Value::Null);
    let id = request.id;
    let cacheable = |v: Value| fresh_for_a_second(v, modern);
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    match request.method.as_str() {
        "tools/list" => f.result(&id, &cacheable(json!({"tools": tools()}))),
        "tools/call" => call(f, id, name, &params, modern),
        "resources/list" => f.result(&id, &cacheable(resources())),
        "resources/templates/list" => f.result(
            &id,
            &cacheable(json!({"resourceTemplates": [{
                "uriTemplate": "test://template/{id}/data", "name": "template",
                "description": "Data for an id.", "mimeType": "application/json"
            }]})),
        ),
        "resources/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
            match read(uri) {
                Some(c) => f.result(&id, &cacheable(json!({"contents": [c]}))),
                None => {
                    let code = match modern {
                        true => codes::INVALID_PARAMS,
                        false => codes::RESOURCE_NOT_FOUND,
                    };
                    f.error(&id, code, "Resource not found", Some(json!({"uri": uri})));
                }
            }
        }
        "resources/subscribe" | "resources/unsubscribe" | "logging/setLevel" => {
            f.result(&id, &json!({}))
        }
        "prompts/list" => f.result(&id, &cacheable(prompts())),
        "prompts/get" => match prompt(name, params.get("arguments")) {
            Some(p) => f.result(&id, &complete(p, modern)),
            None if conformance_input::prompt(f, &id, name, &params, modern) => {}
            None => f.error(
                &id,
                codes::INVALID_PARAMS,
                "Unknown prompt",
                Some(json!({"name": name})),
            ),
        },
        "completion/complete" => {
            let typed = params
                .pointer("/argument/value")
                .and_then(Value::as_str)
                .unwrap_or("");
            let values: Vec<&str> = ["paris", "park", "party", "test", "testing"]
                .into_iter()
                .filter(|v| v.starts_with(typed))
                .collect();
            let total = values.len();
            f.result(
                &id,
                &complete(
                    json!({"completion": {"values": values, "total": total, "hasMore": false}}),
                    modern,
                ),
            );
        }
        other => f.error(
            &id,
            codes::METHOD_NOT_FOUND,
            "Method not found",
            Some(json!(other)),
        ),
    }
}

/// A result as the era has it: 2026-07-28 says it is complete.
pub(super) fn complete(mut v: Value, modern: bool) -> Value {
    if modern {
        v["resultType"] = json!("complete");
    }
    v
}

/// `tools/call`.
fn call(f: &Arc<Fixture>, id: RequestId, name: &str, params: &Value, modern: bool) {
    let args = params.get("arguments").unwrap_or(&Value::Null);
    if let Some(result) = content_of(name).or_else(|| conformance_schemas::call(name, args)) {
        return f.result(&id, &complete(result, modern));
    }
    match name {
        // The engine gives a 2026-07-28 request the lines at or above the level its
        // `_meta` asked for, and none when it asked for none.
        "test_tool_with_logging" | "test_logging_tool" => in_three_steps(f, id, modern, true),
        "test_tool_with_progress" => in_three_steps(f, id, modern, false),
        "test_reconnection" => {
            let f = f.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                let done = json!({"content": [text("Reconnection test completed.")]});
                f.result(&id, &complete(done, modern));
            });
        }
        _ if conformance_input::call(f, &id, name, params, modern) => {}
        _ => f.error(
            &id,
            codes::INVALID_PARAMS,
            "Unknown tool",
            Some(json!({"name": name})),
        ),
    }
}

/// Works in three steps 50 ms apart, on a thread of its own (the reader goes on
/// reading): each step logs a line at `info` when `logs`, and sends progress 0, 50 and
/// 100 of 100 when the call asked for progress; then answers the call.
fn in_three_steps(f: &Arc<Fixture>, id: RequestId, modern: bool, logs: bool) {
    const LINES: [&str; 3] = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    let f = f.clone();
    std::thread::spawn(move || {
        for (n, line) in LINES.into_iter().enumerate() {
            if n > 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            if logs {
                let params = json!({"level": "info", "logger": "conformance", "data": line});
                f.notify("notifications/message", &params);
            }
            let progress = 50.0 * n as f64;
            let (_, bytes) = f.engine(|s, out| s.progress(&id, progress, Some(100.0), None, out));
            f.write(&bytes);
        }
        let done = json!({"content": [text("Tool execution completed.")]});
        f.result(&id, &complete(done, modern));
    });
}

fn resources() -> Value {
    json!({"resources": [
        {"uri": "test://static-text", "name": "static-text", "description": "A static text.", "mimeType": "text/plain"},
        {"uri": "test://static-binary", "name": "static-binary", "description": "A static image.", "mimeType": "image/png"},
        {"uri": WATCHED, "name": "watched-resource", "description": "A resource to subscribe to.", "mimeType": "text/plain"}
    ]})
}

/// The contents of `uri`, or `None` when there is no such resource.
fn read(uri: &str) -> Option<Value> {
    match uri {
        "test://static-text" => {
            Some(json!({"uri": uri, "mimeType": "text/plain", "text": STATIC_TEXT}))
        }
        "test://static-binary" => Some(json!({"uri": uri, "mimeType": "image/png", "blob": PNG})),
        WATCHED => Some(json!({"uri": uri, "mimeType": "text/plain", "text": "Watched content."})),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Some(json!({"uri": uri, "mimeType": "application/json", "text": data.to_string()}))
        }
    }
}

fn prompts() -> Value {
    let arg = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
    json!({"prompts": [
        {"name": "test_simple_prompt", "description": "A prompt without arguments."},
        {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments.",
         "arguments": [arg("arg1", "First test argument"), arg("arg2", "Second test argument")]},
        {"name": "test_prompt_with_embedded_resource", "description": "A prompt that embeds a resource.",
         "arguments": [arg("resourceUri", "URI of the resource to embed")]},
        {"name": "test_prompt_with_image", "description": "A prompt with an image."},
        conformance_asks::prompt_entry()
    ]})
}

/// The messages of prompt `name`, or `None` for another prompt.
fn prompt(name: &str, args: Option<&Value>) -> Option<Value> {
    let arg = |key: &str| {
        args.and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match name {
        "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => vec![user(text(&format!(
            "Prompt with arguments: arg1='{}', arg2='{}'",
            arg("arg1"),
            arg("arg2")
        )))],
        "test_prompt_with_embedded_resource" => vec![
            user(json!({"type": "resource", "resource": {
                "uri": arg("resourceUri"), "mimeType": "text/plain",
                "text": "Embedded resource content for testing."
            }})),
            user(text("Please process the embedded resource above.")),
        ],
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            user(text("Please analyze the image above.")),
        ],
        _ => return None,
    };
    Some(json!({"messages": messages}))
}
