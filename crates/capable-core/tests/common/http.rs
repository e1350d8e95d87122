//! Helpers of the HTTP policy's tests: a session on a made-up URL, heads and bodies to
//! feed it, and readers of the actions it returns.

use std::time::Duration;

use capable_core::internal::http::{
    Action, Body, ExchangeId, Failure, Head, HttpSession, Reconnect, Request,
};
use capable_core::internal::outbox::{Outgoing, OutgoingRequest};
use capable_core::{Method, Negotiated, ProtocolVersion, RequestId, ServerCapabilities};
use serde_json::{json, Value};

pub const URL: &str = "http://mcp.test/mcp";

pub fn session() -> HttpSession {
    let reconnect = Reconnect {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(400),
        attempts: 3,
        reissues: 2,
        healthy: Duration::from_secs(30),
    };
    HttpSession::new(URL.parse().unwrap(), reconnect, 1 << 20)
}

pub fn line(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

/// The record the connection keeps of the message `line` (one it could have written),
/// read here from the JSON: what the policy is handed beside the line.
pub fn record(line: &[u8]) -> Outgoing {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, rename = "_meta")]
        meta: Option<&'a serde_json::value::RawValue>,
    }
    let v: Value = serde_json::from_slice(line).unwrap();
    let id = v
        .get("id")
        .map(|id| serde_json::from_value::<RequestId>(id.clone()).unwrap());
    let Some(method) = v.get("method").and_then(Value::as_str) else {
        return Outgoing::Response {
            id: id.expect("a response has an id"),
        };
    };
    let Some(id) = id else {
        return match method {
            "notifications/initialized" => Outgoing::Initialized,
            "notifications/cancelled" => Outgoing::Cancelled {
                id: serde_json::from_value(v["params"]["requestId"].clone()).unwrap(),
            },
            other => Outgoing::Notification {
                method: other.into(),
            },
        };
    };
    let method = Method::from_name(method).expect("one of the client's methods");
    let mut r = OutgoingRequest::new(id, method);
    r.version = v
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
        .map(|s| s.parse().unwrap());
    if r.version.is_some() {
        let params = &v["params"];
        r.target = method
            .target_member()
            .and_then(|m| params.get(m)?.as_str())
            .map(Box::from);
        if method == Method::CallTool {
            r.arguments = params.get("arguments").cloned().map(Box::new);
        }
        let e: Envelope = serde_json::from_slice(line).unwrap();
        r.meta = e.params.and_then(|p| p.meta).map(|raw| {
            let at = raw.get().as_ptr() as usize - line.as_ptr() as usize;
            at..at + raw.get().len()
        });
    }
    Outgoing::Request(r)
}

/// Hands the policy one outgoing message given as its line, with its record.
pub trait SendLine {
    fn send_line(&mut self, line: &[u8]) -> Vec<Action>;
}

impl SendLine for HttpSession {
    fn send_line(&mut self, line: &[u8]) -> Vec<Action> {
        self.send(record(line), line)
    }
}

pub fn negotiated(version: ProtocolVersion) -> Negotiated {
    Negotiated {
        version,
        server_info: Default::default(),
        capabilities: ServerCapabilities::from_value(json!({})),
        instructions: None,
        server_versions: Vec::new(),
    }
}

pub fn head(status: u16) -> Head {
    Head {
        status,
        content_type: Some("application/json".into()),
        ..Head::default()
    }
}

pub fn sse() -> Head {
    Head {
        status: 200,
        content_type: Some("text/event-stream".into()),
        ..Head::default()
    }
}

/// The one request an action list sends.
#[track_caller]
pub fn sent(actions: &[Action]) -> (ExchangeId, Request, bool) {
    let sends: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Send {
                exchange,
                request,
                blocking,
            } => Some((*exchange, request.clone(), *blocking)),
            _ => None,
        })
        .collect();
    assert_eq!(sends.len(), 1, "{actions:?}");
    sends.into_iter().next().unwrap()
}

pub fn header<'a>(r: &'a Request, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_ref())
}

pub fn body(r: &Request) -> Value {
    serde_json::from_slice(r.body.as_deref().unwrap()).unwrap()
}

pub fn delivered(actions: &[Action]) -> Vec<Value> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Deliver(m) | Action::DeliverOn { message: m, .. } => {
                Some(serde_json::from_slice(m).unwrap())
            }
            _ => None,
        })
        .collect()
}

pub fn failed(actions: &[Action]) -> Option<(Value, Failure)> {
    actions.iter().find_map(|a| match a {
        Action::Fail { id, failure } => Some((serde_json::to_value(id).unwrap(), failure.clone())),
        _ => None,
    })
}

pub fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A legacy session through its handshake: initialize answered with session `s1`,
/// `version` negotiated, `notifications/initialized` posted.
pub fn legacy(version: ProtocolVersion) -> (HttpSession, Vec<Action>) {
    let mut http = session();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    let (ex, post, _) = sent(&http.send_line(&line(init)));
    assert_eq!(header(&post, "mcp-session-id"), None);
    assert_eq!(
        header(&post, "mcp-protocol-version"),
        None,
        "nothing negotiated yet"
    );
    let mut h = head(200);
    h.session_id = Some("s1".into());
    let (b, _) = http.on_head(ex, &h);
    assert!(matches!(b, Body::Whole { .. }));
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {}});
    assert_eq!(delivered(&http.on_body(ex, line(answer))).len(), 1);
    http.negotiated(&negotiated(version));
    let (ex, post, blocking) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )));
    assert!(blocking, "a notification goes out before the next message");
    assert_eq!(header(&post, "mcp-session-id"), Some("s1"));
    let (b, opened) = http.on_head(ex, &head(202));
    assert_eq!(b, Body::Discard);
    (http, opened)
}
