//! Helpers for the OAuth tests against real authorization servers: a peer process
//! that can be restarted on its ports, the three ways a person logs in (a scripted
//! browser, `tests/peers/browser.mjs`, plays the person), the device login, the
//! store read and aged as time would, and a raw HTTP call for what `capable` does
//! not do itself (revoking a token the way a server admin would, presenting a
//! logged-out token).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{bin, collect, now_unix, workspace, Run};

/// The longest one `capable` run may take.
pub const T: Duration = Duration::from_secs(60);
/// Node 22 from the peers.
pub const NODE22: &str = ".peers/node22/node_modules/.bin/node";

/// A free port on 127.0.0.1, outside the kernel's ephemeral range (see
/// `capable_test_support::free_port`).
pub use capable_test_support::free_port;

/// Node 22's path.
pub fn node() -> String {
    workspace().join(NODE22).display().to_string()
}

/// A real server (authorization server and MCP server) in a process of its own on
/// fixed ports, killed by its PID when dropped; [`Peer::restart`] starts it again
/// on the same ports, having forgotten everything, as a restarted server does.
pub struct Peer {
    child: Child,
    command: Vec<String>,
    ports: Vec<u16>,
    /// The MCP server.
    pub mcp: String,
    /// The authorization server's issuer, as it writes it.
    pub issuer: String,
    /// Whether its authorization endpoint asks the person anything (a login, a
    /// consent); one that approves at once answers the browser and paste logins'
    /// first look with the code.
    pub asks: bool,
    /// Whether an expired access token presented to it takes its refresh token with
    /// it (FastMCP's in-memory provider cleans up the pair).
    pub expiry_drops_refresh: bool,
}

impl Peer {
    /// Starts `command` (relative paths from the workspace) and waits until every
    /// one of `ports` listens.
    pub fn start(command: Vec<String>, ports: Vec<u16>, mcp: String, issuer: String) -> Peer {
        let child = spawn(&command, &ports);
        Peer {
            child,
            command,
            ports,
            mcp,
            issuer,
            asks: false,
            expiry_drops_refresh: false,
        }
    }

    /// Stops the server (by its PID) and starts it again on the same ports.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(&self.command, &self.ports);
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(command: &[String], ports: &[u16]) -> Child {
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .current_dir(workspace())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let mut errors = child.stderr.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    for port in ports {
        while TcpStream::connect(("127.0.0.1", *port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut said = String::new();
                let _ = errors.read_to_string(&mut said);
                panic!("{command:?} exited ({status}) before listening:\n{said}");
            }
            assert!(
                Instant::now() < deadline,
                "{command:?} did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
    // Keep draining what it says, so a chatty server never blocks on a full pipe.
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut errors, &mut std::io::sink());
    });
    child
}

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("capable-oauth-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// The token store in it.
    pub fn store(&self) -> String {
        self.0.join("credentials.json").display().to_string()
    }

    /// A `$BROWSER` that opens the URL in the scripted browser.
    pub fn browser(&self) -> String {
        let path = self.0.join("browser.sh");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nexec {} {} \"$1\"\n",
                node(),
                workspace().join("tests/peers/browser.mjs").display()
            ),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(workspace())
        .env_remove("CAPABLE_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// `capable ARGS` with `env` added, stdin closed.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let child = command(args, env).stdin(Stdio::null()).spawn().unwrap();
    collect(child, format!("capable {}", args.join(" ")), T)
}

/// `capable --login LOGIN --token-store STORE ARGS --url URL`.
pub fn at(login: &str, store: &str, args: &[&str], url: &str) -> Run {
    let mut all = vec!["--login", login, "--token-store", store];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--url", url]);
    run(&all, &[])
}

/// Asserts that `r` said `words` on stderr.
#[track_caller]
pub fn says(r: &Run, words: &str) {
    assert!(
        r.stderr.contains(words),
        "`{}` should say {words:?}:\n{}",
        r.shown,
        r.stderr
    );
}

/// The scripted browser on `url`; `print`: only print where it lands (the paste).
pub fn browse(url: &str, print: bool) -> String {
    let mut args = vec![workspace()
        .join("tests/peers/browser.mjs")
        .display()
        .to_string()];
    if print {
        args.push("--print".into());
    }
    args.push(url.to_owned());
    let out = Command::new(node()).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "the browser failed on {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `capable ARGS` that prints a URL for a person on stderr (a paste login, a
/// device login): the line after `marker`'s line that starts with an indented
/// `http`. `act` plays the person with it and returns what to type (nothing for a
/// device login). Returns the run, and whether the person was asked (a login may
/// end without asking, when the server approves at once).
pub fn interactive(args: &[&str], marker: &str, act: impl FnOnce(&str) -> String) -> (Run, bool) {
    let mut child = command(args, &[]).stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut said = Vec::new();
    let mut url = None;
    let deadline = Instant::now() + T;
    while url.is_none() {
        let line = match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => line,
            // It ended without asking.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no URL after {marker:?}; it said:\n{}", said.join("\n"))
            }
        };
        if said.iter().any(|l: &String| l.contains(marker)) {
            if let Some(u) = line.trim().strip_prefix("http") {
                url = Some(format!("http{u}"));
            }
        }
        said.push(line);
    }
    let asked = url.is_some();
    if let Some(url) = url {
        let typed = act(&url);
        let _ = stdin.write_all(typed.as_bytes());
    }
    drop(stdin);
    // The rest of stderr arrives through the channel: hand it back as a pipe would.
    let (rest_tx, rest_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rest: Vec<String> = rx.iter().collect();
        let _ = rest_tx.send(rest.join("\n"));
    });
    let mut run = collect_stdout(child, args);
    let rest = rest_rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_default();
    run.stderr = format!("{}\n{rest}", said.join("\n"));
    (run, asked)
}

fn collect_stdout(mut child: Child, args: &[&str]) -> Run {
    let started = Instant::now();
    let mut stdout = String::new();
    let mut pipe = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let _ = pipe.read_to_string(&mut stdout);
        stdout
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > T {
            let _ = child.kill();
            panic!("`capable {}` did not finish", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.code(),
        stdout: reader.join().unwrap(),
        stderr: String::new(),
        elapsed: started.elapsed(),
        shown: format!("capable {}", args.join(" ")),
    }
}

/// The store's document.
pub fn store_doc(store: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(store).unwrap()).unwrap()
}

fn edit_tokens(store: &str, edit: impl Fn(&mut Value)) {
    let mut doc = store_doc(store);
    for t in doc["tokens"].as_array_mut().expect("stored tokens") {
        edit(&mut t["token"]);
    }
    std::fs::write(store, doc.to_string()).unwrap();
}

/// Makes the stored token one received an hour ago that expires in 20 s: past the
/// middle of its life, due for a refresh before it is used.
pub fn age_token(store: &str) {
    let now = now_unix();
    edit_tokens(store, |t| {
        t["received_at"] = (now - 3600).into();
        t["expires_at"] = (now + 20).into();
    });
}

/// Makes the stored token one that expired a second ago.
pub fn expire_token(store: &str) {
    let now = now_unix();
    edit_tokens(store, |t| {
        t["received_at"] = (now - 3600).into();
        t["expires_at"] = (now - 1).into();
    });
}

/// Makes the stored token look fresh for an hour whatever the server thinks: the
/// client presents it, and learns of its expiry from the 401.
pub fn pretend_fresh(store: &str) {
    let now = now_unix();
    edit_tokens(store, |t| {
        t["received_at"] = now.into();
        t["expires_at"] = (now + 3600).into();
    });
}

/// The stored token (the store holds one).
pub fn stored_token(store: &str) -> Value {
    let doc = store_doc(store);
    let tokens = doc["tokens"].as_array().expect("stored tokens");
    assert_eq!(tokens.len(), 1, "one token per (resource, issuer): {doc}");
    tokens[0].clone()
}

/// Every secret the store holds now (tokens, client secrets).
pub fn secrets(store: &str) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(store) else {
        return Vec::new();
    };
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for t in doc["tokens"].as_array().into_iter().flatten() {
        for k in ["access_token", "refresh_token"] {
            if let Some(s) = t["token"][k].as_str() {
                out.push(s.to_owned());
            }
        }
    }
    for c in doc["clients"].as_array().into_iter().flatten() {
        if let Some(s) = c["client_secret"].as_str() {
            out.push(s.to_owned());
        }
    }
    out
}

/// A raw HTTP/1.1 POST to `url` (127.0.0.1 only); the status and the body.
pub fn post(url: &str, headers: &[(&str, &str)], content_type: &str, body: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let mut stream = TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(T)).unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: {content_type}\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

const FORM: &str = "application/x-www-form-urlencoded";

/// An `application/x-www-form-urlencoded` body.
fn form(pairs: &[(&str, &str)]) -> String {
    let encode = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Revokes the stored token's refresh and access tokens at the authorization
/// server's revocation endpoint, as its administrator would, as the client that got
/// them (a public client: its id).
pub fn revoke_stored(store: &str) {
    let t = stored_token(store);
    let endpoint = t["revocation_endpoint"]
        .as_str()
        .expect("a revocation endpoint");
    let client = t["client_id"].as_str().unwrap();
    for (hint, token) in [
        ("refresh_token", t["token"]["refresh_token"].as_str()),
        ("access_token", t["token"]["access_token"].as_str()),
    ] {
        let Some(token) = token else { continue };
        let mut fields = vec![
            ("token", token),
            ("token_type_hint", hint),
            ("client_id", client),
        ];
        let (mut status, mut said) = post(endpoint, &[], FORM, &form(&fields));
        if status == 400 {
            // The Python SDK's endpoint wants the field even for a public client.
            fields.push(("client_secret", ""));
            (status, said) = post(endpoint, &[], FORM, &form(&fields));
        }
        assert_eq!(status, 200, "revoking the {hint}: {said}");
    }
}

/// The status the MCP server at `mcp` answers an `initialize` carrying `token`.
pub fn status_with(mcp: &str, token: &str) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    post(
        mcp,
        &[("Authorization", &format!("Bearer {token}"))],
        "application/json",
        body,
    )
    .0
}

/// Asserts that nothing `run` printed holds a secret.
#[track_caller]
pub fn no_secret(run: &Run, secrets: &[String]) {
    for s in secrets {
        assert!(
            !run.stdout.contains(s.as_str()) && !run.stderr.contains(s.as_str()),
            "`{}` printed a secret",
            run.shown
        );
    }
}
