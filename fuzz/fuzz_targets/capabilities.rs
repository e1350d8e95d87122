//! Initialize results and `server/discover` results declaring any capabilities (JSON
//! generated from the bytes, or the bytes as they are), answered with any version:
//! reading them never panics, and the gating table allows exactly what a table written
//! from the specification allows — a method is allowed only when its capability's key
//! is present (and its flag literally `true` where one is needed), in its era. A ready
//! connection writes a request only when the table allows it, and nothing otherwise.

#![no_main]

use arbitrary::{Result, Unstructured};
use capable_core::internal::gating::{self, ListenFilter};
use capable_core::{
    Incoming, Method, Negotiating, ProtocolChoice, ProtocolVersion, ServerCapabilities, Step,
    Timing,
};
use capable_fuzz::{config, first_answer, t0, written};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

const KEYS: [&str; 18] = [
    "resources",
    "tools",
    "prompts",
    "logging",
    "completions",
    "subscribe",
    "listChanged",
    "experimental",
    "tasks",
    "extensions",
    "elicitation",
    "",
    "list",
    "cancel",
    "requests",
    "call",
    "io.modelcontextprotocol/tasks",
    "io.modelcontextprotocol/skills",
];

/// A JSON value that likes capability-shaped objects.
fn json(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let pick = if depth >= 4 {
        u.int_in_range(0..=4)?
    } else {
        u.int_in_range(0..=7)?
    };
    Ok(match pick {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.arbitrary::<i32>()?),
        3 => Value::String(u.arbitrary()?),
        4 => Value::Bool(true),
        5 => Value::Array(
            (0..u.int_in_range(0..=3)?)
                .map(|_| json(u, depth + 1))
                .collect::<Result<_>>()?,
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=6)? {
                let key = match u.ratio(7, 8)? {
                    true => (*u.choose(&KEYS)?).to_owned(),
                    false => u.arbitrary()?,
                };
                map.insert(key, json(u, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}

/// The specification's table, read from the declaration itself.
fn allowed(method: Method, version: ProtocolVersion, caps: &Value) -> bool {
    use Method as M;
    let modern = version == ProtocolVersion::V2026_07_28;
    let has = |key: &str| caps.as_object().is_some_and(|o| o.contains_key(key));
    let flag = |key: &str, flag: &str| has(key) && caps[key][flag] == Value::Bool(true);
    let member = |key: &str, member: &str| caps.get(key).and_then(|v| v.get(member)).is_some();
    let extension = |name: &str| {
        caps.get("extensions")
            .and_then(Value::as_object)
            .is_some_and(|o| o.contains_key(&format!("io.modelcontextprotocol/{name}")))
    };
    let core_tasks = version == ProtocolVersion::V2025_11_25;
    match method {
        M::Initialize | M::Ping => !modern,
        M::Discover => modern,
        M::ListResources | M::ListResourceTemplates | M::ReadResource => has("resources"),
        M::Subscribe | M::Unsubscribe => !modern && flag("resources", "subscribe"),
        M::Listen => modern,
        M::ListTools | M::CallTool => has("tools"),
        M::ListPrompts | M::GetPrompt => has("prompts"),
        M::SetLoggingLevel => !modern && has("logging"),
        // 2024-11-05 defines no way to announce completions.
        M::Complete => version == ProtocolVersion::V2024_11_05 || has("completions"),
        // Modern tasks: the extension, declared under `extensions` (presence by key).
        M::GetTask | M::CancelTask | M::UpdateTask if modern => extension("tasks"),
        // 2025-11-25 tasks: the `tasks` capability, or its member (presence by key).
        M::GetTask | M::TaskResult => core_tasks && has("tasks"),
        M::ListTasks => core_tasks && member("tasks", "list"),
        M::CancelTask => core_tasks && member("tasks", "cancel"),
        M::UpdateTask => false,
        M::ListSkills | M::GetSkill => extension("skills"),
    }
}

fn listen_allowed(filter: &ListenFilter, version: ProtocolVersion, caps: &Value) -> bool {
    let flag = |key: &str, flag: &str| {
        caps.as_object().is_some_and(|o| o.contains_key(key)) && caps[key][flag] == json!(true)
    };
    version == ProtocolVersion::V2026_07_28
        && (!filter.tools_list_changed || flag("tools", "listChanged"))
        && (!filter.prompts_list_changed || flag("prompts", "listChanged"))
        && (!filter.resources_list_changed || flag("resources", "listChanged"))
        && (filter.resource_subscriptions.is_empty() || flag("resources", "subscribe"))
}

/// The table itself, for every version and method.
fn table(caps: &Value, filter: &ListenFilter) {
    let read = ServerCapabilities::from_value(caps.clone());
    for version in ProtocolVersion::ALL {
        for method in Method::ALL {
            assert_eq!(
                gating::check(method, version, &read).is_ok(),
                allowed(method, version, caps),
                "{method} in {version} with {caps}"
            );
        }
        let actions = gating::actions(version, &read);
        for m in &actions {
            assert!(allowed(*m, version, caps));
        }
        assert_eq!(
            gating::check_listen(filter, version, &read).is_ok(),
            listen_allowed(filter, version, caps),
            "listen {filter:?} in {version} with {caps}"
        );
    }
}

/// A handshake answered with `answer` (`version_text` as the version), then every
/// method asked of the ready connection.
fn session(
    protocol: ProtocolChoice,
    answer: Vec<u8>,
    declared: Option<&Value>,
    version_text: &str,
) {
    let mut out = capable_core::Outbox::new();
    let n = Negotiating::start(config(protocol), t0(), &mut out);
    out.clear();
    let Ok(msg) = Incoming::parse(answer) else {
        return;
    };
    let Step::Ready(established) = n.handle(msg, t0(), &mut out) else {
        return;
    };
    let version = established.negotiated.version;
    assert!(protocol.accepts(version));
    if version.era() == capable_core::Era::Legacy {
        assert_eq!(
            version.as_str(),
            version_text,
            "the version the server chose"
        );
    }
    let mut conn = capable_core::Connection::<u8>::new(*established).0;
    let read = Value::Object(conn.capabilities().raw().clone());
    let caps = match declared {
        // What the server declared is what the connection keeps (a non-object
        // declares nothing).
        Some(v) => {
            let expected = if v.is_object() { v.clone() } else { json!({}) };
            assert_eq!(read, expected);
            v
        }
        // Bytes that are no JSON value alone may still end the object early.
        None => &read,
    };
    let params = json!({"uri": "a://b", "name": "n", "level": "info",
        "ref": {"type": "ref/prompt", "name": "n"}, "argument": {"name": "a", "value": ""},
        "filter": {}, "taskId": "t", "inputResponses": {}});
    for method in Method::ALL {
        out.clear();
        // `initialize` belongs to the handshake; `server/discover` may be asked again.
        let lifecycle = method == Method::Initialize;
        // Modern tasks methods also need the client to handle the extension, which
        // this client does not declare.
        let undeclared = version.era() == capable_core::Era::Modern
            && matches!(
                method,
                Method::GetTask | Method::CancelTask | Method::UpdateTask
            );
        let allowed = |m, v, c| !undeclared && allowed(m, v, c);
        let sent = conn.request(method, &params, Timing::new(), 0, t0(), &mut out);
        let lines = written(&out);
        match sent {
            Ok(id) => {
                assert!(
                    !lifecycle && allowed(method, version, caps),
                    "{method} sent"
                );
                assert_eq!(lines.len(), 1);
                assert_eq!(lines[0]["method"], method.as_str());
                assert_eq!(lines[0]["id"], json!(id));
            }
            Err(_) => {
                assert!(lines.is_empty(), "a refusal writes nothing");
                assert!(
                    lifecycle || !allowed(method, version, caps),
                    "{method} refused"
                );
            }
        }
    }
}

const VERSIONS: [&str; 8] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "2024-10-07",
    "",
    "2025-11-25 ",
];

fn run(u: &mut Unstructured) -> Result<()> {
    let raw: bool = u.ratio(1, 4)?;
    let (text, declared) = if raw {
        let text: String = u.arbitrary()?;
        let declared = serde_json::from_str::<Value>(&text).ok();
        (text, declared)
    } else {
        let v = json(u, 0)?;
        (v.to_string(), Some(v))
    };
    let filter = ListenFilter {
        tools_list_changed: u.arbitrary()?,
        prompts_list_changed: u.arbitrary()?,
        resources_list_changed: u.arbitrary()?,
        resource_subscriptions: match u.arbitrary()? {
            true => vec!["a://b".into()],
            false => Vec::new(),
        },
    };
    if let Some(v) = &declared {
        table(v, &filter);
    }
    // Through a handshake, in each era, answered with some version.
    let version = *u.choose(&ProtocolVersion::ALL)?;
    let version_text = *u.choose(&VERSIONS)?;
    let protocol = match u.int_in_range(0..=3)? {
        0 => ProtocolChoice::Auto,
        1 => ProtocolChoice::Legacy,
        2 => ProtocolChoice::Modern,
        _ => ProtocolChoice::Exact(version),
    };
    let mut probe = capable_core::Outbox::new();
    Negotiating::start(config(protocol), t0(), &mut probe);
    let first = written(&probe);
    let answer = first_answer(version.era(), &first[0]["id"], version_text, &text);
    session(protocol, answer, declared.as_ref(), version_text);
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
