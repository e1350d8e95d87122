//! `capable bridge --listen --auth-issuer … --auth-client-id ID` (secret from
//! `CAPABLE_AUTH_CLIENT_SECRET`): opaque access tokens, asked of a real identity
//! provider (`tests/peers/oidc_issuer.mjs … opaque`: oidc-provider issuing opaque
//! tokens for the gateway and introspecting them, RFC 7662). A good token is served
//! as its caller and remembered until it expires; an inactive one is refused with
//! why and nothing reaches the server behind; an issuer that refuses the gateway's own
//! client is a `503`, not the caller's bad token; neither token nor secret is ever
//! written. Everything binds 127.0.0.1; processes are stopped by PID.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::Bridge;
use common::oauth::{free_port, node, Peer, NODE22};
use common::peers_wanted;
use listen_support::{post, Http};
use serde_json::{json, Value};

const OIDC: &str = ".peers/oidc/node_modules/oidc-provider/package.json";

/// The issuer of opaque tokens and where it and the gateway are.
struct Issuer {
    /// The identity provider (`None` once stopped).
    peer: Option<Peer>,
    url: String,
    gateway: String,
    port: u16,
}

fn issuer() -> Issuer {
    let (as_port, port) = (free_port(), free_port());
    let gateway = format!("http://127.0.0.1:{port}/mcp");
    let url = format!("http://127.0.0.1:{as_port}");
    let peer = Peer::start(
        vec![
            node(),
            "tests/peers/oidc_issuer.mjs".into(),
            as_port.to_string(),
            gateway.clone(),
            "opaque".into(),
        ],
        vec![as_port],
        gateway.clone(),
        url.clone(),
    );
    Issuer {
        peer: Some(peer),
        url,
        gateway,
        port,
    }
}

impl Issuer {
    /// The gateway in front of the fixture, asking the issuer as `gateway-app` with
    /// `secret` (from the environment).
    fn gateway(&self, secret: &str) -> Bridge {
        let listen = format!("127.0.0.1:{}", self.port);
        let server = common::fixture("read-only");
        let mut args = vec![
            "--trace",
            "--listen",
            &listen,
            "--auth-issuer",
            &self.url,
            "--public-url",
            &self.gateway,
            "--auth-scope",
            "mcp:tools",
            "--auth-client-id",
            "gateway-app",
            "--",
        ];
        args.extend(server.iter().map(String::as_str));
        let bridge = Bridge::start_env(&args, &[("CAPABLE_AUTH_CLIENT_SECRET", secret)]);
        bridge.audit_until(|l| l["event"] == "listening");
        bridge
    }

    /// `form` POSTed to the issuer's `path` as `client` (`alice-app` …).
    fn post_as(&self, client: &str, path: &str, form: &str) -> (u16, String) {
        use base64::Engine;
        let secret = format!("{}-secret", client.trim_end_matches("-app"));
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:{secret}"));
        common::oauth::post(
            &format!("{}{path}", self.url),
            &[("Authorization", &format!("Basic {basic}"))],
            "application/x-www-form-urlencoded",
            form,
        )
    }

    /// A client credentials token of `client` for the gateway: opaque.
    fn token(&self, client: &str) -> String {
        let resource = self.gateway.replace(':', "%3A").replace('/', "%2F");
        let (status, answer) = self.post_as(
            client,
            "/token",
            &format!("grant_type=client_credentials&scope=mcp%3Atools&resource={resource}"),
        );
        assert_eq!(status, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        let token = answer["access_token"].as_str().unwrap().to_owned();
        assert_eq!(token.split('.').count(), 1, "an opaque token: {token}");
        token
    }

    fn call(&self, token: &str, session: Option<&str>, method: &str) -> Http {
        let bearer = format!("Bearer {token}");
        let mut headers = vec![("Authorization", bearer.as_str())];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        let params = match method {
            "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "h", "version": "1"}}),
            _ => json!({}),
        };
        post(
            self.port,
            &headers,
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
    }
}

fn wanted() -> bool {
    peers_wanted(&[OIDC, NODE22])
}

#[test]
fn an_opaque_token_is_asked_of_the_issuer_and_its_caller_served_until_it_expires() {
    if !wanted() {
        return;
    }
    let i = issuer();
    let g = i.gateway("gateway-secret");
    let alice = i.token("alice-app");
    let opened = i.call(&alice, None, "initialize");
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let listed = i.call(&alice, Some(&session), "resources/list");
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains("docs://"), "{}", listed.body);
    // Served as herself: the client acting for itself is the subject.
    let ready = g.audit_until(|l| l["event"] == "state" && l["state"] == "ready");
    assert_eq!(ready["caller"]["sub"], "alice-app", "{ready}");
    assert_eq!(ready["caller"]["clientId"], "alice-app", "{ready}");
    // Revoked at the issuer: the gateway asked once and keeps its answer until the
    // token expires (one question per token, never per request).
    let (status, _) = i.post_as("alice-app", "/token/revocation", &format!("token={alice}"));
    assert_eq!(status, 200);
    let again = i.call(&alice, Some(&session), "resources/list");
    assert_eq!(again.status, 200, "asked again: {}", again.body);
    // Neither the token nor the gateway's secret is ever written.
    let said = g.stderr_text();
    assert!(!said.contains(&alice), "the token was written");
    assert!(!said.contains("gateway-secret"), "the secret was written");
}

#[test]
fn an_inactive_token_is_refused_with_why_and_the_same_one_again_costs_the_issuer_nothing() {
    if !wanted() {
        return;
    }
    let mut i = issuer();
    let g = i.gateway("gateway-secret");
    // Bob's token, revoked before its first use: the issuer says it is not active.
    let bob = i.token("bob-app");
    let (status, _) = i.post_as("bob-app", "/token/revocation", &format!("token={bob}"));
    assert_eq!(status, 200);
    for token in [bob.as_str(), "made-up-opaque-token"] {
        let refused = i.call(token, None, "initialize");
        assert_eq!(refused.status, 401, "{}", refused.body);
        let challenge = refused.header("www-authenticate").unwrap_or_default();
        assert!(challenge.contains("invalid_token"), "{challenge}");
        assert!(refused.body.contains("not active"), "{}", refused.body);
    }
    let refusals = g.audit_count_until(2, |l| {
        l["event"] == "refused" && l["why"].as_str().unwrap_or("").contains("not active")
    });
    assert_eq!(refusals, 2, "each refusal audited with why");
    // The issuer stops: a token it refused is refused again without asking it; one
    // never seen cannot be judged (503: the issuer cannot be reached, no challenge).
    i.peer = None;
    let again = i.call(&bob, None, "initialize");
    assert_eq!(again.status, 401, "{}", again.body);
    assert!(again.body.contains("not active"), "{}", again.body);
    let unknown = i.call("another-made-up-token", None, "initialize");
    assert_eq!(unknown.status, 503, "{}", unknown.body);
    assert!(unknown.header("www-authenticate").is_none());
    assert!(g
        .sent_upstream()
        .iter()
        .all(|m| m["method"] != "initialize"));
}

#[test]
fn an_issuer_that_refuses_the_gateways_own_client_is_a_503_not_a_bad_token() {
    if !wanted() {
        return;
    }
    let i = issuer();
    let g = i.gateway("not-the-secret");
    let alice = i.token("alice-app");
    let answer = i.call(&alice, None, "initialize");
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(
        answer.header("www-authenticate").is_none(),
        "no challenge: the token may be good"
    );
    assert!(
        answer.body.contains("temporarily_unavailable"),
        "{}",
        answer.body
    );
    assert!(answer.body.contains("introspection"), "{}", answer.body);
    // Not remembered as refused: with the issuer back to answering, the same token is
    // asked about again (here it still refuses the gateway: 503 again, not 401).
    assert_eq!(i.call(&alice, None, "initialize").status, 503);
    assert!(g
        .sent_upstream()
        .iter()
        .all(|m| m["method"] != "initialize"));
    let said = g.stderr_text();
    assert!(!said.contains("not-the-secret") && !said.contains(&alice));
}
