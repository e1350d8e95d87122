//! What each profile answers to the requests the engine lets through. The engine has
//! gated them already: every method here is one the profile declared, so a profile
//! that declares no resources never sees a read. What is left to a profile is its
//! content, and its lies (`lying-subscribe` declares `subscribe` and answers -32601).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capable_core::internal::jsonrpc::{codes, RequestId};
use capable_core::internal::server::{ClientRequest, ServerMethod};
use capable_core::Method;
use serde_json::{json, Value};

use super::{
    app, conformance, lifecycle, skills, survey, tasks, Fixture, Profile, ARCHIVE, HOSTILE_CLEAR,
    HOSTILE_TITLE, MANUAL,
};

/// The form the `confirm` tool asks for: a boolean and a string with defaults, a
/// titled multiple select, a legacy enum with `enumNames` and an email address.
fn confirm_request() -> Value {
    json!({
        "mode": "form",
        "message": "Confirm the acceptance run?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve", "default": true},
                "note": {"type": "string", "title": "Note", "default": "looks good"},
                "checks": {
                    "type": "array",
                    "title": "Checks run",
                    "items": {"anyOf": [
                        {"const": "unit", "title": "Unit tests"},
                        {"const": "browser", "title": "Browser tests"}
                    ]}
                },
                "channel": {
                    "type": "string",
                    "title": "Channel",
                    "enum": ["stable", "beta"],
                    "enumNames": ["Stable release", "Beta release"]
                },
                "contact": {"type": "string", "title": "Contact", "format": "email"}
            },
            "required": ["approve"]
        }
    })
}

/// What `confirm` says the client answered.
pub(super) fn confirm_text(answer: &Value) -> String {
    format!(
        "confirmed: action={} content={}",
        answer.get("action").and_then(Value::as_str).unwrap_or("?"),
        answer.get("content").cloned().unwrap_or(Value::Null)
    )
}

/// The resource templates the profiles with resources serve: none, or — with
/// `CAPABLE_FIXTURE_TEMPLATE_DESCRIPTION` set — `docs://manual/{version}` described so,
/// a template that changes between two starts for the pinned-definition tests.
pub(super) fn templates() -> Vec<Value> {
    match std::env::var("CAPABLE_FIXTURE_TEMPLATE_DESCRIPTION") {
        Ok(description) => vec![json!({
            "uriTemplate": "docs://manual/{version}",
            "name": "manual",
            "description": description,
            "mimeType": "text/plain"
        })],
        Err(_) => Vec::new(),
    }
}

/// The tools most profiles serve: `echo` and `confirm`. `echo`'s description is
/// `CAPABLE_FIXTURE_ECHO_DESCRIPTION` when set: a server whose tool changes between
/// two starts, for the pinned-definition tests.
pub(super) fn tools() -> Vec<Value> {
    let echo = std::env::var("CAPABLE_FIXTURE_ECHO_DESCRIPTION")
        .unwrap_or_else(|_| "Echoes its message.".to_owned());
    vec![
        json!({
            "name": "echo",
            "description": echo,
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
        }),
        json!({
            "name": "confirm",
            "description": "Asks the user to confirm the acceptance run (elicitation).",
            "inputSchema": {"type": "object", "properties": {}}
        }),
    ]
}

/// A list or read as the era has it: a 2026-07-28 one says it stays fresh for a
/// second.
pub(super) fn fresh_for_a_second(mut v: Value, modern: bool) -> Value {
    if modern {
        v["resultType"] = json!("complete");
        v["ttlMs"] = json!(1000);
        v["cacheScope"] = json!("public");
    }
    v
}

/// Answers one request the engine handed over.
pub(super) fn serve(f: &Arc<Fixture>, request: ClientRequest) {
    if f.profile == Profile::Conformance {
        return conformance::serve(f, request);
    }
    let params: Value = request.params.decode_or_default().unwrap_or(Value::Null);
    let (id, method) = (request.id, request.method);
    if lifecycle::handle(f, &id, method.as_str(), &params)
        || app::handle(f, &id, method.as_str(), &params)
        || survey::handle(f, &id, method.as_str(), &params)
        || (matches!(f.profile, Profile::Tasks | Profile::ModernTasks)
            && tasks::handle(f, &id, method, &params))
    {
        return;
    }
    let modern = f.modern();
    // 2026-07-28 lists and reads say how long they stay fresh.
    let cacheable = |v: Value| fresh_for_a_second(v, modern);
    let uri = || params.get("uri").and_then(Value::as_str).unwrap_or("");
    match method {
        Method::ListResources => f.result(
            &id,
            &cacheable(json!({"resources": [
                {"uri": MANUAL, "name": "current", "title": "Current acceptance instructions", "mimeType": "text/plain"},
                {"uri": ARCHIVE, "name": "archive", "mimeType": "text/plain"}
            ]})),
        ),
        Method::ListResourceTemplates => {
            f.result(&id, &cacheable(json!({"resourceTemplates": templates()})))
        }
        Method::ReadResource => read(f, &id, uri(), cacheable),
        Method::Subscribe | Method::Unsubscribe
            if matches!(f.profile, Profile::Subscribe | Profile::ElicitSubscribe) =>
        {
            f.result(&id, &json!({}));
            if method == Method::Subscribe {
                f.start_updates();
            }
        }
        Method::ListSkills => f.result(&id, &cacheable(skills::list())),
        Method::GetSkill => match skills::get(uri()) {
            Some(found) => f.result(&id, &cacheable(found)),
            None => f.error(&id, codes::INVALID_PARAMS, "Skill not found", Some(json!({"uri": uri()}))),
        },
        Method::ListTools if f.profile == Profile::BadSchema => f.result(
            &id,
            &json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
                {"name": "broken", "inputSchema": {"type": "object", "properties": {"n": {"type": "nonsense"}}}},
                {"name": "scalar", "inputSchema": {"type": "string"}}
            ]}),
        ),
        Method::ListTools if f.profile == Profile::Hostile => f.result(
            &id,
            &json!({"tools": [{
                "name": format!("echo{HOSTILE_TITLE}"),
                "description": "\u{202e}txet desrever",
                "inputSchema": {"type": "object"}
            }]}),
        ),
        Method::ListTools => f.result(&id, &cacheable(json!({"tools": tools()}))),
        Method::CallTool if params.get("name").and_then(Value::as_str) == Some("confirm") => {
            confirm(f, id, &params, modern)
        }
        Method::CallTool if params.get("name").and_then(Value::as_str) == Some("echo") => {
            echo(f, &id, &params, modern)
        }
        // As the SDKs' servers answer a name they do not serve: the tool's own failure,
        // not a JSON-RPC error.
        Method::CallTool => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            let mut result = json!({"content": [{"type": "text", "text": format!("Tool {name} not found")}], "isError": true});
            if modern {
                result["resultType"] = json!("complete");
            }
            f.result(&id, &result)
        }
        _ => f.error(&id, codes::METHOD_NOT_FOUND, "Method not found", Some(json!(method.as_str()))),
    }
}

/// A document, the way each profile serves (or breaks) reads.
fn read(f: &Fixture, id: &RequestId, uri: &str, cacheable: impl Fn(Value) -> Value) {
    match f.profile {
        Profile::Crash => {
            eprintln!("capable fixture: crashing as asked");
            std::process::exit(3);
        }
        Profile::Hang => return,
        Profile::Hostile => return f.error(id, codes::INTERNAL_ERROR, HOSTILE_CLEAR, None),
        Profile::Garbage => f.write(b"this is not JSON\n"),
        Profile::UnknownId => f.write(b"{\"jsonrpc\":\"2.0\",\"id\":987654,\"result\":{}}\n"),
        Profile::Huge => {
            let text = "x".repeat(32 * 1024 * 1024);
            return f.result(
                id,
                &json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}),
            );
        }
        _ => {}
    }
    let skill = (f.profile == Profile::Skills)
        .then(|| skills::contents(uri))
        .flatten();
    match skill.or_else(|| contents(f, uri)) {
        Some(c) => f.result(id, &cacheable(json!({"contents": [c]}))),
        None if f.modern() => f.error(
            id,
            codes::INVALID_PARAMS,
            "Resource not found",
            Some(json!({"uri": uri})),
        ),
        None => f.error(
            id,
            codes::RESOURCE_NOT_FOUND,
            "Resource not found",
            Some(json!({"uri": uri})),
        ),
    }
}

fn contents(f: &Fixture, uri: &str) -> Option<Value> {
    match uri {
        MANUAL => {
            let mut c = json!({"uri": MANUAL, "mimeType": "text/plain", "text": f.text()});
            if f.profile == Profile::Subscribe {
                // This profile marks its revisions itself.
                let rev = f.revision.load(Ordering::SeqCst);
                c["annotations"] =
                    json!({"lastModified": format!("2026-01-01T00:00:{:02}Z", rev % 60)});
            }
            Some(c)
        }
        ARCHIVE => {
            Some(json!({"uri": ARCHIVE, "mimeType": "text/plain", "text": "Earlier instructions."}))
        }
        _ => None,
    }
}

/// `echo`: its message back (said on stderr too, as servers log what they do: a host
/// can follow it); `slow-progress` takes its time, with progress when asked. In any
/// profile, argument `progressSteps` (at most 50) makes it a long call: that many
/// progress notifications 200 ms apart when the call asks for progress.
fn echo(f: &Fixture, id: &RequestId, params: &Value, modern: bool) {
    let message = params
        .pointer("/arguments/message")
        .and_then(Value::as_str)
        .unwrap_or("");
    eprintln!("capable fixture: echo {message}");
    let steps = params
        .pointer("/arguments/progressSteps")
        .and_then(Value::as_u64)
        .map_or(0, |n| n.min(50) as u32);
    if steps > 0 && params.pointer("/_meta/progressToken").is_some() {
        for step in 1..=steps {
            std::thread::sleep(Duration::from_millis(200));
            let total = Some(f64::from(steps));
            let (_, bytes) = f.engine(|s, out| s.progress(id, f64::from(step), total, None, out));
            f.write(&bytes);
        }
    } else if f.profile == Profile::SlowProgress {
        if params.pointer("/_meta/progressToken").is_some() {
            for step in 1..=7 {
                std::thread::sleep(Duration::from_millis(200));
                let (_, bytes) =
                    f.engine(|s, out| s.progress(id, f64::from(step), Some(7.0), None, out));
                f.write(&bytes);
            }
        } else {
            std::thread::sleep(Duration::from_millis(1500));
        }
    }
    let mut result = json!({"content": [{"type": "text", "text": message}]});
    if modern {
        result["resultType"] = json!("complete");
    }
    // The trace context the call came with, said back (a bridge's tests read what it
    // passed on).
    if let Some(parent) = params.pointer("/_meta/traceparent") {
        result["_meta"] = json!({"capable.fixture/traceparent": parent});
    }
    f.result(id, &result);
}

/// `confirm`: asks the client to confirm, as each era asks — a legacy client with an
/// `elicitation/create` request (its answer completes the call, see
/// `Fixture::answer_elicitation`), a 2026-07-28 client with an `input_required` result
/// whose retry carries the answer. With argument `giveUpAfterMs` a legacy client's
/// question is cancelled (`notifications/cancelled`) unanswered after that long, and
/// the call says so.
fn confirm(f: &Arc<Fixture>, id: RequestId, params: &Value, modern: bool) {
    if modern {
        let declared = params
            .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/elicitation")
            .is_some();
        if !declared {
            return f.error(
                &id,
                codes::MISSING_CLIENT_CAPABILITY,
                "confirm needs the elicitation client capability",
                Some(json!({"requiredCapabilities": {"elicitation": {}}})),
            );
        }
        return match (params.pointer("/inputResponses/confirm"), params.get("requestState")) {
            (Some(answer), Some(state)) if state == "confirm-1" => f.result(
                &id,
                &json!({"resultType": "complete", "content": [{"type": "text", "text": confirm_text(answer)}]}),
            ),
            _ => f.result(
                &id,
                &json!({
                    "resultType": "input_required",
                    "inputRequests": {"confirm": {"method": "elicitation/create", "params": confirm_request()}},
                    "requestState": "confirm-1"
                }),
            ),
        };
    }
    let give_up = params
        .pointer("/arguments/giveUpAfterMs")
        .and_then(Value::as_u64)
        .map(Duration::from_millis);
    let asked = f.engine(|s, out| {
        s.request(
            ServerMethod::Elicit,
            &confirm_request(),
            give_up,
            id.clone(),
            Instant::now(),
            out,
        )
        .map_err(|(why, _)| why)
    });
    match asked {
        (Ok(_), bytes) => {
            f.write(&bytes);
            if let Some(after) = give_up {
                let f = f.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(after);
                    let (expired, bytes) = f.engine(|s, out| s.handle_timeout(Instant::now(), out));
                    f.write(&bytes);
                    let gave_up = json!({"content": [{"type": "text", "text": "no answer in time: the question was withdrawn"}], "isError": true});
                    for call in expired {
                        f.result(&call.waiter, &gave_up);
                    }
                });
            }
        }
        (Err(_), _) => f.result(
            &id,
            &json!({"content": [{"type": "text", "text": "this client cannot be asked for input"}], "isError": true}),
        ),
    }
}
