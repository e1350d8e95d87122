//! `capable` against the authorization servers the official SDKs ship, guarding real
//! MCP servers: the Python SDK's (`mcp.server.auth`, `tests/peers/python_oauth.py`),
//! FastMCP's in-memory provider (`tests/peers/fastmcp_oauth.py`) and the TypeScript
//! SDK's `mcpAuthRouter` (`tests/peers/ts_oauth.mjs`). Each walks the whole journey of
//! `common/journey.rs` with short-lived, rotating tokens; then what each server does
//! its own way: a login form, a pre-registered confidential client with a fixed
//! redirect URI, a server that rejects `resource`, one that wants an extra
//! authorization parameter, bad input. Everything binds 127.0.0.1; servers are
//! stopped by PID.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

mod common;

use common::journey::journey;
use common::oauth::{at, browse, free_port, interactive, node, run, says, Peer, Scratch};
use common::peers_wanted;

const PYTHON: &str = ".peers/venv/bin/python";
const FASTMCP: &str = ".peers/fastmcp/bin/python";
const SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk/package.json";
const NODE22: &str = common::oauth::NODE22;

/// The Python SDK's server on a free port, with `extra` arguments.
fn python(extra: &[&str]) -> Peer {
    let port = free_port();
    let mut command = vec![
        PYTHON.to_owned(),
        "tests/peers/python_oauth.py".to_owned(),
        port.to_string(),
    ];
    command.extend(extra.iter().map(|s| s.to_string()));
    Peer::start(
        command,
        vec![port],
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://127.0.0.1:{port}"),
    )
}

#[test]
fn the_python_sdks_authorization_server_through_a_whole_journey() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let mut peer = python(&["--ttl", "3"]);
    journey(&mut peer, "python");
}

#[test]
fn fastmcps_in_memory_provider_through_a_whole_journey() {
    if !peers_wanted(&[FASTMCP]) {
        return;
    }
    let port = free_port();
    let mut peer = Peer::start(
        vec![
            FASTMCP.into(),
            "tests/peers/fastmcp_oauth.py".into(),
            port.to_string(),
            "3".into(),
        ],
        vec![port],
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://127.0.0.1:{port}/"),
    );
    peer.expiry_drops_refresh = true;
    journey(&mut peer, "fastmcp");
}

/// The TypeScript SDK's server on a free port, tokens living `ttl` seconds, and a
/// parameter its /authorize insists on, if any.
fn typescript(ttl: &str, required: Option<&str>) -> Peer {
    let port = free_port();
    let mut command = vec![node(), "tests/peers/ts_oauth.mjs".into(), port.to_string()];
    command.push(ttl.into());
    command.extend(required.map(str::to_owned));
    Peer::start(
        command,
        vec![port],
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://127.0.0.1:{port}/"),
    )
}

#[test]
fn the_typescript_sdks_auth_router_through_a_whole_journey() {
    if !peers_wanted(&[SDK, NODE22]) {
        return;
    }
    let mut peer = typescript("2", None);
    journey(&mut peer, "typescript");
}

/// A login form: headless cannot pass it and says so; the person (the scripted
/// browser) signs in, through the paste login and through `$BROWSER`. A confidential
/// client pre-registered with `client_secret_post` and a fixed redirect URI on
/// `localhost` logs in through the browser at that exact address; with a wrong
/// secret it is refused in the server's words.
#[test]
fn the_python_sdks_login_form_and_a_pre_registered_confidential_client() {
    if !peers_wanted(&[PYTHON, NODE22]) {
        return;
    }
    let callback = free_port();
    let redirect = format!("http://localhost:{callback}/oauth/callback");
    let peer = python(&[
        "--login-form",
        "--client",
        "pre-registered",
        "pre-secret-value",
        "client_secret_post",
        &redirect,
    ]);
    let dir = Scratch::new("python-form");
    let s = dir.store();
    let mcp = peer.mcp.as_str();
    let headless = at("headless", &s, &["auth", "login"], mcp);
    headless.expect_code(8);
    says(&headless, "needs a browser");
    let (pasted, asked) = interactive(
        &[
            "--login",
            "paste",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            mcp,
        ],
        "Open this URL",
        |url| browse(url, true),
    );
    pasted.expect_code(0);
    assert!(asked, "the login form needs the person");
    says(&pasted, "Logged in");
    let browser = dir.browser();
    let env = [("BROWSER", browser.as_str())];
    let logged = run(
        &[
            "--login",
            "browser",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            mcp,
        ],
        &env,
    );
    logged.expect_code(0);
    at("never", &s, &["tools"], mcp).expect_code(0);

    let pre = dir.0.join("pre.json").display().to_string();
    let confidential = |secret: &str| {
        run(
            &[
                "--login",
                "browser",
                "--token-store",
                &pre,
                "--client-id",
                "pre-registered",
                "--client-secret",
                secret,
                "--token-endpoint-auth-method",
                "client_secret_post",
                "--redirect-uri",
                &redirect,
                "auth",
                "login",
                "--url",
                mcp,
            ],
            &env,
        )
    };
    let wrong = confidential("not-the-secret");
    wrong.expect_code(8);
    says(&wrong, "invalid_client (Invalid client_secret)");
    assert!(!wrong.stderr.contains("pre-secret-value") && !wrong.stderr.contains("not-the-secret"));
    let ok = confidential("pre-secret-value");
    ok.expect_code(0);
    says(
        &ok,
        &format!("redirect_uri=http%3A%2F%2Flocalhost%3A{callback}%2Foauth%2Fcallback"),
    );
    let stored = common::oauth::stored_token(&pre);
    assert_eq!(stored["client_id"], "pre-registered");
    assert_eq!(stored["client_auth"], "client_secret_post");
    // The refresh authenticates as the login did.
    common::oauth::age_token(&pre);
    let refreshed = at(
        "never",
        &pre,
        &[
            "--client-id",
            "pre-registered",
            "--client-secret",
            "pre-secret-value",
            "tools",
        ],
        mcp,
    );
    refreshed.expect_code(0);
    assert!(
        !refreshed.stderr.contains("refreshing the token failed"),
        "{}",
        refreshed.stderr
    );
}

/// An authorization server that rejects RFC 8707's `resource` refuses the login in
/// its own words (exit 8) until the entry leaves `resource` out.
#[test]
fn leaving_out_resource_for_a_server_that_rejects_it() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let peer = python(&["--reject-resource"]);
    let dir = Scratch::new("python-resource");
    let s = dir.store();
    let refused = at("headless", &s, &["auth", "login"], &peer.mcp);
    refused.expect_code(8);
    says(
        &refused,
        "invalid_request (the resource parameter is not supported)",
    );
    let config = dir.0.join("mcp.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"mcpServers": {{"s": {{"url": "{}", "oauth": {{"sendResource": false}}}}}}}}"#,
            peer.mcp
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let with = |login: &str, args: &[&str]| {
        let mut all = vec![
            "--login",
            login,
            "--token-store",
            &s,
            "--config",
            &config,
            "--server",
            "s",
        ];
        all.extend_from_slice(args);
        run(&all, &[])
    };
    with("headless", &["auth", "login"]).expect_code(0);
    with("never", &["tools"]).expect_code(0);
}

/// An authorization server that wants a parameter of its own (Auth0's `audience`):
/// refused in its words without it, logged in with `oauth.authorizationParams`; a
/// parameter the flow sets itself is a usage error.
#[test]
fn extra_authorization_parameters_a_provider_wants() {
    if !peers_wanted(&[SDK, NODE22]) {
        return;
    }
    let peer = typescript("3600", Some("audience=https://api.example"));
    let dir = Scratch::new("ts-audience");
    let s = dir.store();
    let refused = at("headless", &s, &["auth", "login"], &peer.mcp);
    refused.expect_code(8);
    says(&refused, "audience must be https://api.example");
    let config = dir.0.join("mcp.json");
    let write = |params: &str| {
        std::fs::write(
            &config,
            format!(r#"{{"mcpServers": {{"s": {{"url": "{}", "oauth": {{"authorizationParams": {params}}}}}}}}}"#, peer.mcp),
        )
        .unwrap();
    };
    let config_path = config.display().to_string();
    let login = || {
        run(
            &[
                "--login",
                "headless",
                "--token-store",
                &s,
                "--config",
                &config_path,
                "--server",
                "s",
                "auth",
                "login",
            ],
            &[],
        )
    };
    write(r#"{"state": "mine"}"#);
    let usage = login();
    usage.expect_code(2);
    assert!(
        usage.stderr.contains("\"state\" is set by the flow itself"),
        "{}",
        usage.stderr
    );
    write(r#"{"audience": "https://api.example"}"#);
    login().expect_code(0);
    at("never", &s, &["tools"], &peer.mcp).expect_code(0);
}

/// `--login device` where the authorization server offers no device authorization:
/// it says so and the paste login stands in.
#[test]
fn the_device_login_falls_back_to_pasting_where_there_is_no_device_endpoint() {
    if !peers_wanted(&[PYTHON, NODE22]) {
        return;
    }
    let peer = python(&["--login-form"]);
    let dir = Scratch::new("python-device");
    let s = dir.store();
    let (r, _) = interactive(
        &[
            "--login",
            "device",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            &peer.mcp,
        ],
        "Open this URL",
        |url| browse(url, true),
    );
    r.expect_code(0);
    says(&r, "offers no device authorization");
    says(&r, "Logged in");
}

/// A 2025-03-26-style server (the Python SDK's with no protected resource metadata):
/// the first token comes without scope, and its 403 `insufficient_scope` names none.
/// capable asks once for what the authorization server's metadata lists
/// (`scopes_supported`: `mcp:tools`), as the Python SDK's client does, and the call
/// goes through; the token kept holds the scope, so later runs need no step-up.
#[test]
fn a_refusal_naming_no_scope_asks_once_for_the_scopes_the_authorization_server_lists() {
    if !peers_wanted(&[PYTHON]) {
        return;
    }
    let peer = python(&["--no-resource-metadata"]);
    let dir = Scratch::new("python-no-prm");
    let s = dir.store();
    let listed = at("headless", &s, &["tools"], &peer.mcp);
    listed.expect_code(0);
    assert!(listed.stdout.contains("echo"), "{}", listed.stdout);
    let stored = common::oauth::stored_token(&s);
    let scope = stored["token"]["scope"].as_str().unwrap_or_default();
    assert!(scope.split(' ').any(|x| x == "mcp:tools"), "{stored}");
    at("never", &s, &["tools"], &peer.mcp).expect_code(0);
}

/// FastMCP's authorization server with a confidential client pre-registered as its
/// users do (`client_secret_post`, the SDK's default) while its metadata lists both
/// secret methods: Basic, tried first, is refused as a client, post is tried once and
/// kept — for the login and the refresh. `--token-auth` forces a method (Basic is
/// refused in the server's words); a wrong secret is refused as such. No secret in
/// any output.
#[test]
fn a_pre_registered_confidential_client_at_fastmcp_finds_the_method_it_was_registered_with() {
    if !peers_wanted(&[FASTMCP]) {
        return;
    }
    let (port, callback) = (free_port(), free_port());
    let redirect = format!("http://127.0.0.1:{callback}/callback");
    let secret = "fastmcp-pre-secret";
    let peer = Peer::start(
        vec![
            FASTMCP.into(),
            "tests/peers/fastmcp_oauth.py".into(),
            port.to_string(),
            "--client".into(),
            "pre-registered".into(),
            secret.into(),
            redirect.clone(),
        ],
        vec![port],
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://127.0.0.1:{port}/"),
    );
    let dir = Scratch::new("fastmcp-pre");
    let s = dir.store();
    let login = |secret: &str, extra: &[&str]| {
        let mut args = vec![
            "--login",
            "headless",
            "--token-store",
            &s,
            "--client-id",
            "pre-registered",
            "--client-secret",
            secret,
            "--redirect-uri",
            &redirect,
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["auth", "login", "--url", &peer.mcp]);
        run(&args, &[])
    };
    let clean = |r: &common::Run| {
        assert!(
            !r.stderr.contains(secret) && !r.stdout.contains(secret),
            "{}",
            r.stderr
        );
    };
    let forced = login(secret, &["--token-auth", "basic"]);
    forced.expect_code(8);
    says(&forced, "invalid_client (Client secret is required)");
    clean(&forced);
    let wrong = login("not-the-secret", &[]);
    wrong.expect_code(8);
    says(&wrong, "invalid_client (Invalid client_secret)");
    clean(&wrong);
    assert!(!wrong.stderr.contains("not-the-secret"), "{}", wrong.stderr);
    let ok = login(secret, &[]);
    ok.expect_code(0);
    says(&ok, "Logged in");
    clean(&ok);
    let stored = common::oauth::stored_token(&s);
    assert_eq!(stored["client_auth"], "client_secret_post", "{stored}");
    // The refresh authenticates as the login ended up doing.
    common::oauth::age_token(&s);
    let refreshed = at(
        "never",
        &s,
        &[
            "--client-id",
            "pre-registered",
            "--client-secret",
            secret,
            "tools",
        ],
        &peer.mcp,
    );
    refreshed.expect_code(0);
    assert!(
        !refreshed.stderr.contains("refreshing the token failed"),
        "{}",
        refreshed.stderr
    );
    clean(&refreshed);
}
