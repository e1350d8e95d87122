//! `capable auth login --url …` against a real authorization server guarding a real MCP
//! server (`tests/peers/oidc_guarded.mjs`: oidc-provider, an OpenID Certified server,
//! and a TypeScript SDK server that accepts only its tokens), in all three login
//! modes: headless, paste (a scripted stdin), browser (`BROWSER` is a script that
//! follows the URL as a browser would). Then the stored token is used, and refreshed
//! without the user noticing. Everything binds 127.0.0.1; servers are stopped by PID.
//!
//! Without `.peers` these tests fail, saying how to install them; set
//! `CAPABLE_SKIP_PEERS=1` to skip them instead.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::servers::{guarded, Guarded, NODE22, OIDC};
use common::{bin, capable, peers_wanted, workspace};

const T: Duration = Duration::from_secs(60);
const SDK: &str = ".peers/npm/node_modules/@modelcontextprotocol/sdk/package.json";

fn node() -> String {
    common::servers::path(NODE22)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capable-oidc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn store(dir: &Path) -> String {
    dir.join("credentials.json").display().to_string()
}

/// The stored token works: the tools are listed with no login possible.
#[track_caller]
fn uses_the_token(g: &Guarded, store: &str) {
    let r = capable(
        &[
            "--login",
            "never",
            "--token-store",
            store,
            "tools",
            "--url",
            &g.mcp,
        ],
        T,
    );
    r.expect_code(0);
    assert!(r.stdout.contains("echo"), "{}", r.stdout);
}

fn wanted() -> bool {
    peers_wanted(&[OIDC, SDK, NODE22])
}

#[test]
fn headless_login_then_status_token_and_logout() {
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = scratch("headless");
    let s = store(&dir);
    // Without a token and without a way to log in: authorization required, exit 8.
    let refused = capable(&["--token-store", &s, "tools", "--url", &g.mcp], T);
    refused.expect_code(8);
    assert!(
        refused.stderr.contains("requires authorization"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("capable auth login"),
        "{}",
        refused.stderr
    );

    capable(
        &[
            "--login",
            "headless",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            &g.mcp,
        ],
        T,
    )
    .expect_code(0);
    uses_the_token(&g, &s);
    let status = capable(
        &[
            "--json",
            "--token-store",
            &s,
            "auth",
            "status",
            "--url",
            &g.mcp,
        ],
        T,
    )
    .expect_code(0)
    .json();
    let token = &status["tokens"][0];
    assert_eq!(token["issuer"], g.issuer.as_str());
    assert_eq!(token["resource"], g.mcp.as_str());
    assert_eq!(token["scope"], "mcp:tools");
    assert_eq!(token["refreshable"], true);
    assert!(
        !status.to_string().contains("access_token"),
        "status shows no secret: {status}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&s).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let printed = capable(&["--token-store", &s, "auth", "token", "--url", &g.mcp], T);
    printed.expect_code(0);
    let token = printed.stdout.trim().to_owned();
    assert!(token.len() > 20);
    // Nothing else ever prints it: not --trace, not --json, not an error.
    let traced = capable(
        &[
            "--trace",
            "--json",
            "--token-store",
            &s,
            "tools",
            "--url",
            &g.mcp,
        ],
        T,
    );
    traced.expect_code(0);
    let failing = capable(
        &[
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
        T,
    );
    for out in [
        &traced.stdout,
        &traced.stderr,
        &failing.stdout,
        &failing.stderr,
    ] {
        assert!(!out.contains(&token), "the token leaked: {out}");
    }
    let file = std::fs::read_to_string(&s).unwrap();
    assert!(
        file.contains(&token),
        "the store is the one place it is kept"
    );
    capable(&["--token-store", &s, "auth", "logout", "--url", &g.mcp], T).expect_code(0);
    let after = capable(&["--json", "--token-store", &s, "auth", "status"], T)
        .expect_code(0)
        .json();
    assert_eq!(after["tokens"], serde_json::json!([]));
    capable(&["--token-store", &s, "tools", "--url", &g.mcp], T).expect_code(8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn paste_login_reads_the_redirect_address_from_stdin() {
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = scratch("paste");
    let s = store(&dir);
    let mut child = Command::new(bin())
        .args([
            "--login",
            "paste",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            &g.mcp,
        ])
        .current_dir(workspace())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut url = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(u) = line.trim().strip_prefix(&format!("{}/auth?", g.issuer)) {
            url = format!("{}/auth?{u}", g.issuer);
        }
        if line.contains("paste the address") {
            break;
        }
        line.clear();
    }
    assert!(!url.is_empty(), "no authorization URL was printed");
    // The person: open the URL in a browser, copy where it lands.
    let landed = Command::new(node())
        .args(["tests/peers/oidc_browser.mjs", "--print", &url])
        .current_dir(workspace())
        .output()
        .unwrap();
    assert!(
        landed.status.success(),
        "{}",
        String::from_utf8_lossy(&landed.stderr)
    );
    let address = String::from_utf8(landed.stdout).unwrap();
    assert!(
        address.contains("code=") && address.contains("iss="),
        "{address}"
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(address.as_bytes())
        .unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
    assert!(status.success(), "paste login failed: {rest}");
    assert!(rest.contains("Logged in"), "{rest}");
    uses_the_token(&g, &s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `capable auth login` through the system browser ($BROWSER, as webbrowser finds
/// it), a script that follows the redirects and consents. Returns the login's stderr.
fn browser_login(g: &Guarded, dir: &Path, s: &str) -> String {
    let browser = dir.join("browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nexec {} {} \"$1\"\n",
            node(),
            workspace().join("tests/peers/oidc_browser.mjs").display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = Command::new(bin())
        .args([
            "--login",
            "browser",
            "--token-store",
            s,
            "auth",
            "login",
            "--url",
            &g.mcp,
        ])
        .current_dir(workspace())
        .env("BROWSER", &browser)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "browser login failed: {stderr}");
    stderr
}

#[test]
fn browser_login_receives_the_redirect_on_the_loopback_listener() {
    if !wanted() {
        return;
    }
    let g = guarded(3600);
    let dir = scratch("browser");
    let s = store(&dir);
    let stderr = browser_login(&g, &dir, &s);
    assert!(
        stderr.contains("If it does not open, visit"),
        "the URL is printed too: {stderr}"
    );
    uses_the_token(&g, &s);
    let _ = std::fs::remove_dir_all(&dir);
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
    let dir = scratch("host");
    let s = store(&dir);
    let config = dir.join("mcp.json");
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
        capable(
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
            T,
        )
    };
    // No token yet, and even with --login browser the host does not log in: refused
    // with the authorization-required kind and code.
    let before = servers("browser");
    before.expect_code(8);
    let row = &before.json()[0];
    assert_eq!(row["state"], "refused", "{row}");
    assert_eq!(row["error"]["kind"], "authorization_required", "{row}");
    browser_login(&g, &dir, &s);
    let after = servers("never");
    after.expect_code(0);
    let row = &after.json()[0];
    assert_eq!(row["state"], "ready", "{row}");
    assert!(row["tools"].as_u64().is_some_and(|n| n >= 1), "{row}");
    let all = capable(
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
        T,
    );
    all.expect_code(0);
    assert!(all.stdout.contains("guarded/echo"), "{}", all.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Makes the stored token one received an hour ago that expires in 20 s: due for a
/// refresh. (A token just received is never refreshed at once, however short-lived.)
fn age_token(store: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store).unwrap()).unwrap();
    for t in doc["tokens"].as_array_mut().expect("stored tokens") {
        t["token"]["received_at"] = (now - 3600).into();
        t["token"]["expires_at"] = (now + 20).into();
    }
    std::fs::write(store, doc.to_string()).unwrap();
}

#[test]
fn a_stored_token_about_to_expire_is_refreshed_without_the_user_noticing() {
    if !wanted() {
        return;
    }
    let g = guarded(30);
    let dir = scratch("refresh");
    let s = store(&dir);
    capable(
        &[
            "--login",
            "headless",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            &g.mcp,
        ],
        T,
    )
    .expect_code(0);
    age_token(&s);
    let first = std::fs::read_to_string(&s).unwrap();
    uses_the_token(&g, &s);
    uses_the_token(&g, &s);
    let later = std::fs::read_to_string(&s).unwrap();
    assert_ne!(first, later, "the token was refreshed and stored again");
    let doc: serde_json::Value = serde_json::from_str(&later).unwrap();
    assert_eq!(
        doc["tokens"].as_array().unwrap().len(),
        1,
        "one token per (resource, issuer)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_processes_refreshing_at_once_spend_the_rotating_refresh_token_once() {
    if !wanted() {
        return;
    }
    // oidc-provider rotates refresh tokens and revokes the grant when a spent one is
    // presented again: both processes succeed only if the second takes the first's.
    let g = guarded(30);
    let dir = scratch("two-processes");
    let s = store(&dir);
    capable(
        &[
            "--login",
            "headless",
            "--token-store",
            &s,
            "auth",
            "login",
            "--url",
            &g.mcp,
        ],
        T,
    )
    .expect_code(0);
    age_token(&s);
    let spawn = || {
        Command::new(bin())
            .args([
                "--login",
                "never",
                "--token-store",
                &s,
                "auth",
                "token",
                "--url",
                &g.mcp,
            ])
            .current_dir(workspace())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for out in [&a, &b] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("refreshing the token failed"));
    }
    assert_eq!(a.stdout, b.stdout, "both use the one refreshed token");
    uses_the_token(&g, &s);
    let _ = std::fs::remove_dir_all(&dir);
}
