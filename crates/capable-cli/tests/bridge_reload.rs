//! `capable bridge --config FILE` reloads its config without a restart, under load: a
//! capable client through `--listen` (a legacy session and a 2026-07-28 client side by
//! side) and a stdio host call a tool in a loop while the
//! file changes (written in place, and renamed into place as editors do) — a server
//! added, a tool's allow rule changed, a server removed — and none of their calls of
//! the server that stayed fails; the new rule holds from the next call; each host hears
//! `notifications/tools/list_changed`. A file that cannot be used (not JSON, a FIFO)
//! changes nothing, and the audit says why. SIGHUP does what a change of the file
//! does, and does not stop the bridge. No fixed sleeps: each step waits for its audit
//! line or notification. Everything binds 127.0.0.1.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bridge_support::{many_entry, Bridge};
use capable::internal::ProtocolVersion;
use capable::{ClientOptions, ProtocolChoice};
use serde_json::{json, Value};

/// A directory of the test's own (the bridge watches the config's directory).
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let dir =
            std::env::temp_dir().join(format!("capable-reload-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn config(&self) -> PathBuf {
        self.0.join("servers.json")
    }

    /// Writes the config in place.
    fn write(&self, servers: &Value) {
        let text = json!({"mcpServers": servers}).to_string();
        std::fs::write(self.config(), text).unwrap();
    }

    /// Writes the config as editors do: a new file renamed over the old one.
    fn rename_in(&self, servers: &Value) {
        let new = self.0.join(".servers.json.swp");
        std::fs::write(&new, json!({"mcpServers": servers}).to_string()).unwrap();
        std::fs::rename(&new, self.config()).unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The `n`-th audit line of `event` (1 for the first), waited for.
#[track_caller]
fn nth(b: &Bridge, event: &str, n: usize) -> Value {
    let count = b.audit_count_until(n, |l| l["event"] == event);
    assert!(
        count >= n,
        "no {event} #{n}\n--- stderr\n{}",
        b.stderr_text()
    );
    b.audit()
        .into_iter()
        .filter(|l| l["event"] == event)
        .nth(n - 1)
        .unwrap()
}

/// Sends SIGHUP to the bridge.
fn hang_up(b: &Bridge) {
    // SAFETY: kill(2) of our own child's pid; no memory is involved.
    assert_eq!(unsafe { libc::kill(b.pid() as i32, libc::SIGHUP) }, 0);
}

fn echo(message: &str) -> serde_json::Map<String, Value> {
    json!({"message": message}).as_object().unwrap().clone()
}

#[test]
fn a_client_through_listen_calling_in_a_loop_never_fails_while_the_config_changes() {
    let dir = Dir::new("listen");
    let a = many_entry("no-resources", &[]);
    dir.write(&json!({"a": a}));
    let b = Bridge::start(&["--config", path(&dir.config()), "--listen", "127.0.0.1:0"]);
    let url = b.audit_until(|l| l["event"] == "listening")["url"]
        .as_str()
        .unwrap()
        .to_owned();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let options =
        ClientOptions::default().with_protocol(ProtocolChoice::Exact(ProtocolVersion::V2025_11_25));
    let config = capable::transport::http::HttpConfig::new(url.parse().unwrap());
    let session = Arc::new(rt.block_on(capable::connect_http(config, options)).unwrap());
    let mut notifications = session.notifications().unwrap();
    let tools = |s: &capable::Session| -> Vec<String> {
        let mut names: Vec<String> = rt
            .block_on(s.list_tools())
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .filter(|n| n.ends_with("__echo"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(tools(&session), ["a__echo"]);

    // A 2026-07-28 client beside it: no session, each request its own.
    let config = capable::transport::http::HttpConfig::new(url.parse().unwrap());
    let options = ClientOptions::default().with_protocol(ProtocolChoice::Modern);
    let modern = Arc::new(rt.block_on(capable::connect_http(config, options)).unwrap());
    assert_eq!(tools(&modern), ["a__echo"]);

    // The load: a call of a's echo after another in each era, until told to stop.
    let (done, calls, failed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(std::sync::Mutex::new(Vec::new())),
    );
    let looping: Vec<_> = [session.clone(), modern.clone()]
        .into_iter()
        .map(|session| {
            let (done, calls, failed) = (done.clone(), calls.clone(), failed.clone());
            rt.spawn(async move {
                while !done.load(Ordering::Relaxed) {
                    match session.call_tool("a__echo", Some(&echo("hi"))).await {
                        Ok(r) if !r.is_error.unwrap_or(false) => {}
                        other => failed.lock().unwrap().push(format!("{other:?}")),
                    }
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut list_changed = |what: &str| {
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(20), async {
                while let Some(n) = notifications.recv().await {
                    if n.method == "notifications/tools/list_changed" {
                        return;
                    }
                }
                panic!("the session ended");
            })
            .await
            .unwrap_or_else(|_| panic!("no tools/list_changed after {what}"))
        })
    };
    let calls_now = || calls.load(Ordering::Relaxed);
    let more_calls = |since: u64| {
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while calls_now() < since + 5 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(calls_now() >= since + 5, "the loop stalled");
    };
    more_calls(0);

    // A server added (the file renamed into place, as editors write).
    let second = many_entry("no-resources", &[]);
    dir.rename_in(&json!({"a": a, "b": second}));
    let reloaded = nth(&b, "reloaded", 1);
    assert_eq!(reloaded["added"], json!(["b"]), "{reloaded}");
    list_changed("adding b");
    // Ready for each client: each has the servers of its own.
    let b_ready = |l: &Value| l["event"] == "state" && l["server"] == "b" && l["state"] == "ready";
    assert_eq!(b.audit_count_until(2, b_ready), 2, "{}", b.stderr_text());
    assert_eq!(tools(&session), ["a__echo", "b__echo"]);
    assert_eq!(tools(&modern), ["a__echo", "b__echo"]);
    let called = rt
        .block_on(session.call_tool("b__echo", Some(&echo("to b"))))
        .unwrap();
    assert!(!called.is_error.unwrap_or(false), "{called:?}");
    // Counted under its own name, not as `other`.
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let scrape = listen_support::http_at(port, "GET", "/metrics", &[], "").body;
    assert!(
        scrape.contains(
            r#"requests_total{method="tools/call",server="b",outcome="ok",caller="anonymous"}"#
        ),
        "{scrape}"
    );
    assert!(scrape.contains(r#"upstream_up{server="b"} 1"#), "{scrape}");
    more_calls(calls_now());

    // A rule changed: b's echo no longer allowed, from the next call on.
    let mut ruled = second.clone();
    ruled["allowTools"] = json!(["nothing-here"]);
    dir.write(&json!({"a": a, "b": ruled}));
    let reloaded = nth(&b, "reloaded", 2);
    assert_eq!(reloaded["policies"], json!(["b"]), "{reloaded}");
    assert_eq!(
        reloaded["changed"],
        json!([]),
        "a rule restarts nothing: {reloaded}"
    );
    list_changed("b's rule");
    assert_eq!(tools(&session), ["a__echo"]);
    let refused = rt.block_on(session.call_tool("b__echo", Some(&echo("to b"))));
    assert!(refused.is_err(), "the new rule holds: {refused:?}");
    more_calls(calls_now());

    // A file that is not JSON: nothing changes, the audit says why.
    std::fs::write(dir.config(), "{\"mcpServers\": {").unwrap();
    let failed_line = nth(&b, "reload_failed", 1);
    assert!(
        failed_line["why"]
            .as_str()
            .unwrap()
            .contains("servers.json"),
        "{failed_line}"
    );
    assert_eq!(tools(&session), ["a__echo"]);
    more_calls(calls_now());

    // A server removed.
    dir.write(&json!({"a": a}));
    let reloaded = nth(&b, "reloaded", 3);
    assert_eq!(reloaded["removed"], json!(["b"]), "{reloaded}");
    list_changed("removing b");
    assert_eq!(tools(&session), ["a__echo"]);
    more_calls(calls_now());

    assert_eq!(
        tools(&modern),
        ["a__echo"],
        "the 2026-07-28 client's view too"
    );
    done.store(true, Ordering::Relaxed);
    for looping in looping {
        rt.block_on(looping).unwrap();
    }
    let failed = failed.lock().unwrap().clone();
    assert_eq!(
        failed,
        Vec::<String>::new(),
        "calls of a failed while the config changed"
    );
    assert!(calls_now() >= 25, "{} calls", calls_now());
    let metrics = b
        .audit()
        .iter()
        .filter(|l| l["event"] == "reloaded")
        .count();
    assert_eq!(
        metrics, 3,
        "a change of nothing (the pins file beside) is silent"
    );
}

#[test]
fn sighup_reloads_a_stdio_hosts_servers_and_a_fifo_a_deleted_or_a_huge_file_changes_nothing() {
    let dir = Dir::new("hup");
    let a = many_entry("no-resources", &[]);
    dir.write(&json!({"a": a}));
    let mut b = Bridge::start(&["--config", path(&dir.config()), "--no-watch"]);
    b.initialize(ProtocolVersion::V2025_11_25, json!({}));
    let call = |b: &mut Bridge, id: i64, name: &str| {
        b.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": {"message": "hi"}}),
        )
    };
    assert!(call(&mut b, 2, "a__echo")["result"].is_object());

    // Written, but not watched: nothing until SIGHUP.
    dir.write(&json!({"a": a, "b": many_entry("no-resources", &[])}));
    assert!(call(&mut b, 3, "a__echo")["result"].is_object());
    assert!(b.audit().iter().all(|l| l["event"] != "reloaded"));
    hang_up(&b);
    let reloaded = nth(&b, "reloaded", 1);
    assert_eq!(reloaded["added"], json!(["b"]), "{reloaded}");
    // The host hears of it, and calls the new server; a's calls go on.
    let until = std::time::Instant::now() + Duration::from_secs(20);
    let mut id = 10;
    loop {
        id += 1;
        assert!(call(&mut b, id, "a__echo")["result"].is_object());
        let heard = b
            .seen
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed");
        if heard {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "no list_changed: {:?}",
            b.seen
        );
        if let Some(m) = b.next_within(Duration::from_millis(50)) {
            b.seen.push(m);
        }
    }
    b.audit_until(|l| l["event"] == "state" && l["server"] == "b" && l["state"] == "ready");
    id += 1;
    let answer = call(&mut b, id, "b__echo");
    assert!(answer["result"].is_object(), "{answer}");

    // A FIFO in the file's place: refused at once (never opened), nothing changes.
    std::fs::remove_file(dir.config()).unwrap();
    let fifo = std::ffi::CString::new(path(&dir.config())).unwrap();
    // SAFETY: a NUL-terminated path that lives through the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    hang_up(&b);
    let failed = nth(&b, "reload_failed", 1);
    assert!(failed["why"].as_str().unwrap().contains("FIFO"), "{failed}");
    id += 1;
    assert!(call(&mut b, id, "b__echo")["result"].is_object(), "b stays");

    // Gone, then too big: each refused with why; b stays all along.
    std::fs::remove_file(dir.config()).unwrap();
    hang_up(&b);
    let failed = nth(&b, "reload_failed", 2);
    assert!(
        failed["why"].as_str().unwrap().contains("servers.json"),
        "{failed}"
    );
    let huge = format!(
        "{{\"mcpServers\": {{}}, \"x\": \"{}\"}}",
        "y".repeat(5 << 20)
    );
    std::fs::write(dir.config(), huge).unwrap();
    hang_up(&b);
    let failed = nth(&b, "reload_failed", 3);
    assert!(failed["why"].as_str().unwrap().contains("MiB"), "{failed}");
    id += 1;
    assert!(call(&mut b, id, "b__echo")["result"].is_object(), "b stays");
    assert_eq!(
        b.audit()
            .iter()
            .filter(|l| l["event"] == "reloaded")
            .count(),
        1
    );
    assert!(b.close().is_some(), "SIGHUP did not stop the bridge");
}
