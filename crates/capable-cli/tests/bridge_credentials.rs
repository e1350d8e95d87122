//! Whose credentials `capable bridge --listen --auth-issuer --config` sends to an HTTP
//! server of its config (an entry's `credentials`), with real parts: the callers'
//! identity provider is oidc-provider (`tests/peers/oidc_issuer.mjs`, which also does
//! RFC 8693 token exchange for ID-JAGs), and the server behind has an oidc-provider of
//! its own (`tests/peers/oidc_upstream.mjs`), whose tool `whoami` answers whose token
//! reached it, and which writes down every `Authorization` it was sent. Two callers
//! (alice-app, bob-app) through one gateway at once.
//!
//! - `service`: both callers reach the server with the gateway's own client
//!   credentials, and neither caller's token ever reaches it.
//! - `exchange`: each caller reaches the server as itself; what an exchange got is
//!   kept per caller (a second session asks nothing again), and a token the server no
//!   longer knows is asked for again once; a 2026-07-28 caller is served the same.
//! - An identity provider that refuses the gateway's client, or answers what is no
//!   token: that server is left out of the caller's session with why, nothing reaches
//!   it, and no token is in what the gateway wrote.
//!
//! Everything binds 127.0.0.1. Without `.peers` these tests fail, saying how to install
//! them; set `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::{many_entry, Bridge};
use common::oauth::free_port;
use common::TempFile;
use identity_support::upstream::Upstream;
use identity_support::{gateway_on, wanted, Gateway};
use listen_support::{http_at, post, Http};
use serde_json::{json, Value};

/// The gateway in front of `upstream` as the server `up`, its credentials
/// `credentials`, and a local server (`local`, the fixture); the identity provider on
/// `idp_port`.
fn gateway(
    test: &str,
    idp_port: u16,
    upstream: &Upstream,
    credentials: Value,
) -> (Gateway, TempFile, common::oauth::Scratch) {
    let oauth = json!({"grant": "client_credentials", "clientId": "gateway-upstream",
        "clientSecret": "upstream-secret"});
    let config = json!({"mcpServers": {"up": {"url": upstream.peer.mcp, "oauth": oauth,
        "credentials": credentials}, "local": many_entry("no-resources", &[])}});
    let file = TempFile::new(&format!("credentials-{test}.json"), &config.to_string());
    let store = common::oauth::Scratch::new(&format!("credentials-{test}"));
    let path = store.store();
    let g = gateway_on(
        idp_port,
        free_port(),
        &["--token-store", &path, "--config", file.path()],
    );
    (g, file, store)
}

/// `up__whoami` in the session `id`, as `token`'s caller.
fn whoami(g: &Gateway, token: &str, id: &str) -> Http {
    let bearer = format!("Bearer {token}");
    post(
        g.port,
        &[("Authorization", &bearer), ("Mcp-Session-Id", id)],
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "up__whoami", "arguments": {}}}),
    )
}

/// `up__whoami` as a 2026-07-28 request (no session) of `token`'s caller.
fn whoami_modern(g: &Gateway, token: &str) -> Http {
    let bearer = format!("Bearer {token}");
    let params = json!({"name": "up__whoami", "arguments": {}, "_meta": Bridge::meta(json!({}))});
    let headers = [
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "up__whoami"),
    ];
    post(
        g.port,
        &headers,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}),
    )
}

/// Whose token reached the server, as `up__whoami` said.
fn subject(answer: &Http) -> String {
    assert_eq!(answer.status, 200, "{}", answer.body);
    let text = &answer.json()["result"]["content"][0]["text"];
    text.as_str()
        .unwrap_or_else(|| panic!("no answer: {}", answer.body))
        .to_owned()
}

/// How many exchanges the identity provider on `idp_port` made.
fn exchanges(idp_port: u16) -> u64 {
    let answer = http_at(idp_port, "GET", "/test/exchanges", &[], "");
    answer.body.trim().parse().unwrap()
}

/// No token — a caller's, or one the server was sent — in what the gateway wrote
/// (its audit, its `--trace`).
fn nothing_leaked(g: &Gateway, upstream: &Upstream, callers: &[&str]) {
    let written = g.bridge.stderr_text();
    for token in callers
        .iter()
        .copied()
        .chain(upstream.seen().iter().map(String::as_str))
    {
        assert!(!written.contains(token), "a token in the gateway's output");
    }
}

#[test]
fn service_credentials_are_the_gateways_and_a_callers_token_never_goes_upstream() {
    if !wanted() {
        return;
    }
    let idp_port = free_port();
    let upstream = Upstream::start(idp_port);
    let (g, _file, _store) = gateway("service", idp_port, &upstream, json!({"mode": "service"}));
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));
    let (hers, his) = (g.session(&alice), g.session(&bob));
    assert_eq!(
        subject(&whoami(&g, &alice, &hers)),
        "client:gateway-upstream"
    );
    assert_eq!(subject(&whoami(&g, &bob, &his)), "client:gateway-upstream");

    let seen = upstream.seen();
    assert!(!seen.is_empty());
    for token in &seen {
        assert!(
            token != &alice && token != &bob,
            "a caller's token went upstream"
        );
    }
    nothing_leaked(&g, &upstream, &[&alice, &bob]);
}

#[test]
fn exchanged_credentials_are_each_callers_own_kept_per_caller_and_asked_again_once_when_refused() {
    if !wanted() {
        return;
    }
    let idp_port = free_port();
    let mut upstream = Upstream::start(idp_port);
    let idp = json!({"tokenEndpoint": format!("http://127.0.0.1:{idp_port}/token"),
        "clientId": "exchange-app", "clientSecret": "exchange-secret"});
    let credentials = json!({"mode": "exchange", "idp": idp});
    let (g, _file, _store) = gateway("exchange", idp_port, &upstream, credentials);
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));

    // Two callers at once, each as itself.
    let (hers, his) = (g.session(&alice), g.session(&bob));
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice-app");
    assert_eq!(subject(&whoami(&g, &bob, &his)), "user:bob-app");
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice-app");
    assert_eq!(exchanges(idp_port), 2);

    // Alice's second session, and her 2026-07-28 requests (no session), use what her
    // exchange got: nothing asked again.
    let again = g.session(&alice);
    assert_eq!(subject(&whoami(&g, &alice, &again)), "user:alice-app");
    assert_eq!(subject(&whoami_modern(&g, &alice)), "user:alice-app");
    assert_eq!(exchanges(idp_port), 2);

    // The server forgets every token (a restart): the refused one is asked for
    // again, once, and the call goes through as her.
    upstream.peer.restart();
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice-app");
    assert_eq!(exchanges(idp_port), 3);

    for token in upstream.seen() {
        assert!(
            token != alice && token != bob,
            "a caller's token went upstream"
        );
    }
    nothing_leaked(&g, &upstream, &[&alice, &bob]);
}

#[test]
fn an_exchange_the_identity_provider_refuses_fails_that_server_with_why_and_no_token() {
    if !wanted() {
        return;
    }
    let idp_port = free_port();
    let upstream = Upstream::start(idp_port);
    let idp = json!({"tokenEndpoint": format!("http://127.0.0.1:{idp_port}/token"),
        "clientId": "exchange-app", "clientSecret": "not-the-secret"});
    let credentials = json!({"mode": "exchange", "idp": idp});
    let (g, _file, _store) = gateway("refused", idp_port, &upstream, credentials);
    let alice = g.token("alice-app");
    let hers = g.session(&alice);
    let failed = g
        .bridge
        .audit_until(|l| l["server"] == "up" && l["state"] == "refused");
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(error.contains("/token refused: invalid_client"), "{failed}");
    assert_eq!(failed["caller"]["sub"], "alice-app");
    // Her call of its tool says why; her other server is served.
    let refused = whoami(&g, &alice, &hers);
    let said = refused.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(said.contains("invalid_client"), "{}", refused.body);
    assert!(!refused.body.contains(&alice));
    let bearer = format!("Bearer {alice}");
    let echoed = post(
        g.port,
        &[("Authorization", &bearer), ("Mcp-Session-Id", &hers)],
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "local__echo", "arguments": {"message": "hi"}}}),
    );
    assert!(
        echoed.json()["result"]["content"].is_array(),
        "{}",
        echoed.body
    );
    assert!(upstream.seen().is_empty(), "nothing reached the server");
    nothing_leaked(&g, &upstream, &[&alice]);
}

/// An identity provider that answers every exchange `200` with what is no token.
fn lying_idp() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            use std::io::{Read, Write};
            let mut request = [0u8; 16384];
            let _ = stream.read(&mut request);
            let body = r#"{"token_type":"N_A","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}"#;
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    port
}

#[test]
fn an_identity_provider_that_answers_no_token_fails_that_server_with_why() {
    if !wanted() {
        return;
    }
    let idp_port = free_port();
    let upstream = Upstream::start(idp_port);
    let liar = lying_idp();
    let idp = json!({"tokenEndpoint": format!("http://127.0.0.1:{liar}/token"),
        "clientId": "exchange-app", "clientSecret": "exchange-secret"});
    let credentials = json!({"mode": "exchange", "idp": idp});
    let (g, _file, _store) = gateway("lying", idp_port, &upstream, credentials);
    let alice = g.token("alice-app");
    g.session(&alice);
    let failed = g.bridge.audit_until(|l| {
        l["server"] == "up" && (l["state"] == "refused" || l["state"] == "failed")
    });
    assert!(
        failed["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{failed}"
    );
    assert!(upstream.seen().is_empty(), "nothing reached the server");
    nothing_leaked(&g, &upstream, &[&alice]);
}
