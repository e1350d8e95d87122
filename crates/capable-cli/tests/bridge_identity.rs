//! `capable bridge --listen --auth-issuer --public-url`: the gateway as an OAuth 2.1
//! protected resource of a real identity provider (`tests/peers/oidc_issuer.mjs`:
//! oidc-provider issuing JWT access tokens for the gateway). A client that speaks the
//! MCP authorization specification — `capable` itself, the TypeScript and Python SDKs' clients —
//! logs in to the gateway with no gateway-specific step; a request without a good token
//! gets its `401` (or `403`) and nothing reaches the server behind; two callers at once
//! never see each other's sessions; the audit names the caller on every line of their
//! requests, and never holds a token. Everything binds 127.0.0.1; processes are stopped by PID.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "identity_support/mod.rs"]
mod identity_support;
#[path = "listen_support/mod.rs"]
mod listen_support;

use bridge_support::Bridge;
use common::oauth::{node, run, Scratch};
use common::peers_wanted;
use identity_support::{challenge, gateway, wanted};
use listen_support::{http, post};
use serde_json::{json, Value};

const SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk/package.json";

#[test]
fn capable_logs_in_to_the_gateway_through_its_metadata_and_is_served_as_itself() {
    if !wanted() {
        return;
    }
    let g = gateway("read-only");
    // Without a token: 401, pointing at the metadata, naming the scope.
    let bare = post(
        g.port,
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(bare.status, 401, "{}", bare.body);
    let metadata = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        g.port
    );
    assert_eq!(
        challenge(&bare),
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp:tools\"")
    );
    // A page of an allowed origin (here the gateway's own) may read the challenge.
    let origin = format!("http://127.0.0.1:{}", g.port);
    let page = post(
        g.port,
        &[("Origin", &origin)],
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(page.status, 401);
    assert_eq!(
        page.header("access-control-allow-origin"),
        Some(origin.as_str())
    );
    let exposed = page.header("access-control-expose-headers").unwrap_or("");
    assert!(exposed.contains("www-authenticate"), "{exposed}");
    let stream = http(g.port, "GET", &[], "", |_| false);
    assert_eq!(stream.status, 401, "every method of /mcp wants the token");
    let doc = metadata_at(&metadata);
    assert_eq!(doc["resource"], g.url.as_str());
    assert_eq!(doc["authorization_servers"], json!([g.issuer]));
    assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));

    // capable, as any client of the specification: discovery, registration, login.
    let dir = Scratch::new("gateway-login");
    let store = dir.store();
    let login = run(
        &[
            "--login",
            "headless",
            "--token-store",
            &store,
            "auth",
            "login",
            "--url",
            &g.url,
        ],
        &[],
    );
    login.expect_code(0);
    assert!(
        login.stderr.contains("scopes mcp:tools"),
        "{}",
        login.stderr
    );
    let read = run(
        &[
            "--login",
            "never",
            "--token-store",
            &store,
            "resources",
            "--url",
            &g.url,
        ],
        &[],
    );
    read.expect_code(0);
    assert!(read.stdout.contains("docs://"), "{}", read.stdout);
    // The server behind was started for that caller, and the audit says who it was.
    let ready = g
        .bridge
        .audit_until(|l| l["event"] == "state" && l["state"] == "ready");
    assert_eq!(ready["caller"]["sub"], "mcp-user");
    assert_eq!(ready["caller"]["iss"], g.issuer.as_str());
    assert!(ready["caller"]["clientId"].is_string());
    // No token of the store is in anything the gateway wrote.
    let said = g.bridge.stderr_text();
    for secret in common::oauth::secrets(&store) {
        assert!(!said.contains(&secret), "a secret of the store was written");
    }
}

/// The metadata document at `url` (a GET, as a browser client may: any origin).
fn metadata_at(url: &str) -> Value {
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, path) = rest.split_once('/').unwrap();
    let port: u16 = port.parse().unwrap();
    let answer = listen_support::http_at(port, "GET", &format!("/{path}"), &[], "");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
    answer.json()
}

#[test]
fn bad_tokens_are_refused_with_their_reason_and_nothing_reaches_the_server() {
    if !wanted() {
        return;
    }
    let g = gateway("read-only");
    let good = g.mint("issuer", json!({}), json!({}));
    let cases = [
        (
            "wrong audience",
            g.mint(
                "issuer",
                json!({"aud": "http://127.0.0.1:1/mcp"}),
                json!({}),
            ),
        ),
        (
            "expired",
            g.mint("issuer", json!({"exp": 1_000_000_000}), json!({})),
        ),
        (
            "another issuer",
            g.mint("issuer", json!({"iss": "http://127.0.0.1:1"}), json!({})),
        ),
        ("alg none", g.mint("none", json!({}), json!({}))),
        (
            "another key, the same kid",
            g.mint("other", json!({}), json!({})),
        ),
        (
            "an unknown kid",
            g.mint("other", json!({}), json!({"kid": "nobody"})),
        ),
        (
            "an ID token",
            g.mint("issuer", json!({}), json!({"typ": "JWT"})),
        ),
        (
            "a forged signature",
            format!("{}x", &good[..good.len() - 1]),
        ),
        ("claims changed", {
            let parts: Vec<&str> = good.split('.').collect();
            let other = g.mint("issuer", json!({"sub": "admin"}), json!({}));
            format!(
                "{}.{}.{}",
                parts[0],
                other.split('.').nth(1).unwrap(),
                parts[2]
            )
        }),
        ("oversized", format!("{good}{}", "A".repeat(10_000))),
        ("opaque", "an-opaque-token".to_owned()),
    ];
    for (case, token) in &cases {
        let answer = g.initialize(token);
        assert_eq!(answer.status, 401, "{case}: {}", answer.body);
        let said = challenge(&answer);
        assert!(said.contains("error=\"invalid_token\""), "{case}: {said}");
        assert_eq!(answer.json()["error"], "invalid_token", "{case}");
        assert!(answer.header("mcp-session-id").is_none(), "{case}");
    }
    // A good token without the scope: 403, naming it.
    let scopeless = g.mint("issuer", json!({"scope": "openid"}), json!({}));
    let answer = g.initialize(&scopeless);
    assert_eq!(answer.status, 403, "{}", answer.body);
    let said = challenge(&answer);
    assert!(
        said.contains("scope=\"mcp:tools\", error=\"insufficient_scope\""),
        "{said}"
    );
    // Nothing reached the server behind; none was even started.
    assert!(
        g.bridge.sent_upstream().is_empty(),
        "{}",
        g.bridge.stderr_text()
    );
    // The good one is served, after all of them.
    assert_eq!(g.initialize(&good).status, 200);
    assert_eq!(g.bridge.sent_upstream_count_until("initialize", 1), 1);
    // Each refusal was audited with its reason; no token anywhere in what was written.
    let refused = g.bridge.audit_count_until(1, |l| l["event"] == "refused");
    assert!(refused >= 1);
    let said = g.bridge.stderr_text();
    for (case, token) in cases.iter().filter(|(_, t)| t.len() > 20) {
        let signature = token.rsplit('.').next().unwrap_or(token);
        assert!(
            signature.len() < 20 || !said.contains(signature),
            "{case}: the token was written"
        );
    }
    assert!(!said.contains(&good), "the good token was written");
    // /metrics wants an access token as /mcp does, and counted every refusal; the
    // probes want none (a load balancer has no token).
    let at = |path: &str, token: Option<&str>| {
        let bearer = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .iter()
            .map(|b| ("Authorization", b.as_str()))
            .collect();
        listen_support::http_at(g.port, "GET", path, &headers, "")
    };
    assert_eq!(at("/metrics", None).status, 401);
    assert_eq!(at("/metrics", Some("an-opaque-token")).status, 401);
    assert_eq!(at("/healthz", None).status, 200);
    assert_eq!(at("/readyz", None).status, 200);
    let scrape = at("/metrics", Some(&good));
    assert_eq!(scrape.status, 200, "{}", scrape.body);
    let refusals = scrape
        .body
        .lines()
        .find_map(|l| l.strip_prefix(r#"capable_bridge_refusals_total{reason="access_token"} "#))
        .and_then(|n| n.parse::<usize>().ok());
    // The bad tokens, the scopeless one, and the two scrapes before.
    assert_eq!(refusals, Some(cases.len() + 3), "{}", scrape.body);
}

#[test]
fn two_callers_never_share_a_session_or_a_server() {
    if !wanted() {
        return;
    }
    let g = gateway("read-only");
    let (alice, bob) = (g.token("alice-app"), g.token("bob-app"));
    let opened = g.initialize(&alice);
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let as_who = |token: &str, method: &str, id: i64| {
        let bearer = format!("Bearer {token}");
        post(
            g.port,
            &[("Authorization", &bearer), ("Mcp-Session-Id", &session)],
            json!({"jsonrpc": "2.0", "id": id, "method": method}),
        )
    };
    // Bob presenting Alice's session id: as if there were none.
    let stolen = as_who(&bob, "resources/list", 2);
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    assert!(!stolen.body.contains("docs://"));
    let bearer = format!("Bearer {bob}");
    let deleted = http(
        g.port,
        "DELETE",
        &[("Authorization", &bearer), ("Mcp-Session-Id", &session)],
        "",
        |_| false,
    );
    assert_eq!(deleted.status, 404, "Bob cannot end Alice's session");
    // Alice's session is hers, and still there.
    let mine = as_who(&alice, "resources/list", 3);
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert!(mine.body.contains("docs://"), "{}", mine.body);

    // 2026-07-28 callers declaring the same: one server behind each.
    let modern = |token: &str| {
        let bearer = format!("Bearer {token}");
        let meta = Bridge::meta(json!({}));
        post(
            g.port,
            &[
                ("Authorization", &bearer),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "resources/list"),
            ],
            json!({"jsonrpc": "2.0", "id": 9, "method": "resources/list", "params": {"_meta": meta}}),
        )
    };
    assert_eq!(modern(&alice).status, 200);
    assert_eq!(modern(&bob).status, 200);
    assert_eq!(modern(&alice).status, 200);
    let ready = |sub: &str| {
        let sub = sub.to_owned();
        g.bridge.audit_count_until(0, move |l| {
            l["event"] == "state" && l["state"] == "ready" && l["caller"]["sub"] == sub.as_str()
        })
    };
    g.bridge
        .audit_count_until(3, |l| l["event"] == "state" && l["state"] == "ready");
    assert_eq!(
        ready("alice-app"),
        2,
        "her session and her 2026-07-28 server"
    );
    assert_eq!(ready("bob-app"), 1, "his own 2026-07-28 server, not hers");
    // Every line of a caller's requests names them; none names a token.
    let said = g.bridge.stderr_text();
    assert!(!said.contains(&alice) && !said.contains(&bob));
}

/// The TypeScript SDK's client as a confidential client (its
/// `ClientCredentialsProvider`): from the gateway's 401 to its metadata, the issuer,
/// a token for the gateway, and the calls — no step of the gateway's own.
#[test]
fn the_typescript_sdk_client_finds_the_issuer_through_the_gateway_and_is_served() {
    if !wanted() || !peers_wanted(&[SDK]) {
        return;
    }
    let g = gateway("read-only");
    let out = std::process::Command::new(node())
        .args([
            "tests/peers/ts_gateway_client.mjs",
            &g.url,
            "bob-app",
            "bob-secret",
            "mcp:tools",
            &g.issuer,
        ])
        .current_dir(common::workspace())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen["resources"],
        json!(["docs://manual/current", "docs://manual/archive"])
    );
    let ready = g
        .bridge
        .audit_until(|l| l["event"] == "state" && l["state"] == "ready");
    assert_eq!(ready["caller"]["sub"], "bob-app");
    assert_eq!(ready["caller"]["clientId"], "bob-app");
}

/// The Python SDK's client as a person's host (its `OAuthClientProvider`, the script the
/// person): from the gateway's 401 to its metadata, the issuer, dynamic registration,
/// the authorization code flow with PKCE, a token for the gateway, and the calls — no
/// step of the gateway's own; the gateway serves it as itself (the person the issuer
/// logged in, through the client it registered).
#[test]
fn the_python_sdk_client_logs_in_to_the_gateway_as_a_person_and_is_served_as_itself() {
    if !wanted() || !peers_wanted(&[common::servers::PYTHON]) {
        return;
    }
    let g = gateway("read-only");
    let out = std::process::Command::new(common::servers::path(common::servers::PYTHON))
        .args(["tests/peers/py_gateway_client.py", &g.url, "mcp:tools"])
        .current_dir(common::workspace())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(seen.get("error").is_none(), "{seen}");
    assert_eq!(seen["issuer"], g.issuer.as_str(), "{seen}");
    assert_eq!(seen["registered"], true, "{seen}");
    assert_eq!(
        seen["resources"],
        json!(["docs://manual/current", "docs://manual/archive"])
    );
    let ready = g
        .bridge
        .audit_until(|l| l["event"] == "state" && l["state"] == "ready");
    assert_eq!(ready["caller"]["sub"], "mcp-user", "{ready}");
    let client = ready["caller"]["clientId"].as_str().unwrap_or("");
    assert!(!client.is_empty() && !client.ends_with("-app"), "{ready}");
}

/// The MCP Inspector's CLI, headless: with `MCP_AUTO_OPEN_ENABLED` it does its
/// interactive OAuth login with no TTY (dynamic registration, the code flow with PKCE
/// and `resource`, its own loopback callback listener), printing the authorization
/// URL; the test is the person's browser, which opens it and follows the identity
/// provider's redirects (its interaction pages approve at once) back to the Inspector's
/// callback. Its home is a scratch folder; an `xdg-open` that does nothing stands
/// first on its `PATH`, so that no real browser is ever opened.
#[test]
fn the_mcp_inspector_cli_logs_in_to_the_gateway_headless_and_is_served_as_itself() {
    use std::io::{BufRead, BufReader};
    const INSPECTOR: &str =
        ".peers/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js";
    if !wanted() || !peers_wanted(&[INSPECTOR]) {
        return;
    }
    let g = gateway("read-only");
    let home = Scratch::new("inspector-home");
    let bin = home.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opener = bin.join("xdg-open");
    std::fs::write(&opener, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let callback = format!(
        "http://127.0.0.1:{}/oauth/callback",
        common::oauth::free_port()
    );
    let mut inspector = std::process::Command::new(node())
        .args([INSPECTOR, "--cli", &g.url, "--method", "resources/list"])
        .args(["--callback-url", &callback])
        .env("HOME", &home.0)
        .env("PATH", path)
        .env("MCP_AUTO_OPEN_ENABLED", "true")
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .current_dir(common::workspace())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The person: the URL the Inspector printed, opened in a browser. Its stderr is
    // read to the end (a closed pipe would end it).
    let stderr = BufReader::new(inspector.stderr.take().unwrap());
    let (tx, said) = std::sync::mpsc::channel();
    let reading = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let url = said
        .iter()
        .find_map(|line| Some(line.split_once("Please navigate to: ")?.1.trim().to_owned()));
    let Some(url) = url else {
        let _ = inspector.kill();
        panic!("no authorization URL");
    };
    assert!(url.starts_with(&format!("{}/auth?", g.issuer)), "{url}");
    let mut browser = identity_support::browser::Browser::default();
    let (done, at) = browser.go("GET", &url, "");
    assert!(at.starts_with(&callback), "{at}");
    assert_eq!(done.status, 200, "{}", done.body);
    let out = inspector.wait_with_output().unwrap();
    let _ = reading.join();
    let rest: Vec<String> = said.try_iter().collect();
    assert!(out.status.success(), "{rest:?}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let uris: Vec<&Value> = seen["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["uri"])
        .collect();
    assert_eq!(uris, ["docs://manual/current", "docs://manual/archive"]);
    let ready = g
        .bridge
        .audit_until(|l| l["event"] == "state" && l["state"] == "ready");
    assert_eq!(ready["caller"]["sub"], "mcp-user", "{ready}");
}

/// The Python SDK's own authorization server (`mcp.server.auth`,
/// `tests/peers/python_oauth.py`) cannot be the gateway's issuer: its metadata (RFC
/// 8414) names no `jwks_uri` (its access tokens are opaque) and no introspection
/// endpoint (the SDK verifies its tokens inside its own process only). The gateway
/// refuses to start in front of it, saying which, instead of taking callers it could
/// not verify.
#[test]
fn the_python_sdks_authorization_server_is_refused_as_the_gateways_issuer_saying_why() {
    if !peers_wanted(&[common::servers::PYTHON]) {
        return;
    }
    let (as_port, port) = (common::oauth::free_port(), common::oauth::free_port());
    let issuer = format!("http://127.0.0.1:{as_port}");
    let _sdk = common::oauth::Peer::start(
        vec![
            common::servers::path(common::servers::PYTHON),
            "tests/peers/python_oauth.py".into(),
            as_port.to_string(),
        ],
        vec![as_port],
        format!("{issuer}/mcp"),
        issuer.clone(),
    );
    let (listen, url) = (
        format!("127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}/mcp"),
    );
    let fixture = common::fixture("read-only");
    let introspecting = ["--auth-client-id", "gateway", "--auth-client-secret", "s"];
    for (more, why) in [
        (&[][..], "its metadata names no jwks_uri"),
        (
            &introspecting[..],
            "its metadata names no introspection_endpoint",
        ),
    ] {
        let mut args = vec!["bridge", "--listen", &listen, "--auth-issuer", &issuer];
        args.extend_from_slice(&["--public-url", &url]);
        args.extend_from_slice(more);
        args.push("--");
        args.extend(fixture.iter().map(String::as_str));
        let refused = run(&args, &[]);
        assert_ne!(refused.code, Some(0), "{refused:?}");
        assert!(refused.stderr.contains(why), "{}", refused.stderr);
    }
}
