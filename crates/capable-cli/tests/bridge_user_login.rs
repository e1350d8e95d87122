//! `"credentials": {"mode": "user"}`: the server behind's own OAuth login, done by
//! `capable bridge --listen --auth-issuer --config` on each caller's behalf, with real
//! parts: the callers' identity provider is oidc-provider (`tests/peers/oidc_issuer.mjs`),
//! and the server behind (`tests/peers/oidc_upstream.mjs`, a TypeScript SDK server whose
//! tool `whoami` answers whose token reached it) has an oidc-provider of its own, where
//! a person logs in on a form. The test is each caller's browser: it opens the URL the
//! gateway sent, fills in the login form, and follows the redirects back to the
//! gateway's callback, with the cookies each site set.
//!
//! Two callers (alice-app, bob-app) through one gateway at once: each is asked to log
//! in (`-32042` with the URL), each call then carries the caller's own upstream token;
//! a callback replayed (by the same browser, or another) is refused and stores nothing;
//! a caller that has not logged in sees the server's tools marked as needing
//! authorization; a token the server no longer knows asks the caller again, once; no
//! token is in what the gateway wrote.
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
use identity_support::browser::Browser;
use identity_support::upstream::Upstream;
use identity_support::{gateway_on, wanted, Gateway};
use listen_support::post;
use serde_json::{json, Value};

/// The gateway on `port` in front of `upstream` as `up` (its credentials the caller's
/// own login), and a local server.
fn gateway(port: u16, idp_port: u16, upstream: &Upstream) -> (Gateway, TempFile) {
    let file = config(upstream);
    let g = gateway_on(idp_port, port, &["--config", file.path()]);
    (g, file)
}

/// The config of the gateway in front of `upstream` (see [`gateway`]).
fn config(upstream: &Upstream) -> TempFile {
    let oauth = json!({"clientId": "gateway-upstream", "clientSecret": "upstream-secret"});
    let config = json!({"mcpServers": {"up": {"url": upstream.peer.mcp, "oauth": oauth,
        "credentials": {"mode": "user"}}, "local": many_entry("no-resources", &[])}});
    TempFile::new("user-login.json", &config.to_string())
}

/// `method` with `params` in the session `id`, as `token`'s caller.
fn ask(g: &Gateway, token: &str, id: &str, method: &str, params: Value) -> Value {
    let bearer = format!("Bearer {token}");
    let answer = post(
        g.port,
        &[("Authorization", &bearer), ("Mcp-Session-Id", id)],
        json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()
}

fn whoami(g: &Gateway, token: &str, id: &str) -> Value {
    ask(
        g,
        token,
        id,
        "tools/call",
        json!({"name": "up__whoami", "arguments": {}}),
    )
}

/// `up__whoami` as a 2026-07-28 request (no session) of `token`'s caller.
fn whoami_modern(g: &Gateway, token: &str) -> Value {
    let bearer = format!("Bearer {token}");
    let params = json!({"name": "up__whoami", "arguments": {}, "_meta": Bridge::meta(json!({}))});
    let headers = [
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "up__whoami"),
    ];
    let answer = post(
        g.port,
        &headers,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}),
    );
    answer.json()
}

/// The login URL of a `-32042` answer.
fn login_url(answer: &Value, port: u16) -> String {
    assert_eq!(answer["error"]["code"], -32042, "{answer}");
    let asked = &answer["error"]["data"]["elicitations"][0];
    assert_eq!(asked["mode"], "url", "{answer}");
    assert!(asked["elicitationId"]
        .as_str()
        .is_some_and(|i| !i.is_empty()));
    let url = asked["url"].as_str().unwrap().to_owned();
    let start = format!("http://127.0.0.1:{port}/oauth/start?login=");
    assert!(url.starts_with(&start), "{url}");
    url
}

/// Whose token reached the server, as `up__whoami` said.
fn subject(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no answer: {answer}"))
        .to_owned()
}

#[test]
fn each_caller_logs_in_as_itself_a_replayed_callback_stores_nothing_and_a_refused_token_asks_again_once(
) {
    if !wanted() {
        return;
    }
    let (idp_port, port) = (free_port(), free_port());
    let mut upstream = Upstream::with_login(
        idp_port,
        &format!("http://127.0.0.1:{port}/oauth/callback"),
        3600,
    );
    let (g, _file) = gateway(port, idp_port, &upstream);
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));
    let (hers, his) = (g.session(&alice), g.session(&bob));

    // Neither has logged in: each call is answered with a login URL of the caller's
    // own, and nothing reached the server with a token.
    let her_url = login_url(&whoami(&g, &alice, &hers), port);
    let his_url = login_url(&whoami(&g, &bob, &his), port);
    assert_ne!(her_url, his_url);
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());
    // Asked again before logging in: the same login, not a new one.
    assert_eq!(login_url(&whoami(&g, &alice, &hers), port), her_url);

    // Alice logs in as alice at the server's own login page.
    let mut her_browser = Browser::default();
    let (done, callback) = her_browser.log_in(&her_url, "alice");
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Logged in"), "{}", done.body);
    assert!(!done.body.contains("code="));

    // Her callback replayed: by another browser, and by hers — refused, nothing stored.
    let (other, _) = Browser::default().go("GET", &callback, "");
    assert_eq!(other.status, 400, "{}", other.body);
    let (again, _) = her_browser.go("GET", &callback, "");
    assert_eq!(again.status, 400, "{}", again.body);
    // Her login link opens once.
    let (reopened, _) = Browser::default().go("GET", &her_url, "");
    assert_eq!(reopened.status, 400, "{}", reopened.body);

    // Her call now carries her own upstream token; bob still has none.
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice");
    assert_eq!(login_url(&whoami(&g, &bob, &his), port), his_url);
    // 2026-07-28 requests (no session), where -32042 is no more: hers go through as
    // her; his get the bridge's own -32010, naming the same login.
    assert_eq!(subject(&whoami_modern(&g, &alice)), "user:alice");
    let his_modern = whoami_modern(&g, &bob);
    assert_eq!(his_modern["error"]["code"], -32010, "{his_modern}");
    assert_eq!(
        his_modern["error"]["data"]["elicitations"][0]["url"],
        his_url.as_str()
    );

    // Bob has not logged in: he sees the server's tools, marked as needing his login.
    ask(&g, &alice, &hers, "tools/list", json!({}));
    let listed = ask(&g, &bob, &his, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let mark = tools
        .iter()
        .find(|t| t["name"] == "up__whoami")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        mark["_meta"]["capable/authorization"]["required"], true,
        "{mark}"
    );
    let hers_listed = ask(&g, &alice, &hers, "tools/list", json!({}));
    let her_tool = hers_listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "up__whoami")
        .cloned()
        .unwrap();
    assert!(
        her_tool["_meta"].get("capable/authorization").is_none(),
        "{her_tool}"
    );

    // Bob logs in as bob; each call carries its caller's own token.
    let (done, _) = Browser::default().log_in(&his_url, "bob");
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(subject(&whoami(&g, &bob, &his)), "user:bob");
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice");

    // The server forgets every token (a restart): her refused token (no refresh helps)
    // asks her to log in again — one new login, not a loop.
    let before = upstream.seen().len();
    upstream.peer.restart();
    let anew = login_url(&whoami(&g, &alice, &hers), port);
    assert_ne!(anew, her_url);
    let tried = upstream.seen().len() - before;
    assert!((1..=2).contains(&tried), "{tried} requests to the server");
    assert_eq!(login_url(&whoami(&g, &alice, &hers), port), anew);
    assert_eq!(
        upstream.seen().len() - before,
        tried,
        "asked nothing more of the server"
    );
    let (done, _) = Browser::default().log_in(&anew, "alice");
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice");

    // No token — a caller's, or one the server was sent — in what the gateway wrote.
    let written = g.bridge.stderr_text();
    for token in [alice.clone(), bob.clone()]
        .into_iter()
        .chain(upstream.seen())
    {
        assert!(!written.contains(&token), "a token in the gateway's output");
    }
    assert!(!written.contains("code="), "a code in the gateway's output");
}

#[test]
fn with_a_seal_key_a_callers_login_is_kept_sealed_across_a_restart_and_refreshed_when_due() {
    if !wanted() {
        return;
    }
    let (idp_port, port) = (free_port(), free_port());
    // Tokens of 2 s: due for a refresh in the second half of their life.
    let callback = format!("http://127.0.0.1:{port}/oauth/callback");
    let upstream = Upstream::with_login(idp_port, &callback, 2);
    let file = config(&upstream);
    let key = TempFile::new("user-login-seal.key", &"5e".repeat(32));
    let kept = TempFile::new("user-login-tokens.sealed", "");
    let behind = [
        "--seal-key-file",
        key.path(),
        "--user-tokens",
        kept.path(),
        "--config",
        file.path(),
    ];
    let mut g = gateway_on(idp_port, port, &behind);
    let alice = g.token("alice-app");
    let hers = g.session(&alice);
    let url = login_url(&whoami(&g, &alice, &hers), port);
    let (done, _) = Browser::default().log_in(&url, "alice");
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice");

    // Her token is refreshed when due (the refresh token rotating), each call as her.
    // (The authorization server's own clock: the one wait of this test.)
    let sealed_at_login = std::fs::read_to_string(kept.path()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(subject(&whoami(&g, &alice, &hers)), "user:alice");
    let seen = upstream.seen();
    assert!(
        seen.len() >= 2 && seen[seen.len() - 1] != seen[seen.len() - 2],
        "{seen:?}"
    );
    // Counted for the operator: the server's tokens refreshed, none failed.
    let bearer = format!("Bearer {alice}");
    let headers = [("Authorization", bearer.as_str())];
    let scrape = listen_support::http_at(g.port, "GET", "/metrics", &headers, "");
    let refreshed = scrape.body.lines().find_map(|l| {
        let n = l.strip_prefix(
            r#"capable_bridge_upstream_token_refreshes_total{server="up",outcome="ok"} "#,
        );
        n?.parse::<u64>().ok()
    });
    assert!(refreshed >= Some(1), "{}", scrape.body);
    let failed = r#"upstream_token_refreshes_total{server="up",outcome="failed"}"#;
    assert!(!scrape.body.contains(failed), "{}", scrape.body);

    // The file follows the refresh, and holds her token sealed: nothing of it reads
    // without the key.
    let mut sealed = sealed_at_login.clone();
    for _ in 0..100 {
        sealed = std::fs::read_to_string(kept.path()).unwrap();
        if sealed != sealed_at_login {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_ne!(
        sealed, sealed_at_login,
        "the refreshed token was not written"
    );
    assert_eq!(sealed.lines().count(), 1, "{sealed}");
    for token in upstream.seen() {
        assert!(!sealed.contains(&token), "a token in the clear");
    }
    assert!(!sealed.contains("alice"));

    // After a restart, her new session goes as her, asking her nothing.
    g.restart(&behind);
    let read = g.bridge.audit_until(|l| l["event"] == "user_tokens");
    assert_eq!(read["tokens"], 1, "{read}");
    let again = g.session(&alice);
    assert_eq!(subject(&whoami(&g, &alice, &again)), "user:alice");
}
