//! `capable` against a real authorization server guarding a real MCP server
//! (`tests/peers/oidc_guarded.mjs`: oidc-provider, an OpenID Certified server, and a
//! TypeScript SDK server that accepts only its tokens): the whole journey of
//! `common/journey.rs` (its interaction pages make the person's browser go through
//! them, so the browser and paste logins ask), the device login (RFC 8628), what
//! `auth status` and `auth token` show, and the host commands using the stored token.
//! Everything binds 127.0.0.1; servers are stopped by PID.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

mod common;

use common::journey::journey;
use common::oauth::{at, browse, free_port, interactive, node, run, Peer, Scratch, NODE22};
use common::peers_wanted;

const OIDC: &str = ".peers/oidc/node_modules/oidc-provider/package.json";
const SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk/package.json";

/// oidc-provider and the MCP server it guards; access tokens live `ttl` seconds.
fn guarded(ttl: u64) -> Peer {
    let (as_port, mcp_port) = (free_port(), free_port());
    let mut peer = Peer::start(
        vec![
            node(),
            "tests/peers/oidc_guarded.mjs".into(),
            as_port.to_string(),
            mcp_port.to_string(),
            ttl.to_string(),
        ],
        vec![as_port, mcp_port],
        format!("http://127.0.0.1:{mcp_port}/mcp"),
        format!("http://127.0.0.1:{as_port}"),
    );
    peer.asks = true;
    peer
}

fn wanted() -> bool {
    peers_wanted(&[OIDC, SDK, NODE22])
}

#[test]
fn oidc_provider_through_a_whole_journey() {
    if !wanted() {
        return;
    }
    let mut peer = guarded(3);
    journey(&mut peer, "oidc");
}

/// `--login device`: the code shown, the person confirming it on the provider's own
/// pages (the scripted browser on the URL printed), the token polled for; then used.
#[test]
fn the_device_login_shows_a_code_and_polls_until_it_is_approved() {
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = Scratch::new("device");
    let s = dir.store();
    let args = [
        "--login",
        "device",
        "--token-store",
        &s,
        "auth",
        "login",
        "--url",
        &g.mcp,
    ];
    let (r, asked) = interactive(&args, "To authorize capable", |url| {
        assert!(
            url.contains("/device") && url.contains("user_code="),
            "{url}"
        );
        browse(url, false)
    });
    assert!(asked, "a device login always asks: {}", r.stderr);
    r.expect_code(0);
    assert!(
        r.stderr.contains("check that it shows the code"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Logged in"), "{}", r.stderr);
    logged_in_by_the_device_grant(&s, &g.mcp);
    // The device registration is not the one a browser login needs: that one
    // registers for the authorization code.
    at("headless", &s, &["auth", "login"], &g.mcp).expect_code(0);
    let doc = common::oauth::store_doc(&s);
    assert_eq!(doc["clients"][0]["grant_types"][0], "authorization_code");
}

/// `--login auto` on a terminal reached over SSH with no display and no `$BROWSER`
/// (a browser here could not be seen, and the person's browser cannot reach this
/// machine's loopback): the device grant, where the server offers it, with no flag.
/// (`script` gives capable a terminal.)
#[test]
fn over_ssh_without_a_display_the_automatic_login_is_the_device_grant() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = Scratch::new("ssh");
    let s = dir.store();
    let inner = format!(
        "{} --token-store {s} auth login --url {}",
        common::bin(),
        g.mcp
    );
    let mut child = Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env("SSH_CONNECTION", "127.0.0.1 52114 127.0.0.1 22")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("BROWSER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("script(1), from util-linux");
    let mut shown = BufReader::new(child.stdout.take().unwrap());
    let mut said = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(shown.read_line(&mut line).unwrap() > 0, "it ended: {said}");
        said.push_str(&line);
        if said.contains("If it does not open") {
            let _ = child.kill();
            panic!("a browser login, which nobody here could finish: {said}");
        }
        if let Some(u) = line.trim().strip_prefix("http") {
            if said.contains("To authorize capable") {
                break format!("http{u}");
            }
        }
    };
    assert!(
        url.contains("/device") && url.contains("user_code="),
        "the device grant's page, with its code: {said}"
    );
    browse(&url, false);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut shown, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{said}{rest}");
    assert!(rest.contains("Logged in"), "{said}{rest}");
    logged_in_by_the_device_grant(&s, &g.mcp);
}

/// After a device login into `store`: the client is registered for the device grant,
/// and its token lists the tools with no further login.
#[track_caller]
fn logged_in_by_the_device_grant(store: &str, mcp: &str) {
    let doc = common::oauth::store_doc(store);
    assert_eq!(
        doc["clients"][0]["grant_types"],
        serde_json::json!([
            "urn:ietf:params:oauth:grant-type:device_code",
            "refresh_token"
        ]),
        "registered for the device grant"
    );
    let tools = at("never", store, &["tools"], mcp);
    tools.expect_code(0);
    assert!(tools.stdout.contains("echo"), "{}", tools.stdout);
}

/// What `auth status` shows (no secret), that `auth token` prints the token on
/// request and nothing else ever does, and the store's file mode.
#[test]
fn status_shows_no_secret_and_token_prints_it_on_request_only() {
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = Scratch::new("status");
    let s = dir.store();
    let never = at("never", &s, &["auth", "token"], &g.mcp);
    never.expect_code(8);
    assert!(
        never
            .stderr
            .contains(&format!("no token is stored for {}", g.mcp)),
        "{}",
        never.stderr
    );
    at("headless", &s, &["auth", "login"], &g.mcp).expect_code(0);
    let status = run(
        &[
            "--json",
            "--token-store",
            &s,
            "auth",
            "status",
            "--url",
            &g.mcp,
        ],
        &[],
    );
    status.expect_code(0);
    let status = status.json();
    let token = &status["tokens"][0];
    assert_eq!(token["issuer"], g.issuer.as_str());
    assert_eq!(token["resource"], g.mcp.as_str());
    assert_eq!(token["scope"], "mcp:tools");
    assert_eq!(token["refreshable"], true);
    assert!(!status.to_string().contains("access_token"), "{status}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&s).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let printed = run(
        &["--token-store", &s, "auth", "token", "--url", &g.mcp],
        &[],
    );
    printed.expect_code(0);
    let token = printed.stdout.trim().to_owned();
    assert!(token.len() > 20);
    for args in [
        vec![
            "--trace",
            "--json",
            "--token-store",
            &s,
            "tools",
            "--url",
            &g.mcp,
        ],
        vec![
            "--trace",
            "--json",
            "--token-store",
            &s,
            "tools",
            "call",
            "nope",
            "--url",
            &g.mcp,
        ],
    ] {
        let r = run(&args, &[]);
        assert!(
            !r.stdout.contains(&token) && !r.stderr.contains(&token),
            "{} leaked it",
            r.shown
        );
    }
}

/// A host of many servers (`capable servers`, `tools --all`) reaches an OAuth-guarded
/// server with the token `capable auth login` stored, and without one says that a
/// login is needed — never starting a login of its own.
#[test]
fn the_host_commands_use_the_stored_token_and_never_log_in_themselves() {
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = Scratch::new("host");
    let s = dir.store();
    let config = dir.0.join("mcp.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"mcpServers": {{"guarded": {{"type": "http", "url": "{}"}}}}}}"#,
            g.mcp
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let servers = |login: &str| {
        run(
            &[
                "--json",
                "--login",
                login,
                "--token-store",
                &s,
                "servers",
                "--config",
                &config,
            ],
            &[],
        )
    };
    // No token yet, and even with --login browser the host does not log in: refused
    // with the authorization-required kind and code.
    let before = servers("browser");
    before.expect_code(8);
    let row = &before.json()[0];
    assert_eq!(row["state"], "refused", "{row}");
    assert_eq!(row["error"]["kind"], "authorization_required", "{row}");
    let browser = dir.browser();
    run(
        &[
            "--login",
            "browser",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            &g.mcp,
        ],
        &[("BROWSER", &browser)],
    )
    .expect_code(0);
    let after = servers("never");
    after.expect_code(0);
    let row = &after.json()[0];
    assert_eq!(row["state"], "ready", "{row}");
    assert!(row["tools"].as_u64().is_some_and(|n| n >= 1), "{row}");
    let all = run(
        &[
            "--login",
            "never",
            "--token-store",
            &s,
            "tools",
            "--all",
            "--config",
            &config,
        ],
        &[],
    );
    all.expect_code(0);
    assert!(all.stdout.contains("guarded/echo"), "{}", all.stdout);
}

/// `auth login` against a server that asks for no authorization says so and exits
/// 0, storing nothing; against a URL where no MCP server answers, it says that.
#[test]
fn logging_in_to_a_server_that_asks_for_no_authorization() {
    if !peers_wanted(&[SDK, NODE22]) {
        return;
    }
    let port = free_port();
    let _open = Peer::start(
        vec![
            node(),
            "tests/peers/ts_server.mjs".into(),
            "--http".into(),
            port.to_string(),
        ],
        vec![port],
        String::new(),
        String::new(),
    );
    let dir = Scratch::new("open");
    let s = dir.store();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let r = at("headless", &s, &["auth", "login"], &url);
    r.expect_code(0);
    assert!(
        r.stderr.contains("does not ask for authorization"),
        "{}",
        r.stderr
    );
    assert!(!std::path::Path::new(&s).exists(), "nothing stored");
}

/// On a terminal, the browser login also reads a pasted address. The end of that
/// input (Ctrl-D) ends only the pasting: the browser's redirect still completes the
/// login. Either way the process exits as soon as it is logged in, without waiting
/// for the terminal. (`script` gives capable a terminal; `$BROWSER` waits until the
/// test says go.)
#[test]
fn a_browser_login_on_a_terminal_survives_ctrl_d_and_never_waits_for_the_terminal() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = Scratch::new("ctrl-d");
    let s = dir.store();
    let go = dir.0.join("go");
    let browser = dir.0.join("late-browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nwhile [ ! -e {} ]; do sleep 0.05; done\nexec {} \"$1\"\n",
            go.display(),
            dir.browser()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let inner = format!(
        "{} --login browser --token-store {s} auth login --url {}",
        common::bin(),
        g.mcp
    );
    for ctrl_d in [false, true] {
        let _ = std::fs::remove_file(&go);
        let mut child = Command::new("script")
            .args(["-qec", &inner, "/dev/null"])
            .env("BROWSER", &browser)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("script(1), from util-linux");
        let mut terminal = child.stdin.take().unwrap();
        let mut shown = BufReader::new(child.stdout.take().unwrap());
        let mut said = String::new();
        while !said.contains("If it does not open") {
            let mut line = String::new();
            assert!(shown.read_line(&mut line).unwrap() > 0, "it ended: {said}");
            said.push_str(&line);
        }
        if ctrl_d {
            terminal.write_all(b"\x04").unwrap();
            terminal.flush().unwrap();
            std::thread::sleep(Duration::from_millis(200));
        }
        std::fs::write(&go, "").unwrap();
        let reader = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = std::io::Read::read_to_string(&mut shown, &mut rest);
            rest
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("ctrl_d {ctrl_d}: still running 20 s after the redirect: it waits for the terminal");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let rest = reader.join().unwrap();
        assert!(status.success(), "ctrl_d {ctrl_d}: {said}{rest}");
        assert!(rest.contains("Logged in"), "ctrl_d {ctrl_d}: {said}{rest}");
        drop(terminal);
    }
    at("never", &s, &["tools"], &g.mcp).expect_code(0);
}
