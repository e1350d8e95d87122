//! The life of one user's authorization with a real authorization server, as every
//! OAuth peer test walks it, on one peer started once (and restarted where the
//! journey says so):
//!
//! 1. no token and no way to log in: exit 8, in words that say so;
//! 2. a login each way a person has — headless, paste (the scripted browser prints
//!    where it lands, which is pasted), browser (`$BROWSER` is the scripted
//!    browser), the person asked exactly when the server asks anything — each
//!    followed by `tools` and a call that work with `--login never`;
//! 3. the token refreshed past the middle of its life, before it is used;
//! 4. the token expired: refreshed before it is used (never presented); and the
//!    token expired at the server while the client thinks it fresh: the 401
//!    refreshes it and the call is replayed (where the server drops the refresh
//!    token with the expired one, the refusal is told and a login mends it);
//! 5. the token revoked at the server: with no login possible, exit 8 saying the
//!    stored token was refused and could not be refreshed; with one, a new login;
//! 6. eight `capable` processes at once sharing the store, the token due for a
//!    refresh: each succeeds, the rotating refresh token spent once;
//! 7. the authorization server restarted, forgetting its clients: the refresh's
//!    `invalid_client` forgets the registration (exit 8 without a login), and a
//!    login registers again; restarted once more, a browser login meets the refusal
//!    at the authorization endpoint before any browser opens, says so and registers
//!    again;
//! 8. `auth logout`: token and registration gone, the token revoked at the server.
//!
//! Nothing any run prints holds a token or a client secret.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::oauth::{
    age_token, browse, expire_token, interactive, no_secret, pretend_fresh, revoke_stored, run,
    says, secrets, status_with, store_doc, stored_token, Peer, Scratch, T,
};
use super::{bin, collect, now_unix, workspace, Run};

/// One user's store and the secrets seen in it so far.
struct User {
    dir: Scratch,
    store: String,
    mcp: String,
    seen: Vec<String>,
}

impl User {
    /// `capable --login LOGIN --token-store S ARGS --url MCP`, checked for secrets.
    fn run(&mut self, login: &str, args: &[&str]) -> Run {
        let r = run(&self.args(login, args), &[]);
        self.check(&r);
        r
    }

    fn args<'a>(&'a self, login: &'a str, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["--login", login, "--token-store", &self.store];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--url", &self.mcp]);
        all
    }

    fn check(&mut self, r: &Run) {
        for s in secrets(&self.store) {
            if !self.seen.contains(&s) {
                self.seen.push(s);
            }
        }
        no_secret(r, &self.seen);
    }

    /// `tools` and a call, with no login possible: the stored token works.
    #[track_caller]
    fn uses_the_token(&mut self, message: &str) {
        let tools = self.run("never", &["tools"]);
        tools.expect_code(0);
        assert!(tools.stdout.contains("echo"), "{}", tools.stdout);
        self.call("never", message).expect_code(0);
    }

    fn call(&mut self, login: &str, message: &str) -> Run {
        let args = format!(r#"{{"message":"{message}"}}"#);
        let r = self.run(login, &["tools", "call", "echo", "--args", &args]);
        if r.code == Some(0) {
            assert!(r.stdout.contains(message), "{}", r.stdout);
        }
        r
    }

    fn access_token(&self) -> String {
        stored_token(&self.store)["token"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// Walks the journey (see the module documentation) against `peer`.
pub fn journey(peer: &mut Peer, name: &str) {
    let dir = Scratch::new(name);
    let mut u = User {
        store: dir.store(),
        dir,
        mcp: peer.mcp.clone(),
        seen: Vec::new(),
    };

    // 1.
    let r = u.run("never", &["tools"]);
    r.expect_code(8);
    says(&r, "requires authorization, and no token is stored");
    says(&r, "capable auth login");

    // 2.
    let r = u.run("headless", &["auth", "login"]);
    r.expect_code(0);
    says(&r, "Logged in");
    says(&r, "scopes mcp:tools");
    assert_eq!(stored_token(&u.store)["issuer"], peer.issuer.as_str());
    u.uses_the_token("after-headless");
    let args = u.args("paste", &["auth", "login"]);
    let (r, asked) = interactive(&args, "Open this URL", |url| browse(url, true));
    u.check(&r);
    r.expect_code(0);
    says(&r, "Logged in");
    assert_eq!(asked, peer.asks, "the person is asked when the server asks");
    u.uses_the_token("after-paste");
    let browser = u.dir.browser();
    let r = run(
        &u.args("browser", &["auth", "login"]),
        &[("BROWSER", &browser)],
    );
    u.check(&r);
    r.expect_code(0);
    assert_eq!(
        r.stderr.contains("If it does not open, visit"),
        peer.asks,
        "the browser opens when the server asks: {}",
        r.stderr
    );
    u.uses_the_token("after-browser");
    let clients = store_doc(&u.store)["clients"].as_array().unwrap().len();
    assert_eq!(clients, 1, "one registration, reused by every login");

    // 3.
    let before = stored_token(&u.store);
    age_token(&u.store);
    u.call("never", "at-half-life").expect_code(0);
    let after = stored_token(&u.store);
    assert_ne!(
        before["token"]["access_token"],
        after["token"]["access_token"]
    );
    assert_ne!(
        before["token"]["refresh_token"], after["token"]["refresh_token"],
        "the refresh token rotated"
    );

    // 4.
    let before = u.access_token();
    expire_token(&u.store);
    u.call("never", "after-expiry").expect_code(0);
    assert_ne!(u.access_token(), before);
    let expires = stored_token(&u.store)["token"]["expires_at"]
        .as_i64()
        .unwrap();
    let wait = (expires + 1 - now_unix()).max(0) as u64;
    assert!(
        wait <= 10,
        "the peer's tokens should live seconds, not {wait}s"
    );
    std::thread::sleep(Duration::from_secs(wait));
    let expired = u.access_token();
    assert_eq!(status_with(&u.mcp, &expired), 401, "expired at the server");
    pretend_fresh(&u.store);
    let r = u.call("never", "expired-unknowingly");
    if peer.expiry_drops_refresh {
        r.expect_code(8);
        says(&r, "the refresh token was refused");
        u.call("headless", "expired-unknowingly").expect_code(0);
    } else {
        r.expect_code(0);
    }
    assert_ne!(u.access_token(), expired);

    // 5.
    revoke_stored(&u.store);
    let r = u.call("never", "revoked");
    r.expect_code(8);
    says(
        &r,
        "refused the stored token, and it could not be refreshed",
    );
    u.call("headless", "logged-in-again").expect_code(0);

    // 6.
    age_token(&u.store);
    let runs: Vec<(String, std::process::Child)> = (0..8)
        .map(|i| {
            let message = format!("eight-{i}");
            let json = format!(r#"{{"message":"{message}"}}"#);
            let args = u.args("never", &["tools", "call", "echo", "--args", &json]);
            let child = Command::new(bin())
                .args(&args)
                .current_dir(workspace())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (message, child)
        })
        .collect();
    for (message, child) in runs {
        let r = collect(child, format!("capable (one of eight) {message}"), T);
        u.check(&r);
        r.expect_code(0);
        assert!(r.stdout.contains(&message), "{}", r.stdout);
        assert!(
            !r.stderr.contains("refreshing the token failed"),
            "{}",
            r.stderr
        );
    }
    stored_token(&u.store);

    // 7.
    peer.restart();
    let r = u.run("never", &["tools"]);
    r.expect_code(8);
    says(&r, "no longer knows the client");
    assert_eq!(store_doc(&u.store)["clients"], serde_json::json!([]));
    u.call("headless", "registered-again").expect_code(0);
    peer.restart();
    let r = run(
        &u.args("browser", &["auth", "login"]),
        &[("BROWSER", &browser)],
    );
    u.check(&r);
    r.expect_code(0);
    says(&r, "no longer knows the client");
    says(&r, "registering again");
    u.uses_the_token("after-restart");

    // 8.
    let token = u.access_token();
    let r = u.run("never", &["auth", "logout"]);
    r.expect_code(0);
    says(&r, "removed 1 stored token");
    let doc = store_doc(&u.store);
    assert_eq!(doc["tokens"], serde_json::json!([]));
    assert_eq!(
        doc["clients"],
        serde_json::json!([]),
        "the registration is forgotten too"
    );
    assert_eq!(
        status_with(&u.mcp, &token),
        401,
        "the token was revoked at logout"
    );
    u.run("never", &["tools"]).expect_code(8);
}
