//! The HTTP policy when the session authorizes: which refusals hold a request for
//! the shell to act on, and the replay rule — the request that met a 401 or a 403
//! `insufficient_scope` is sent again once the shell acted, once per kind of need,
//! for a message, a notification and the standalone GET stream alike. Without
//! authorization the same refusals are HTTP failures. No sockets, no clock.

mod common;

use std::time::Duration;

use capable_core::internal::auth::NeedKind;
use capable_core::internal::http::{
    Action, AuthNeed, Body, End, ExchangeId, Failure, Head, HttpMethod, HttpSession, Reconnect,
    Request,
};
use capable_core::{Negotiated, ProtocolVersion, ServerCapabilities};
use serde_json::{json, Value};

use common::http::SendLine;

const URL: &str = "http://mcp.test/mcp";

fn session(authorizing: bool) -> HttpSession {
    let http = HttpSession::new(URL.parse().unwrap(), Reconnect::default(), 1 << 20);
    if authorizing {
        http.with_authorization()
    } else {
        http
    }
}

fn line(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

fn head(status: u16, challenge: Option<&str>) -> Head {
    Head {
        status,
        content_type: Some("application/json".into()),
        www_authenticate: challenge.into_iter().map(str::to_owned).collect(),
        ..Head::default()
    }
}

#[track_caller]
fn sent(actions: &[Action]) -> (ExchangeId, Request) {
    let sends: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Send {
                exchange, request, ..
            } => Some((*exchange, request.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(sends.len(), 1, "{actions:?}");
    sends.into_iter().next().unwrap()
}

#[track_caller]
fn need(actions: &[Action]) -> (ExchangeId, Option<Value>, AuthNeed) {
    match actions {
        [Action::Authorize { exchange, id, need }] => (
            *exchange,
            id.as_ref().map(|id| serde_json::to_value(id).unwrap()),
            need.clone(),
        ),
        other => panic!("no authorization need: {other:?}"),
    }
}

fn request(id: u64, method: &str) -> Vec<u8> {
    line(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}))
}

const CHALLENGE: &str = r#"Bearer error="invalid_token", scope="mcp:basic", resource_metadata="http://mcp.test/.well-known/oauth-protected-resource/mcp""#;
const STEP_UP: &str = r#"Bearer error="insufficient_scope", scope="mcp:write""#;

/// Answers exchange `ex` with `status` and an OAuth body, as a server's middleware does.
fn refuse(http: &mut HttpSession, ex: ExchangeId, status: u16, challenge: &str) -> Vec<Action> {
    let (body, early) = http.on_head(ex, &head(status, Some(challenge)));
    assert!(early.is_empty());
    assert!(
        matches!(body, Body::Whole { .. }),
        "the body is read before acting"
    );
    http.on_body(ex, br#"{"error":"invalid_token"}"#.to_vec())
}

#[test]
fn a_401_holds_the_request_and_it_is_replayed_once_the_shell_acted() {
    let mut http = session(true);
    let (ex, first) = sent(&http.send_line(&request(1, "tools/list")));
    let (held, id, need) = need(&refuse(&mut http, ex, 401, CHALLENGE));
    assert_eq!((held, id), (ex, Some(json!(1))));
    assert_eq!(need.kind, NeedKind::Unauthorized);
    assert_eq!(need.scopes(), ["mcp:basic"]);
    assert_eq!(
        need.resource_metadata(),
        Some("http://mcp.test/.well-known/oauth-protected-resource/mcp")
    );
    // Nothing happens until the shell says so; then the same request again.
    let (again, replay) = sent(&http.authorized(ex));
    assert_eq!(again, ex);
    assert_eq!(replay.body, first.body);
    assert_eq!(replay.method, HttpMethod::Post);
    let (_, _) = http.on_head(ex, &head(200, None));
    let answer = http.on_body(ex, line(json!({"jsonrpc": "2.0", "id": 1, "result": {}})));
    assert!(matches!(answer.as_slice(), [Action::Deliver(_)]));
}

#[test]
fn a_second_401_after_the_replay_is_the_answer() {
    let mut http = session(true);
    let (ex, _) = sent(&http.send_line(&request(1, "tools/list")));
    need(&refuse(&mut http, ex, 401, CHALLENGE));
    sent(&http.authorized(ex));
    let failed = refuse(&mut http, ex, 401, CHALLENGE);
    assert!(
        matches!(
            failed.as_slice(),
            [Action::Fail {
                failure: Failure::Http { status: 401, .. },
                ..
            }]
        ),
        "{failed:?}"
    );
}

#[test]
fn step_up_then_success_and_an_endless_403_is_not_a_loop() {
    let mut http = session(true);
    let (ex, _) = sent(&http.send_line(&request(2, "tools/call")));
    need(&refuse(&mut http, ex, 401, CHALLENGE));
    sent(&http.authorized(ex));
    let (_, _, scope) = need(&refuse(&mut http, ex, 403, STEP_UP));
    assert_eq!(scope.kind, NeedKind::InsufficientScope);
    assert_eq!(scope.scopes(), ["mcp:write"]);
    sent(&http.authorized(ex));
    let failed = refuse(&mut http, ex, 403, STEP_UP);
    assert!(matches!(
        failed.as_slice(),
        [Action::Fail {
            failure: Failure::Http { status: 403, .. },
            ..
        }]
    ));
    // A 403 for another reason is no need at all.
    let (ex, _) = sent(&http.send_line(&request(3, "tools/call")));
    let other = refuse(&mut http, ex, 403, r#"Bearer error="invalid_token""#);
    assert!(matches!(other.as_slice(), [Action::Fail { .. }]));
}

#[test]
fn a_dpop_nonce_challenge_is_its_own_need() {
    let mut http = session(true);
    let (ex, _) = sent(&http.send_line(&request(1, "tools/list")));
    let mut h = head(401, Some(r#"DPoP error="use_dpop_nonce""#));
    h.dpop_nonce = Some("n-1".into());
    http.on_head(ex, &h);
    let (_, _, n) = need(&http.on_body(ex, b"{}".to_vec()));
    assert_eq!(
        (n.kind, n.dpop_nonce.as_deref()),
        (NeedKind::DpopNonce, Some("n-1"))
    );
    assert!(n.wants_dpop());
    sent(&http.authorized(ex));
}

#[test]
fn abandoning_drops_the_request_and_the_shell_reports() {
    let mut http = session(true);
    let (ex, _) = sent(&http.send_line(&request(1, "tools/list")));
    need(&refuse(&mut http, ex, 401, CHALLENGE));
    assert!(http.abandon(ex).is_empty());
    assert!(http.authorized(ex).is_empty(), "nothing left to replay");
    assert!(!http.wants(ex));
}

#[test]
fn without_authorization_a_401_is_an_http_failure() {
    let mut http = session(false);
    let (ex, _) = sent(&http.send_line(&request(1, "tools/list")));
    let actions = refuse(&mut http, ex, 401, CHALLENGE);
    assert!(matches!(
        actions.as_slice(),
        [Action::Fail {
            failure: Failure::Http { status: 401, .. },
            ..
        }]
    ));
}

fn negotiated() -> Negotiated {
    Negotiated {
        version: ProtocolVersion::V2025_11_25,
        server_info: Default::default(),
        capabilities: ServerCapabilities::from_value(json!({})),
        instructions: None,
        server_versions: Vec::new(),
    }
}

/// A legacy session with its standalone stream open: returns the stream's exchange.
fn with_stream(http: &mut HttpSession) -> ExchangeId {
    let (ex, _) = sent(&http.send_line(&request(0, "initialize")));
    let mut h = head(200, None);
    h.session_id = Some("s1".into());
    http.on_head(ex, &h);
    http.on_body(ex, line(json!({"jsonrpc": "2.0", "id": 0, "result": {}})));
    http.negotiated(&negotiated());
    let (note, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )));
    let (_, opened) = http.on_head(note, &head(202, None));
    let (stream, get) = sent(&opened);
    assert_eq!(get.method, HttpMethod::Get);
    let sse = Head {
        status: 200,
        content_type: Some("text/event-stream".into()),
        ..Head::default()
    };
    assert!(matches!(http.on_head(stream, &sse).0, Body::Events { .. }));
    stream
}

#[test]
fn a_401_on_the_long_lived_get_stream_authorizes_and_reopens_it() {
    let mut http = session(true);
    let stream = with_stream(&mut http);
    // The stream ends (a token expired); its reconnect meets a 401.
    let (again, _) = sent(&http.on_end(stream, End::default()));
    assert_eq!(again, stream);
    let (body, _) = http.on_head(stream, &head(401, Some(CHALLENGE)));
    assert_eq!(body, Body::Discard);
    let (held, id, n) = need(&http.on_end(stream, End::default()));
    assert_eq!((held, id, n.kind), (stream, None, NeedKind::Unauthorized));
    let (reopened, get) = sent(&http.authorized(stream));
    assert_eq!(
        (reopened, get.method, get.delay),
        (stream, HttpMethod::Get, Duration::ZERO)
    );
    assert!(get
        .headers
        .iter()
        .any(|(n, v)| n == "mcp-session-id" && v == "s1"));
}

#[test]
fn a_notification_refused_with_401_is_replayed_in_order() {
    let mut http = session(true);
    let _ = with_stream(&mut http);
    let note = line(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    let actions = http.send_line(&note);
    let (ex, _) = sent(&actions);
    assert!(matches!(actions[0], Action::Send { blocking: true, .. }));
    let (_, id, _) = need(&refuse(&mut http, ex, 401, CHALLENGE));
    assert_eq!(id, None);
    let replay = http.authorized(ex);
    assert!(matches!(
        replay.as_slice(),
        [Action::Send { blocking: true, .. }]
    ));
}
