//! The gateway as a protected resource of a real identity provider, for the tests of
//! who is calling (`bridge_identity.rs`, `bridge_policy.rs`): oidc-provider
//! (`tests/peers/oidc_issuer.mjs`) on a free port, `capable bridge --listen
//! --auth-issuer` in front of a server, and tokens of its two clients.

#![allow(dead_code)]

pub mod browser;
pub mod upstream;

use serde_json::{json, Value};

use super::bridge_support::Bridge;
use super::common::oauth::{free_port, node, Peer, NODE22};
use super::common::peers_wanted;
use super::listen_support::{post, Http};

const OIDC: &str = ".peers/oidc/node_modules/oidc-provider/package.json";

/// The identity provider, the gateway in front of the fixture, and where they are.
pub struct Gateway {
    _issuer: Peer,
    pub issuer: String,
    pub bridge: Bridge,
    pub port: u16,
    pub url: String,
}

/// oidc-provider for a gateway on a free port, and the gateway (`--trace`, so that
/// what reaches the server behind shows) in front of the fixture of `profile`,
/// requiring `mcp:tools`.
pub fn gateway(profile: &str) -> Gateway {
    let server = super::common::fixture(profile);
    let mut behind = vec!["--"];
    behind.extend(server.iter().map(String::as_str));
    gateway_to(&behind)
}

/// The same in front of what `behind` says (`-- COMMAND…`, `--config FILE`).
pub fn gateway_to(behind: &[&str]) -> Gateway {
    gateway_on(free_port(), free_port(), behind)
}

/// The same, the identity provider on `as_port` and the gateway on `port` (for a
/// server behind that must know them before they start).
pub fn gateway_on(as_port: u16, port: u16, behind: &[&str]) -> Gateway {
    let url = format!("http://127.0.0.1:{port}/mcp");
    let issuer = format!("http://127.0.0.1:{as_port}");
    let peer = Peer::start(
        vec![
            node(),
            "tests/peers/oidc_issuer.mjs".into(),
            as_port.to_string(),
            url.clone(),
        ],
        vec![as_port],
        url.clone(),
        issuer.clone(),
    );
    let bridge = start_gateway(&issuer, port, behind);
    Gateway {
        _issuer: peer,
        issuer,
        bridge,
        port,
        url,
    }
}

/// The gateway on `port`, callers of `issuer`, in front of what `behind` says.
fn start_gateway(issuer: &str, port: u16, behind: &[&str]) -> Bridge {
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut args = vec![
        "--trace",
        "--listen",
        &listen,
        "--auth-issuer",
        issuer,
        "--public-url",
        &url,
        "--auth-scope",
        "mcp:tools",
    ];
    args.extend_from_slice(behind);
    let bridge = Bridge::start(&args);
    bridge.audit_until(|l| l["event"] == "listening");
    bridge
}

impl Gateway {
    /// The gateway stopped (by its pid, and waited for) and started again on its port,
    /// in front of what `behind` says; the identity provider stays.
    pub fn restart(&mut self, behind: &[&str]) {
        let pid = self.bridge.pid().to_string();
        let _ = std::process::Command::new("kill").arg(&pid).status();
        for _ in 0..500 {
            if std::net::TcpListener::bind(("127.0.0.1", self.port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.bridge = start_gateway(&self.issuer, self.port, behind);
    }

    /// A client credentials token of `client` (`alice-app`, `bob-app`) for the gateway.
    pub fn token(&self, client: &str) -> String {
        let secret = format!("{}-secret", client.trim_end_matches("-app"));
        let basic = base64(&format!("{client}:{secret}"));
        let body = format!(
            "grant_type=client_credentials&scope=mcp%3Atools&resource={}",
            self.url.replace(':', "%3A").replace('/', "%2F")
        );
        let (status, answer) = super::common::oauth::post(
            &format!("{}/token", self.issuer),
            &[("Authorization", &format!("Basic {basic}"))],
            "application/x-www-form-urlencoded",
            &body,
        );
        assert_eq!(status, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        answer["access_token"].as_str().unwrap().to_owned()
    }

    /// A token the provider's key (`issuer`), another key under its `kid` (`other`) or
    /// none (`none`) signed: `claims` over good ones, `header` over an access token's.
    pub fn mint(&self, key: &str, claims: Value, header: Value) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut all = json!({"iss": self.issuer, "aud": self.url, "sub": "mallory",
            "client_id": "mallory-app", "scope": "mcp:tools", "iat": now, "exp": now + 600});
        for (k, v) in claims.as_object().unwrap() {
            all[k] = v.clone();
        }
        let request = json!({"claims": all, "header": header, "key": key});
        let (status, token) = super::common::oauth::post(
            &format!("{}/test/mint", self.issuer),
            &[],
            "application/json",
            &request.to_string(),
        );
        assert_eq!(status, 200, "{token}");
        token
    }

    /// A legacy session opened with `token`: its `Mcp-Session-Id`.
    #[track_caller]
    pub fn session(&self, token: &str) -> String {
        let opened = self.initialize(token);
        assert_eq!(opened.status, 200, "{}", opened.body);
        opened.header("mcp-session-id").unwrap().to_owned()
    }

    pub fn initialize(&self, token: &str) -> Http {
        let bearer = format!("Bearer {token}");
        post(
            self.port,
            &[("Authorization", &bearer)],
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "h", "version": "1"}}}),
        )
    }
}

pub fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

pub fn wanted() -> bool {
    peers_wanted(&[OIDC, NODE22])
}

/// The challenge a refused request carries, as one string.
pub fn challenge(answer: &Http) -> String {
    answer
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("no challenge: {} {}", answer.status, answer.body))
        .to_owned()
}
