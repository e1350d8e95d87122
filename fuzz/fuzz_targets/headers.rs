//! Header values, from the host and from servers. The checks themselves: a header that
//! passes `check_header` has a token for a name and no line break or control byte in
//! its value; `header_safe` always yields a printable value that reads back as what was
//! given; `x-mcp-header` annotations are tokens, unique within a tool. And the HTTP
//! policy driven by any sequence of responses (any status, content type, session id,
//! bodies, stream events with any ids and retries): every request it asks the shell to
//! send carries only header values a server can be sent — no CR, LF or other control
//! byte, whatever a server put in its headers, events or `WWW-Authenticate`
//! challenges, with or without authorization (401/403 held, then replayed or
//! abandoned).

#![no_main]

use std::time::Duration;

use arbitrary::Arbitrary;
use base64::Engine as _;
use capable_core::internal::http::param_headers::{header_safe, header_value, param_headers};
use capable_core::internal::http::redact::check_header;
use capable_core::internal::http::{Action, End, ExchangeId, Head, HttpSession, Reconnect, StreamEvent};
use capable_core::{
    Method, Negotiated, Outbox, Outgoing, ProtocolVersion, RequestId, ServerCapabilities,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

#[derive(Arbitrary, Debug)]
enum Message {
    Initialize,
    Initialized,
    Request {
        id: u8,
        method: u8,
    },
    ModernCall {
        id: u8,
        tool: String,
        arguments: String,
    },
    Cancel {
        id: u8,
    },
    Response {
        id: u8,
    },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Send(Message),
    Head {
        ex: u8,
        status: u16,
        content_type: Option<String>,
        session_id: Option<String>,
        www_authenticate: Vec<String>,
        dpop_nonce: Option<String>,
    },
    Body {
        ex: u8,
        body: Vec<u8>,
        tools: Option<String>,
    },
    Event {
        ex: u8,
        data: Vec<u8>,
        endpoint: Option<String>,
    },
    End {
        ex: u8,
        last_event_id: Option<String>,
        retry: Option<u16>,
    },
    Failure {
        ex: u8,
    },
    Timeout {
        ex: u8,
    },
    Negotiated {
        version: u8,
    },
    Authorized {
        ex: u8,
    },
    Abandon {
        ex: u8,
    },
    Close,
}

#[derive(Arbitrary, Debug)]
struct Input {
    authorizing: bool,
    name: String,
    value: String,
    schema: String,
    ops: Vec<Op>,
}

const METHODS: [&str; 5] = [
    "tools/list",
    "tools/call",
    "resources/read",
    "ping",
    "initialize",
];
const STATUSES: [u16; 8] = [200, 202, 204, 400, 404, 405, 500, 503];

fn token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What a header value a client sends may hold: no control byte but a tab, hence no
/// line break (bytes past ASCII go as they are).
fn sendable(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// Printable ASCII: what `header_safe` and the header check's names produce.
fn printable(value: &str) -> bool {
    value.bytes().all(|b| (0x20..0x7f).contains(&b))
}

fn checks(input: &Input) {
    if check_header(&input.name, &input.value).is_ok() {
        assert!(token(&input.name));
        assert!(!input.value.contains(['\r', '\n', '\0']));
    }
    let safe = header_safe(&input.value);
    assert!(!safe.is_empty() && printable(&safe), "{safe:?}");
    assert!(!safe.starts_with(' ') && !safe.ends_with(' '));
    if safe != input.value {
        let b64 = safe
            .strip_prefix("=?base64?")
            .and_then(|s| s.strip_suffix("?="))
            .expect("the base64 sentinel");
        let back = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("base64");
        assert_eq!(back, input.value.as_bytes());
    }
    if let Ok(v) = serde_json::from_str::<Value>(&input.value) {
        if let Some(h) = header_value(&v) {
            assert!(printable(&h));
        }
    }
    if let Ok(schema) = serde_json::from_str::<Value>(&input.schema) {
        if let Ok(headers) = param_headers(&schema) {
            let mut seen = std::collections::HashSet::new();
            for h in headers {
                assert!(token(&h.header), "{h:?}");
                assert!(seen.insert(h.header.to_ascii_lowercase()), "{h:?} twice");
            }
        }
    }
}

/// The message as the connection writes it: its record and its line.
fn message(message: &Message) -> (Outgoing, Vec<u8>) {
    let members = br#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}"#;
    let mut out = Outbox::new();
    match message {
        Message::Initialize => out.write_request(
            &RequestId::Number(0),
            Method::Initialize,
            &json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}),
        ),
        Message::Initialized => out.write_initialized(),
        Message::Request { id, method } => {
            let method = METHODS[usize::from(*method) % METHODS.len()];
            out.write_request(
                &RequestId::Number(i64::from(*id)),
                Method::from_name(method).expect("a method"),
                &json!({"name": "t"}),
            )
        }
        Message::ModernCall {
            id,
            tool,
            arguments,
        } => {
            let arguments = serde_json::from_str::<Value>(arguments).unwrap_or(json!({}));
            out.write_request_with_meta(
                &RequestId::Number(i64::from(*id)),
                Method::CallTool,
                &json!({"name": tool, "arguments": arguments}),
                members,
                Some(ProtocolVersion::V2026_07_28),
            )
        }
        Message::Cancel { id } => out.write_cancelled(&RequestId::Number(i64::from(*id)), "gone"),
        Message::Response { id } => {
            out.write_result(&RequestId::Number(i64::from(*id)), &json!({}))
        }
        // Any bytes, as a notification's: whatever a line holds, the policy sends it
        // as it is.
        Message::Raw(bytes) => {
            let what = Outgoing::Notification {
                method: String::from_utf8_lossy(bytes).into_owned(),
            };
            return (what, bytes.clone());
        }
    }
    let (what, line) = out.messages().next().expect("one message");
    (what, line.to_vec())
}

fn check_actions(actions: &[Action], exchanges: &mut Vec<ExchangeId>, authorizing: bool) {
    for action in actions {
        if let Action::Authorize { need, .. } = action {
            assert!(
                authorizing,
                "a session without authorization asked to authorize"
            );
            assert!(matches!(need.status, 400 | 401 | 403), "{need:?}");
            assert!(need.challenges.iter().all(|c| c.is_oauth()), "{need:?}");
        }
        if let Action::Send {
            exchange, request, ..
        } = action
        {
            exchanges.push(*exchange);
            for (name, value) in &request.headers {
                assert!(token(name), "header name {name:?}");
                if name == "mcp-session-id" {
                    assert!(
                        value.bytes().all(|b| (0x21..0x7f).contains(&b)),
                        "{value:?}"
                    );
                }
                if name.starts_with("mcp-param-") || name == "mcp-method" || name == "mcp-name" {
                    assert!(printable(value), "header {name} = {value:?}");
                }
                assert!(
                    sendable(value),
                    "header {name} = {value:?} in {:?} {}",
                    request.method,
                    request.url
                );
            }
        }
    }
}

fuzz_target!(|input: Input| {
    checks(&input);

    let reconnect = Reconnect {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(400),
        attempts: 3,
        reissues: 2,
        healthy: Duration::from_secs(30),
    };
    let mut http = HttpSession::new("http://mcp.test/mcp".parse().unwrap(), reconnect, 1 << 16);
    if input.authorizing {
        http = http.with_authorization();
    }
    let mut exchanges: Vec<ExchangeId> = Vec::new();
    let pick = |exchanges: &[ExchangeId], i: u8| match exchanges {
        [] => None,
        all => Some(all[usize::from(i) % all.len()]),
    };
    for op in input.ops.iter().take(64) {
        let actions = match op {
            Op::Send(m) => {
                let (what, line) = message(m);
                http.send(what, &line)
            }
            Op::Head {
                ex,
                status,
                content_type,
                session_id,
                www_authenticate,
                dpop_nonce,
            } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                let head = Head {
                    status: match status % 4 {
                        0 => *status,
                        _ => STATUSES[usize::from(*status >> 2) % STATUSES.len()],
                    },
                    content_type: content_type.as_ref().map(|t| match t.len() % 3 {
                        0 => t.clone(),
                        1 => "text/event-stream".into(),
                        _ => "application/json".into(),
                    }),
                    session_id: session_id.clone(),
                    www_authenticate: www_authenticate.clone(),
                    dpop_nonce: dpop_nonce.clone(),
                };
                http.on_head(ex, &head).1
            }
            Op::Body { ex, body, tools } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                let body = match tools {
                    // A tools/list answer whose tool declares `x-mcp-header`s.
                    Some(schema) => {
                        let schema = serde_json::from_str::<Value>(schema).unwrap_or(json!({}));
                        serde_json::to_vec(
                            &json!({"jsonrpc": "2.0", "id": body.first().copied().unwrap_or(0),
                            "result": {"tools": [{"name": "t", "inputSchema": schema}]}}),
                        )
                        .unwrap()
                    }
                    None => body.clone(),
                };
                http.on_body(ex, body)
            }
            Op::Event { ex, data, endpoint } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                let event = match endpoint {
                    Some(path) => StreamEvent::Endpoint(path.clone()),
                    None => StreamEvent::Message(data.clone()),
                };
                http.on_event(ex, event)
            }
            Op::End {
                ex,
                last_event_id,
                retry,
            } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                let end = End {
                    last_event_id: last_event_id.clone(),
                    retry: retry.map(|ms| Duration::from_millis(u64::from(ms))),
                    lasted: Duration::from_secs(1),
                };
                http.on_end(ex, end)
            }
            Op::Failure { ex } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                http.on_failure(ex)
            }
            Op::Timeout { ex } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                http.on_timeout(ex)
            }
            Op::Negotiated { version } => {
                let version =
                    ProtocolVersion::ALL[usize::from(*version) % ProtocolVersion::ALL.len()];
                http.negotiated(&Negotiated {
                    version,
                    server_info: Default::default(),
                    capabilities: ServerCapabilities::from_value(json!({"tools": {}})),
                    instructions: None,
                    server_versions: Vec::new(),
                });
                Vec::new()
            }
            Op::Authorized { ex } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                http.authorized(ex)
            }
            Op::Abandon { ex } => {
                let Some(ex) = pick(&exchanges, *ex) else {
                    continue;
                };
                http.abandon(ex)
            }
            Op::Close => match http.close() {
                Some((ex, request)) => vec![Action::Send {
                    exchange: ex,
                    request,
                    blocking: false,
                }],
                None => Vec::new(),
            },
        };
        check_actions(&actions, &mut exchanges, input.authorizing);
    }
});
