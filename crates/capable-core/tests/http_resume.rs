//! A legacy HTTP session resumed from its id and what its handshake settled
//! (`Established::resumed`, `HttpSession::resume_session`): nothing is negotiated again, every
//! request carries the kept session and version, the standalone stream opens at once,
//! and a server that no longer holds the session gets the kept `initialize` (a new
//! session, said with a notice) and the request again, once. Driven by hand, as the
//! policy's other tests: no sockets, no clock.

mod common;

use capable_core::internal::http::{Action, Body, End, HttpMethod, ResumeError};
use capable_core::{ClientConfig, Established, Notice, Outbox, ProtocolVersion};
use serde_json::json;

use common::http::*;

/// A policy resumed in session `kept` at 2025-06-18, and what it did at once.
fn resumed(kept: &str) -> (capable_core::internal::http::HttpSession, Vec<Action>) {
    let mut initialize = Outbox::new();
    let established = Established::resumed(
        ClientConfig::default(),
        negotiated(ProtocolVersion::V2025_06_18),
        &mut initialize,
    )
    .expect("a legacy version resumes");
    assert_eq!(established.negotiated.version, ProtocolVersion::V2025_06_18);
    let mut http = session();
    let opened = http
        .resume_session(kept, &established.negotiated, &initialize)
        .unwrap();
    (http, opened)
}

#[test]
fn a_resumed_session_sends_no_initialize_and_carries_the_kept_id_and_version() {
    let (mut http, opened) = resumed("kept-7");
    assert_eq!(http.session_id(), Some("kept-7"));
    // The standalone stream at once, in the kept session: no handshake first.
    let (_, get, _) = sent(&opened);
    assert_eq!(get.method, HttpMethod::Get);
    assert_eq!(header(&get, "mcp-session-id"), Some("kept-7"));
    let (_, post, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
    )));
    assert_eq!(body(&post)["method"], "tools/list");
    assert_eq!(header(&post, "mcp-session-id"), Some("kept-7"));
    assert_eq!(header(&post, "mcp-protocol-version"), Some("2025-06-18"));
}

#[test]
fn a_resumed_session_the_server_no_longer_holds_is_renewed_with_the_kept_initialize() {
    let (mut http, _) = resumed("gone-1");
    let (ex, _, _) = sent(&http.send_line(&line(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}),
    )));
    assert_eq!(http.on_head(ex, &head(404)).0, Body::Discard);
    let actions = http.on_end(ex, End::default());
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::Notice(Notice::SessionRenewed { .. }))),
        "the renewal is said: {actions:?}"
    );
    let (_, init, _) = sent(&actions);
    assert_eq!(body(&init)["method"], "initialize");
    assert_eq!(body(&init)["params"]["protocolVersion"], "2025-06-18");
    assert_eq!(header(&init, "mcp-session-id"), None);
    // The new session's id is taken, then `initialized`, then the request again.
    let mut h = head(200);
    h.session_id = Some("new-2".into());
    http.on_head(ex, &h);
    let (_, initialized, _) = sent(&http.on_end(ex, End::default()));
    assert_eq!(body(&initialized)["method"], "notifications/initialized");
    assert_eq!(header(&initialized, "mcp-session-id"), Some("new-2"));
    http.on_head(ex, &head(202));
    let (_, again, _) = sent(&http.on_end(ex, End::default()));
    assert_eq!(body(&again)["id"], 4);
    assert_eq!(header(&again, "mcp-session-id"), Some("new-2"));
}

#[test]
fn only_a_fresh_policy_resumes_a_legacy_session_with_a_sendable_id() {
    let mut initialize = Outbox::new();
    let version = negotiated(ProtocolVersion::V2025_06_18);
    Established::resumed(ClientConfig::default(), version.clone(), &mut initialize).unwrap();
    assert_eq!(
        session().resume_session("bad id\n", &version, &initialize),
        Err(ResumeError::SessionId)
    );
    assert_eq!(
        session().resume_session("s", &version, &Outbox::new()),
        Err(ResumeError::Initialize)
    );
    let (mut started, _) = legacy(ProtocolVersion::V2025_06_18);
    assert_eq!(
        started.resume_session("s", &version, &initialize),
        Err(ResumeError::Started)
    );
    // 2026-07-28 has no session.
    let modern = negotiated(ProtocolVersion::V2026_07_28);
    let mut none = Outbox::new();
    assert!(Established::resumed(ClientConfig::default(), modern.clone(), &mut none).is_none());
    assert_eq!(
        session().resume_session("s", &modern, &initialize),
        Err(ResumeError::Modern)
    );
}

#[test]
fn a_session_held_by_several_clients_opens_its_standalone_stream_only_while_asked() {
    let mut initialize = Outbox::new();
    let established = Established::resumed(
        ClientConfig::default(),
        negotiated(ProtocolVersion::V2025_06_18),
        &mut initialize,
    )
    .unwrap();
    let mut http = session();
    http.standalone_on_demand();
    // Resumed: no GET yet (another replica's host may be listening on it).
    let opened = http
        .resume_session("shared-3", &established.negotiated, &initialize)
        .unwrap();
    assert!(opened.is_empty(), "{opened:?}");
    // This client's host listens: the GET opens, in the session.
    let (ex, get, _) = sent(&http.want_standalone(true));
    assert_eq!(get.method, HttpMethod::Get);
    assert_eq!(header(&get, "mcp-session-id"), Some("shared-3"));
    assert!(http.want_standalone(true).is_empty(), "one stream, not two");
    // Its host went away: the GET is closed, and not reopened when it ends.
    assert_eq!(http.want_standalone(false), vec![Action::Abort(ex)]);
    assert!(http.on_end(ex, End::default()).is_empty());
    // A server that refuses a second stream (409) while another client still holds
    // its own: retried after the delay, as a broken stream is.
    let (ex, _, _) = sent(&http.want_standalone(true));
    assert_eq!(http.on_head(ex, &head(409)).0, Body::Discard);
    let (again, get, _) = sent(&http.on_end(ex, End::default()));
    assert_eq!((again, get.method), (ex, HttpMethod::Get));
}
