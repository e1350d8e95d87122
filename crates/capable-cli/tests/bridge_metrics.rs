//! `capable bridge --listen`, operated: `/metrics` (Prometheus text) counting a known
//! workload, scraped by Debian's `prometheus` server and read back through its query
//! API; `/healthz` and `/readyz` (a config's server down, then up) outside the token;
//! `/metrics` behind it, or on a port of its own with `--metrics ADDR`.

#[path = "bridge_support/mod.rs"]
mod bridge_support;
mod common;
#[path = "listen_support/mod.rs"]
mod listen_support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bridge_support::Bridge;
use common::TempFile;
use listen_support::{http_at, post};
use serde_json::{json, Value};

/// How long anything waited for here may take.
const WAIT: Duration = Duration::from_secs(30);

/// `capable bridge --listen 127.0.0.1:0 --config F FLAGS` over `servers`: the bridge,
/// its port, the config file (kept while it runs).
fn listening_many(test: &str, servers: Value, flags: &[&str]) -> (Bridge, u16, TempFile) {
    let config = json!({"mcpServers": servers}).to_string();
    let file = TempFile::new(&format!("bridge-metrics-{test}.json"), &config);
    let mut args = vec!["--listen", "127.0.0.1:0", "--config", file.path()];
    args.extend_from_slice(flags);
    let b = Bridge::start(&args);
    let port = port_of(&b.audit_until(|l| l["event"] == "listening"));
    (b, port, file)
}

/// The port of an audit line's `url`.
fn port_of(line: &Value) -> u16 {
    let url = line["url"].as_str().unwrap();
    let after = url.trim_start_matches("http://127.0.0.1:");
    after[..after.find('/').unwrap()].parse().unwrap()
}

/// A fixture server with an `echo` tool.
fn echo() -> Value {
    bridge_support::many_entry("no-resources", &[])
}

/// A server that starts only once `flag` exists (until then it exits at once).
fn late(flag: &std::path::Path) -> Value {
    let script = format!(
        "test -f '{}' || exit 1; exec '{}' fixture --profile no-resources",
        flag.display(),
        common::bin()
    );
    json!({"command": "sh", "args": ["-c", script]})
}

/// `n` calls of `a__echo` in the legacy session `session`, each answered.
fn call_echo(port: u16, session: &str, n: usize, token: Option<&str>) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    for id in 0..n {
        let mut headers = vec![("Mcp-Session-Id", session)];
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer.as_str()));
        }
        let call = json!({"jsonrpc": "2.0", "id": 100 + id, "method": "tools/call",
            "params": {"name": "a__echo", "arguments": {"message": "m"}}});
        let answer = post(port, &headers, call);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(answer.body.contains(r#""text":"m""#), "{}", answer.body);
    }
}

/// A legacy session, initialized (with `token`, when the listener wants one).
fn session(port: u16, token: Option<&str>) -> String {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = Vec::new();
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer.as_str()));
    }
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}});
    let started = post(port, &headers, init);
    assert_eq!(started.status, 200, "{}", started.body);
    let session = started.header("mcp-session-id").unwrap().to_owned();
    headers.push(("Mcp-Session-Id", session.as_str()));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(port, &headers, initialized).status, 202);
    session
}

/// The value of the sample `line` (`name{labels}`) in a scrape, if it is there.
fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Asks `get` until `done` says yes of what it returned (within [`WAIT`]).
#[track_caller]
fn until<T: std::fmt::Debug>(what: &str, get: impl Fn() -> T, done: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        let got = get();
        if done(&got) {
            return got;
        }
        assert!(Instant::now() < deadline, "{what}: still {got:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn metrics_count_a_known_workload_and_readyz_follows_a_server_down_then_up() {
    let flag = std::env::temp_dir().join(format!("capable-metrics-late-{}", std::process::id()));
    let _ = std::fs::remove_file(&flag);
    let (_b, port, _file) = listening_many(
        "workload",
        json!({"a": echo(), "late": late(&flag)}),
        &["--listen-token", "s3cret"],
    );
    let token = [("Authorization", "Bearer s3cret")];
    // The process is up; no server has started yet (they start at a host's first
    // word), so none is down. Neither probe wants the token; another Host is refused.
    assert_eq!(http_at(port, "GET", "/healthz", &[], "").status, 200);
    let ready = http_at(port, "GET", "/readyz", &[], "");
    assert_eq!((ready.status, ready.json()), (200, json!({"ready": true})));
    let rebinding = [("Host", "evil.example")];
    assert_eq!(http_at(port, "GET", "/healthz", &rebinding, "").status, 421);
    // /metrics wants what /mcp wants.
    assert_eq!(http_at(port, "GET", "/metrics", &[], "").status, 401);

    let session = session(port, Some("s3cret"));
    // `late` exits at once: down, and said to be, with its state.
    let down = until(
        "readyz while late is down",
        || {
            let r = http_at(port, "GET", "/readyz", &[], "");
            (r.status, r.body)
        },
        |(status, _)| *status == 503,
    );
    let down: Value = serde_json::from_str(&down.1).unwrap();
    assert_eq!(down["down"][0]["server"], "late", "{down}");
    assert_eq!(down["down"].as_array().unwrap().len(), 1, "{down}");

    call_echo(port, &session, 5, Some("s3cret"));
    let scrape = http_at(port, "GET", "/metrics", &token, "");
    assert_eq!(scrape.status, 200);
    assert!(scrape
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = &scrape.body;
    let calls = r#"capable_bridge_requests_total{method="tools/call",server="a",outcome="ok",caller="anonymous"}"#;
    assert_eq!(sample(text, calls), Some(5.0), "{text}");
    let took = r#"capable_bridge_request_duration_seconds_count{method="tools/call",server="a"}"#;
    assert_eq!(sample(text, took), Some(5.0), "{text}");
    assert_eq!(sample(text, "capable_bridge_requests_in_flight"), Some(0.0));
    let legacy = r#"capable_bridge_sessions{kind="legacy"}"#;
    assert_eq!(sample(text, legacy), Some(1.0), "{text}");
    assert_eq!(
        sample(text, r#"capable_bridge_upstream_up{server="late"}"#),
        Some(0.0)
    );
    let restarts = r#"capable_bridge_upstream_restarts_total{server="late"}"#;
    assert!(sample(text, restarts).unwrap() >= 1.0, "{text}");
    let refused = r#"capable_bridge_refusals_total{reason="token"}"#;
    assert_eq!(sample(text, refused), Some(1.0), "{text}");

    // The server can start now: at its next restart it is up, and the bridge ready.
    std::fs::write(&flag, "").unwrap();
    let up = until(
        "readyz once late is up",
        || http_at(port, "GET", "/readyz", &[], "").status,
        |s| *s == 200,
    );
    assert_eq!(up, 200);
    let text = http_at(port, "GET", "/metrics", &token, "").body;
    assert_eq!(
        sample(&text, r#"capable_bridge_upstream_up{server="late"}"#),
        Some(1.0)
    );
    let _ = std::fs::remove_file(&flag);
}

#[test]
fn metrics_on_a_port_of_their_own_leave_the_listener() {
    let (b, port, _file) =
        listening_many("port", json!({"a": echo()}), &["--metrics", "127.0.0.1:0"]);
    let metrics = port_of(&b.audit_until(|l| l["event"] == "metrics"));
    let session = session(port, None);
    call_echo(port, &session, 3, None);
    let calls = r#"capable_bridge_requests_total{method="tools/call",server="a",outcome="ok",caller="anonymous"}"#;
    let text = http_at(metrics, "GET", "/metrics", &[], "").body;
    assert_eq!(sample(&text, calls), Some(3.0), "{text}");
    // Not on the listener any more; the probes are on both.
    assert_eq!(http_at(port, "GET", "/metrics", &[], "").status, 404);
    assert_eq!(http_at(metrics, "GET", "/readyz", &[], "").status, 200);
    assert_eq!(http_at(port, "GET", "/healthz", &[], "").status, 200);
    // The metrics port keeps the Host and Origin rules (a page's rebinding is refused).
    let rebinding = [("Host", "evil.example")];
    assert_eq!(
        http_at(metrics, "GET", "/metrics", &rebinding, "").status,
        421
    );
    let page = [("Origin", "http://evil.example")];
    assert_eq!(http_at(metrics, "GET", "/metrics", &page, "").status, 403);
    // Another address than loopback wants --allow-remote.
    let refused = common::capable(
        &[
            "bridge",
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "0.0.0.0:0",
            "--",
            "true",
        ],
        Duration::from_secs(20),
    );
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("--allow-remote"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_scraper_that_hammers_metrics_fails_no_request() {
    let (_b, port, _file) = listening_many("hammer", json!({"a": echo()}), &[]);
    let session = session(port, None);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scrapers: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut statuses = std::collections::BTreeSet::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    statuses.insert(http_at(port, "GET", "/metrics", &[], "").status);
                }
                statuses
            })
        })
        .collect();
    call_echo(port, &session, 50, None);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for scraper in scrapers {
        let statuses = scraper.join().unwrap();
        // Written, or told to come back (one scrape is written at a time): never an
        // error, never a request held up for good.
        assert!(statuses.contains(&200), "{statuses:?}");
        assert!(
            statuses.iter().all(|s| [200, 429].contains(s)),
            "{statuses:?}"
        );
    }
    let text = http_at(port, "GET", "/metrics", &[], "").body;
    let calls = r#"capable_bridge_requests_total{method="tools/call",server="a",outcome="ok",caller="anonymous"}"#;
    assert_eq!(sample(&text, calls), Some(50.0), "{text}");
}

/// Debian's Prometheus server, its data in a directory of its own, stopped (by its
/// PID) and its directory removed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Prometheus {
    /// Started scraping `target` (`127.0.0.1:PORT`) every 200 ms with `token`, or
    /// `None` when the `prometheus` binary is not installed (the test says it skipped)
    /// — unless `CAPABLE_REQUIRE_PROMETHEUS` is set.
    fn start(target: u16, token: &str) -> Option<Prometheus> {
        let binary = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists());
        let Some(binary) = binary else {
            assert!(
                std::env::var_os("CAPABLE_REQUIRE_PROMETHEUS").is_none(),
                "CAPABLE_REQUIRE_PROMETHEUS is set but prometheus is not installed"
            );
            eprintln!("skipped: prometheus is not installed (apt-get install prometheus)");
            return None;
        };
        let dir = std::env::temp_dir().join(format!("capable-prometheus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
             scrape_configs:\n  - job_name: capable\n    authorization:\n      credentials: {token}\n    \
             static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        // A free loopback port for its API.
        let port = capable_test_support::free_port();
        let child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, port, dir };
        until(
            "prometheus ready",
            || std::net::TcpStream::connect(("127.0.0.1", p.port)).is_ok(),
            |up| *up,
        );
        Some(p)
    }

    /// The value of the instant query `query` (a single series), as Prometheus has it.
    fn query(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let path = format!("/api/v1/query?query={encoded}");
        let answer = http_at(self.port, "GET", &path, &[], "");
        if answer.status != 200 {
            return None;
        }
        let value = &answer.json()["data"]["result"][0]["value"][1];
        value.as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // By its PID, never by name.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn prometheus_scrapes_the_gateway_and_has_its_counters() {
    let (_b, port, _file) = listening_many(
        "prometheus",
        json!({"a": echo()}),
        &["--listen-token", "s3cret"],
    );
    let Some(prometheus) = Prometheus::start(port, "s3cret") else {
        return;
    };
    let session = session(port, Some("s3cret"));
    call_echo(port, &session, 7, Some("s3cret"));
    // The scraper got in with the token, and read the counter as the workload left it.
    let calls = r#"capable_bridge_requests_total{method="tools/call",server="a",outcome="ok",caller="anonymous"}"#;
    let seen = until(
        "prometheus has the calls",
        || prometheus.query(calls),
        |v| *v == Some(7.0),
    );
    assert_eq!(seen, Some(7.0));
    assert_eq!(prometheus.query(r#"up{job="capable"}"#), Some(1.0));
    let took = r#"capable_bridge_request_duration_seconds_count{method="tools/call",server="a"}"#;
    assert_eq!(prometheus.query(took), Some(7.0));
    assert_eq!(
        prometheus.query(r#"capable_bridge_upstream_up{server="a"}"#),
        Some(1.0)
    );
}
