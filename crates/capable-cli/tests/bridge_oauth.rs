//! `capable bridge --url` in front of OAuth-guarded servers, as a host starts it: with
//! no terminal. The guards are the authorization servers the official SDKs ship: the
//! TypeScript SDK's `mcpAuthRouter` (`tests/peers/ts_oauth.mjs`), the Python SDK's
//! `mcp.server.auth` (`tests/peers/python_oauth.py`) and FastMCP's own
//! (`tests/peers/fastmcp_oauth.py`). Without a stored token the
//! host's first request is answered with an error that says to run `capable auth
//! login`; once that was run elsewhere, the same bridge connects on the host's next
//! request with the stored token, and no secret of the store is ever shown.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;

use bridge_support::Bridge;
use common::oauth::{at, free_port, node, secrets, Peer, Scratch, NODE22};
use common::peers_wanted;
use serde_json::json;

const SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk/package.json";
const PYTHON: &str = ".peers/venv/bin/python";
const FASTMCP: &str = ".peers/fastmcp/bin/python";

/// A server of `command` (its port appended) guarding `/mcp`.
fn peer(mut command: Vec<String>) -> Peer {
    let port = free_port();
    command.push(port.to_string());
    Peer::start(
        command,
        vec![port],
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://127.0.0.1:{port}/"),
    )
}

/// The host's journey through a bridge to `peer`, whose server calls itself `name`.
fn log_in_once_and_the_same_bridge_connects(peer: &Peer, name: &str) {
    let dir = Scratch::new(&format!("bridge-{name}"));
    let store = dir.store();
    let mut b = Bridge::start(&["--token-store", &store, "--url", &peer.mcp]);
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
    at("headless", &store, &["auth", "login"], &peer.mcp).expect_code(0);
    let answer = b.request(1, "initialize", initialize);
    assert_eq!(answer["result"]["serverInfo"]["name"], name, "{answer}");
    b.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let echoed = b.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "guarded"}}),
    );
    let text = echoed["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("guarded"), "{echoed}");

    // No secret of the store is anywhere in what the bridge wrote.
    let secrets = secrets(&store);
    assert!(!secrets.is_empty());
    let stderr = b.stderr_text();
    for secret in &secrets {
        assert!(!stderr.contains(secret.as_str()), "{stderr}");
        assert!(!echoed.to_string().contains(secret.as_str()));
        assert!(!answer.to_string().contains(secret.as_str()));
    }
    assert_eq!(b.close(), Some(0));
}

#[test]
fn behind_the_typescript_sdks_authorization_server() {
    if !peers_wanted(&[SDK, NODE22]) {
        return;
    }
    let p = peer(vec![node(), "tests/peers/ts_oauth.mjs".into()]);
    log_in_once_and_the_same_bridge_connects(&p, "capable-ts-oauth-peer");
}

#[test]
fn behind_the_python_sdks_authorization_server() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let p = peer(vec![PYTHON.into(), "tests/peers/python_oauth.py".into()]);
    log_in_once_and_the_same_bridge_connects(&p, "capable-python-oauth-peer");
}

#[test]
fn behind_fastmcps_authorization_server() {
    if !peers_wanted(&[FASTMCP]) {
        return;
    }
    let p = peer(vec![FASTMCP.into(), "tests/peers/fastmcp_oauth.py".into()]);
    log_in_once_and_the_same_bridge_connects(&p, "capable-fastmcp-oauth-peer");
}
