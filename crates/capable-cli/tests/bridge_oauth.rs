//! `capable bridge --url` in front of an OAuth-guarded server (oidc-provider guarding a
//! TypeScript SDK server, `tests/peers/oidc_guarded.mjs`), as a host starts it: with no
//! terminal. Without a stored token the host's first request is answered with an error
//! that says to run `capable auth login`; once that was run elsewhere, the same bridge
//! connects on the host's next request with the stored token, which it never shows.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use std::time::Duration;

use bridge_support::Bridge;
use common::servers::{guarded, NODE22, OIDC};
use common::{capable, peers_wanted};
use serde_json::json;

const SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk/package.json";

#[test]
fn without_a_token_the_host_is_told_to_log_in_and_after_the_login_the_same_bridge_connects() {
    if !peers_wanted(&[OIDC, SDK, NODE22]) {
        return;
    }
    let g = guarded(3600);
    let dir = std::env::temp_dir().join(format!("capable-bridge-oauth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("credentials.json").display().to_string();
    let mut b = Bridge::start(&["--token-store", &store, "--url", &g.mcp]);
    let initialize = json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "desktop-app", "version": "1"}});
    let refused = b.request(0, "initialize", initialize.clone());
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    assert_eq!(refused["error"]["data"]["kind"], "authorization_required");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("capable auth login"), "{message}");
    let failed = b.audit_until(|l| l["state"] == "failed");
    assert_eq!(failed["kind"], "authorization_required");

    // The user logs in elsewhere (here: headless), into the same store.
    capable(
        &[
            "--token-store",
            &store,
            "auth",
            "login",
            "--url",
            &g.mcp,
            "--login",
            "headless",
        ],
        Duration::from_secs(60),
    )
    .expect_code(0);
    let answer = b.request(1, "initialize", initialize);
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "oidc-guarded",
        "{answer}"
    );
    b.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let echoed = b.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "guarded"}}),
    );
    assert_eq!(
        echoed["result"]["content"][0]["text"], "guarded",
        "{echoed}"
    );

    // The token is nowhere in what the bridge wrote.
    let token = capable(
        &["--token-store", &store, "auth", "token", "--url", &g.mcp],
        Duration::from_secs(30),
    );
    token.expect_code(0);
    let token = token.stdout.trim().to_owned();
    assert!(token.len() > 10);
    assert!(!b.stderr_text().contains(&token), "{}", b.stderr_text());
    assert!(!echoed.to_string().contains(&token) && !answer.to_string().contains(&token));
    assert_eq!(b.close(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
