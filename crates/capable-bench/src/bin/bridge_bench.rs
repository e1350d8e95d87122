//! `capable-bench-bridge`: capable through `capable bridge` against capable direct, in
//! one run, over stdio ⇄ stdio and stdio ⇄ Streamable HTTP; mcp-remote (npm) side by
//! side on the same HTTP server.
//!
//! ```text
//! cargo build --release -p capable-cli -p capable-bench
//! target/release/capable-bench-bridge [--rounds 5] [-n 20000] [-c 32] [--warmup 1000]
//!                                     [--handshakes 20] [--mcp-remote PATH]
//!                                     [--against PATH] [--json]
//! ```
//!
//! Every round runs each client once, in an order that rotates from round to round,
//! each in its own process (`capable-bench client capable …`, the same capable client
//! every time), so that drift on a busy machine hits them all alike:
//!
//! | client | the client speaks | to |
//! |---|---|---|
//! | `stdio-direct` | stdio | `capable-bench-server` |
//! | `stdio-bridged` | stdio, legacy | `capable bridge -- capable-bench-server` |
//! | `stdio-bridged-2026` | stdio, 2026-07-28 | the same bridge, which carries each request across the eras |
//! | `stdio-cat-relay` | stdio | `cat`, each way, in front of `capable-bench-server`: bytes moved by processes between, nothing read — the floor of any bridge on this machine |
//! | `http-direct` | Streamable HTTP | `capable-bench-http-server` |
//! | `http-bridged` | stdio, legacy | `capable bridge --url` that server |
//! | `http-mcp-remote` | stdio, legacy | `mcp-remote` that server (`.peers/mcp-remote`; left out when missing) |
//!
//! `--against PATH` names another `capable` binary (an earlier build, say) and adds
//! its bridged rows to the same rounds (`stdio-bridged@against`, `stdio-bridged-2026@against`,
//! `http-bridged@against`), so a change's cost is one run's ratio — this build's
//! throughput over that one's, round by round — not two runs' drift
//! (`against_build` in the report).
//!
//! Both bench servers are legacy (2025-11-25), so the direct clients speak legacy; a
//! bridged client is held to the legacy era (`--legacy`) to compare like with like —
//! what the hosts of today ask a bridge — and `stdio-bridged-2026` shows what a
//! 2026-07-28 host pays on top (the envelope read and stripped, each result completed
//! for that era).
//!
//! Figures, medians over the rounds: cold start (the first connection, the server's
//! start included), a handshake, sequential and pipelined 1 KiB reads per second, the
//! median time of one sequential read, and the resident set of the process the client
//! started (the bridge's, mcp-remote's, the bench server's) once it is up and idle.
//! Against direct, per round then the median: throughput bridged/direct, and the added
//! median latency (bridged p50 − direct p50). The targets: ≥ 0.8× direct, ≤ 30 µs added,
//! ≤ 10 MiB idle.

#[path = "shared/mod.rs"]
mod shared;

use shared::{median, number, sibling};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

struct Settings {
    rounds: usize,
    n: usize,
    c: usize,
    warmup: usize,
    handshakes: usize,
    mcp_remote: Option<PathBuf>,
    against: Option<PathBuf>,
    json: bool,
}

fn main() {
    let settings = match parse(std::env::args().skip(1).collect()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    std::process::exit(run(&settings));
}

fn parse(args: Vec<String>) -> Result<Settings, String> {
    let mut s = Settings {
        rounds: 5,
        n: 20_000,
        c: 32,
        warmup: 1_000,
        handshakes: 20,
        mcp_remote: Some(
            workspace().join(".peers/mcp-remote/node_modules/mcp-remote/dist/proxy.js"),
        ),
        against: None,
        json: false,
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--rounds" => s.rounds = number(value()?)?.max(1),
            "-n" => s.n = number(value()?)?.max(1),
            "-c" => s.c = number(value()?)?.max(1),
            "--warmup" => s.warmup = number(value()?)?,
            "--handshakes" => s.handshakes = number(value()?)?.max(1),
            "--mcp-remote" => s.mcp_remote = Some(PathBuf::from(value()?)),
            "--against" => s.against = Some(PathBuf::from(value()?)),
            "--json" => s.json = true,
            _ => {
                return Err(
                    "usage: capable-bench-bridge [--rounds R] [-n N] [-c C] [--warmup W] \
                     [--handshakes H] [--mcp-remote PATH] [--against PATH] [--json]"
                        .into(),
                )
            }
        }
    }
    Ok(s)
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The HTTP bench server for the run, stopped by its PID when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start() -> Result<HttpServer, String> {
        let path = sibling("capable-bench-http-server");
        let mut child = Command::new(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let url = line.trim().to_owned();
        let server = HttpServer { child, url };
        match server.url.starts_with("http://127.0.0.1:") {
            true => Ok(server),
            false => Err(format!("{} printed no URL", path.display())),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each client's arguments to `capable-bench client capable`.
fn clients(s: &Settings, url: &str) -> Vec<(&'static str, Vec<String>)> {
    let capable = sibling("capable").display().to_string();
    let server = sibling("capable-bench-server").display().to_string();
    let behind = |server: &str, args: &[&str]| {
        let mut all = vec!["--server".to_owned(), server.to_owned()];
        for arg in args {
            all.extend(["--server-arg".to_owned(), (*arg).to_owned()]);
        }
        all
    };
    let legacy = |mut args: Vec<String>| {
        args.push("--legacy".to_owned());
        args
    };
    let bridged = behind(&capable, &["bridge", "--", &server]);
    let http_bridged = legacy(behind(&capable, &["bridge", "--url", url]));
    // `sh -c 'cat | SERVER | cat' SERVER`: the host's bytes and the server's each
    // pass one more process, which only copies them.
    let cat_relay = behind("sh", &["-c", "cat | \"$0\" | cat", &server]);
    let mut clients = vec![
        ("stdio-direct", behind(&server, &[])),
        ("stdio-bridged", legacy(bridged.clone())),
        ("stdio-bridged-2026", bridged),
        ("stdio-cat-relay", cat_relay),
        ("http-direct", vec!["--url".to_owned(), url.to_owned()]),
        ("http-bridged", http_bridged),
    ];
    if let Some(other) = &s.against {
        let other = other.display().to_string();
        let bridged = behind(&other, &["bridge", "--", &server]);
        clients.extend([
            ("stdio-bridged@against", legacy(bridged.clone())),
            ("stdio-bridged-2026@against", bridged),
            (
                "http-bridged@against",
                legacy(behind(&other, &["bridge", "--url", url])),
            ),
        ]);
    }
    match &s.mcp_remote {
        Some(path) if path.exists() => {
            let proxy = path.display().to_string();
            clients.push(("http-mcp-remote", legacy(behind("node", &[&proxy, url]))));
        }
        _ => eprintln!("capable-bench-bridge: no mcp-remote (run .ci/install-peers): left out"),
    }
    clients
}

fn run(s: &Settings) -> i32 {
    if let Some(other) = s.against.as_deref().filter(|p| !p.exists()) {
        eprintln!(
            "capable-bench-bridge: --against {}: no such file",
            other.display()
        );
        return 2;
    }
    for needed in ["capable", "capable-bench", "capable-bench-server"] {
        if !sibling(needed).exists() {
            eprintln!(
                "capable-bench-bridge: no {needed} next to this binary (cargo build --release -p capable-cli -p capable-bench)"
            );
            return 2;
        }
    }
    let http = match HttpServer::start() {
        Ok(http) => http,
        Err(e) => {
            eprintln!("capable-bench-bridge: {e}");
            return 1;
        }
    };
    let clients = clients(s, &http.url);
    let common = [
        "-n".to_owned(),
        s.n.to_string(),
        "-c".to_owned(),
        s.c.to_string(),
        "--warmup".to_owned(),
        s.warmup.to_string(),
        "--handshakes".to_owned(),
        s.handshakes.to_string(),
        "--latency".to_owned(),
    ];
    let mut rounds: Vec<BTreeMap<&str, Value>> = Vec::new();
    for r in 0..s.rounds {
        let mut this = BTreeMap::new();
        for i in 0..clients.len() {
            let (name, args) = &clients[(i + r) % clients.len()];
            let out = Command::new(sibling("capable-bench"))
                .args(["client", "capable"])
                .args(args)
                .args(&common)
                .stderr(Stdio::inherit())
                .output();
            let figures = match out {
                Ok(o) if o.status.success() => serde_json::from_slice::<Value>(&o.stdout).ok(),
                _ => None,
            };
            let Some(figures) = figures else {
                eprintln!("capable-bench-bridge: {name} failed in round {}", r + 1);
                return 1;
            };
            if !s.json {
                eprintln!("round {}/{}: {name:<16} {figures}", r + 1, s.rounds);
            }
            this.insert(*name, figures);
        }
        rounds.push(this);
    }
    let report = report(&rounds, &clients);
    match s.json {
        true => println!("{report}"),
        false => println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ),
    }
    0
}

const METRICS: [&str; 6] = [
    "first_handshake_ms",
    "handshake_ms",
    "seq_read_rps",
    "pipelined_read_rps",
    "seq_p50_us",
    "server_rss_kib",
];

fn report(rounds: &[BTreeMap<&str, Value>], clients: &[(&str, Vec<String>)]) -> Value {
    let value = |round: &BTreeMap<&str, Value>, client: &str, metric: &str| {
        round.get(client).and_then(|f| f[metric].as_f64())
    };
    let mut medians = serde_json::Map::new();
    for (client, _) in clients {
        let mut m = serde_json::Map::new();
        for metric in METRICS {
            let values = rounds
                .iter()
                .filter_map(|r| value(r, client, metric))
                .collect();
            m.insert(metric.into(), json!(median(values)));
        }
        medians.insert((*client).into(), Value::Object(m));
    }
    let per_round = |f: &dyn Fn(&BTreeMap<&str, Value>) -> Option<f64>| {
        median(rounds.iter().filter_map(f).collect())
    };
    let mut against = serde_json::Map::new();
    for (bridged, direct) in [
        ("stdio-bridged", "stdio-direct"),
        ("stdio-bridged-2026", "stdio-direct"),
        ("stdio-cat-relay", "stdio-direct"),
        ("http-bridged", "http-direct"),
        ("http-mcp-remote", "http-direct"),
        ("stdio-bridged@against", "stdio-direct"),
        ("stdio-bridged-2026@against", "stdio-direct"),
        ("http-bridged@against", "http-direct"),
    ] {
        if !clients.iter().any(|(name, _)| *name == bridged) {
            continue;
        }
        let ratio = |metric: &str| {
            per_round(&|r| Some(value(r, bridged, metric)? / value(r, direct, metric)?))
        };
        let added = per_round(&|r| {
            Some(value(r, bridged, "seq_p50_us")? - value(r, direct, "seq_p50_us")?)
        });
        against.insert(
            format!("{bridged}/{direct}"),
            json!({
                "seq_ratio": ratio("seq_read_rps"),
                "pipelined_ratio": ratio("pipelined_read_rps"),
                "added_p50_us": added,
            }),
        );
    }
    // This build over the other (`--against`), round by round: > 1 is faster here.
    let mut builds = serde_json::Map::new();
    for row in ["stdio-bridged", "stdio-bridged-2026", "http-bridged"] {
        let other = format!("{row}@against");
        if !rounds.iter().any(|r| r.contains_key(other.as_str())) {
            continue;
        }
        let ratio =
            |metric: &str| per_round(&|r| Some(value(r, row, metric)? / value(r, &other, metric)?));
        let added =
            per_round(&|r| Some(value(r, row, "seq_p50_us")? - value(r, &other, "seq_p50_us")?));
        builds.insert(
            format!("{row}/{other}"),
            json!({
                "seq_ratio": ratio("seq_read_rps"),
                "pipelined_ratio": ratio("pipelined_read_rps"),
                "added_p50_us": added,
            }),
        );
    }
    json!({"median": medians, "against_direct": against, "against_build": builds, "rounds": rounds.len()})
}
