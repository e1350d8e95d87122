//! Runs every client in its own process, round after round, and compares medians.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::Settings;

const METRICS: [&str; 4] = [
    "handshake_ms",
    "seq_read_rps",
    "pipelined_read_rps",
    "peak_rss_kib",
];

pub fn main(args: &[String]) -> i32 {
    let mut s = match Settings::parse(args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    if !std::path::Path::new(&s.server).exists() {
        eprintln!(
            "capable-bench: no bench server at {} (build it: cargo build --release -p capable-bench)",
            s.server
        );
        return 2;
    }
    if let Err(e) = s.placement.check() {
        eprintln!("capable-bench: {e}");
        return 2;
    }
    if let Some(n) = s.sessions {
        return sessions(&s, n);
    }
    // HTTP mode: one server for the whole run, stopped (by its PID) when `_server` drops.
    let _server = if s.http {
        match HttpServer::start(&s.server, s.placement, &[]) {
            Ok(server) => {
                s.url = Some(server.url.clone());
                Some(server)
            }
            Err(e) => {
                eprintln!("capable-bench: {e}");
                return 1;
            }
        }
    } else {
        None
    };
    let metrics: Vec<&str> = if s.http {
        let mut m = METRICS.to_vec();
        m.insert(1, "first_handshake_ms");
        m
    } else {
        METRICS.to_vec()
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("capable-bench: {e}");
            return 1;
        }
    };
    // rounds[r][client] = that client's figures in round r
    let mut rounds: Vec<BTreeMap<String, Value>> = Vec::new();
    for r in 0..s.rounds {
        let mut this = BTreeMap::new();
        let k = s.clients.len();
        for i in 0..k {
            let client = &s.clients[(i + r) % k];
            let out = Command::new(&exe)
                .arg("client")
                .arg(client)
                .args(s.to_args())
                .envs(s.placement.env())
                .stderr(Stdio::inherit())
                .output();
            let figures = match out {
                Ok(o) if o.status.success() => serde_json::from_slice::<Value>(&o.stdout).ok(),
                _ => None,
            };
            let Some(figures) = figures else {
                eprintln!(
                    "capable-bench: the {client} client failed in round {}",
                    r + 1
                );
                return 1;
            };
            if !s.json {
                eprintln!(
                    "round {}/{}: {client:<8} handshake {:.2} ms, seq {:.0}/s, pipelined {:.0}/s, peak RSS {} KiB",
                    r + 1,
                    s.rounds,
                    figures["handshake_ms"].as_f64().unwrap_or(0.0),
                    figures["seq_read_rps"].as_f64().unwrap_or(0.0),
                    figures["pipelined_read_rps"].as_f64().unwrap_or(0.0),
                    figures["peak_rss_kib"].as_u64().unwrap_or(0),
                );
            }
            this.insert(client.clone(), figures);
        }
        rounds.push(this);
    }

    let value = |round: &BTreeMap<String, Value>, client: &str, metric: &str| {
        round.get(client).and_then(|f| f[metric].as_f64())
    };
    let mut medians = serde_json::Map::new();
    for client in &s.clients {
        let mut m = serde_json::Map::new();
        for &metric in &metrics {
            let values: Vec<f64> = rounds
                .iter()
                .filter_map(|r| value(r, client, metric))
                .collect();
            m.insert(metric.into(), json!(median(values)));
        }
        medians.insert(client.clone(), Value::Object(m));
    }
    // Per-round ratios, then their median: drift between rounds cancels out.
    let ratio = |a: &str, b: &str, metric: &str| -> Option<f64> {
        let per_round: Vec<f64> = rounds
            .iter()
            .filter_map(|r| Some(value(r, a, metric)? / value(r, b, metric)?))
            .collect();
        median(per_round)
    };
    let mut ratios = serde_json::Map::new();
    for (name, a, b, metric) in [
        ("capable_vs_raw_seq", "capable", "raw", "seq_read_rps"),
        (
            "capable_vs_raw_pipelined",
            "capable",
            "raw",
            "pipelined_read_rps",
        ),
        (
            "capable_vs_raw_hyper_seq",
            "capable",
            "raw-hyper",
            "seq_read_rps",
        ),
        (
            "capable_vs_raw_hyper_pipelined",
            "capable",
            "raw-hyper",
            "pipelined_read_rps",
        ),
        ("capable_vs_rmcp_seq", "capable", "rmcp", "seq_read_rps"),
        (
            "capable_vs_rmcp_pipelined",
            "capable",
            "rmcp",
            "pipelined_read_rps",
        ),
        (
            "capable_vs_tokio_pipe_seq",
            "capable",
            "tokio-pipe",
            "seq_read_rps",
        ),
        (
            "capable_vs_tokio_pipe_pipelined",
            "capable",
            "tokio-pipe",
            "pipelined_read_rps",
        ),
        ("tokio_pipe_vs_raw_seq", "tokio-pipe", "raw", "seq_read_rps"),
        (
            "tokio_pipe_vs_raw_pipelined",
            "tokio-pipe",
            "raw",
            "pipelined_read_rps",
        ),
        ("rmcp_vs_raw_seq", "rmcp", "raw", "seq_read_rps"),
        ("rmcp_vs_raw_pipelined", "rmcp", "raw", "pipelined_read_rps"),
        (
            "capable_vs_rmcp_pooled_seq",
            "capable",
            "rmcp-pooled",
            "seq_read_rps",
        ),
        (
            "capable_vs_rmcp_pooled_pipelined",
            "capable",
            "rmcp-pooled",
            "pipelined_read_rps",
        ),
        (
            "rmcp_pooled_vs_raw_seq",
            "rmcp-pooled",
            "raw",
            "seq_read_rps",
        ),
        (
            "rmcp_pooled_vs_raw_pipelined",
            "rmcp-pooled",
            "raw",
            "pipelined_read_rps",
        ),
        (
            "capable_vs_rmcp_handshake",
            "capable",
            "rmcp",
            "handshake_ms",
        ),
        (
            "capable_vs_rmcp_pooled_handshake",
            "capable",
            "rmcp-pooled",
            "handshake_ms",
        ),
        (
            "capable_vs_rmcp_peak_rss",
            "capable",
            "rmcp",
            "peak_rss_kib",
        ),
    ] {
        if let Some(r) = ratio(a, b, metric) {
            ratios.insert(name.into(), json!(r));
        }
    }
    let report = json!({
        "settings": {"transport": if s.http { "http" } else { "stdio" }, "placement": s.placement.as_str(), "n": s.n, "c": s.c, "warmup": s.warmup, "handshakes": s.handshakes, "rounds": s.rounds},
        "median": medians,
        "ratios": ratios,
    });
    if s.json {
        println!("{report}");
    } else {
        print!("{}", human(&s, &report));
    }
    if s.guard {
        return guard(&report, s.http);
    }
    0
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

fn human(s: &Settings, report: &Value) -> String {
    let mut out = format!(
        "\n{}, {} placement, {}, n = {}, {} in flight, medians of {} interleaved rounds\n\n",
        if s.http {
            "Streamable HTTP on loopback"
        } else {
            "stdio"
        },
        s.placement.as_str(),
        match s.calls {
            true => "tools/call of a one-block text tool (reads/s: calls/s)",
            false => "1 KiB resources/read",
        },
        s.n,
        s.c,
        s.rounds
    );
    let w = s.clients.iter().map(String::len).max().unwrap_or(0).max(9);
    out.push_str(&format!(
        "{:<w$} {:>13} {:>14} {:>20} {:>14}{}\n",
        "client",
        "handshake ms",
        "seq reads/s",
        "pipelined reads/s",
        "peak RSS KiB",
        if s.http { "   first handshake ms" } else { "" },
    ));
    for client in &s.clients {
        let m = &report["median"][client];
        let first = if s.http {
            format!(
                " {:>20.2}",
                m["first_handshake_ms"].as_f64().unwrap_or(f64::NAN)
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{:<w$} {:>13.2} {:>14.0} {:>20.0} {:>14.0}{first}\n",
            client,
            m["handshake_ms"].as_f64().unwrap_or(f64::NAN),
            m["seq_read_rps"].as_f64().unwrap_or(f64::NAN),
            m["pipelined_read_rps"].as_f64().unwrap_or(f64::NAN),
            m["peak_rss_kib"].as_f64().unwrap_or(f64::NAN),
        ));
    }
    out.push('\n');
    if let Some(ratios) = report["ratios"].as_object() {
        for (name, r) in ratios {
            out.push_str(&format!(
                "{name:<33} {:.2}×\n",
                r.as_f64().unwrap_or(f64::NAN)
            ));
        }
    }
    out
}

/// Fails (exit 1) when capable is behind rmcp in this run: slower sequential or
/// pipelined reads, or a higher peak RSS — over HTTP behind either rmcp configuration.
/// Ratios only, never absolute times.
fn guard(report: &Value, http: bool) -> i32 {
    let r = |name: &str| report["ratios"][name].as_f64();
    let mut checks = vec![
        (
            "sequential reads capable/rmcp",
            r("capable_vs_rmcp_seq"),
            true,
        ),
        (
            "pipelined reads capable/rmcp",
            r("capable_vs_rmcp_pipelined"),
            true,
        ),
        (
            "peak RSS capable/rmcp",
            r("capable_vs_rmcp_peak_rss"),
            false,
        ),
    ];
    if http {
        checks.extend([
            (
                "sequential reads capable/rmcp keep-alive",
                r("capable_vs_rmcp_pooled_seq"),
                true,
            ),
            (
                "pipelined reads capable/rmcp keep-alive",
                r("capable_vs_rmcp_pooled_pipelined"),
                true,
            ),
        ]);
    }
    let mut failed = false;
    for (what, ratio, higher_is_better) in checks {
        let Some(ratio) = ratio else {
            eprintln!("bench-guard: no figure for {what}");
            failed = true;
            continue;
        };
        let behind = if higher_is_better {
            ratio < 1.0
        } else {
            ratio > 1.0
        };
        eprintln!(
            "bench-guard: {what} = {ratio:.2} {}",
            if behind { "BEHIND" } else { "ok" }
        );
        failed |= behind;
    }
    i32::from(failed)
}

/// `--sessions N`: the sessions client (`sessions.rs`) against a legacy and then a
/// modern HTTP bench server, each started for it and stopped after.
fn sessions(s: &Settings, n: usize) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("capable-bench: {e}");
            return 1;
        }
    };
    let mut reports = serde_json::Map::new();
    for (era, args) in [("legacy", &[][..]), ("modern", &["--modern"][..])] {
        let server = match HttpServer::start(&s.server, s.placement, args) {
            Ok(server) => server,
            Err(e) => {
                eprintln!("capable-bench: {e}");
                return 1;
            }
        };
        let out = Command::new(&exe)
            .args(["client", "sessions", "--url", &server.url])
            .args([
                "--sessions",
                &n.to_string(),
                "--reads",
                &s.reads.to_string(),
            ])
            .envs(s.placement.env())
            .stderr(Stdio::inherit())
            .output();
        drop(server);
        let report = match out {
            Ok(o) if o.status.success() => serde_json::from_slice::<Value>(&o.stdout).ok(),
            _ => None,
        };
        let Some(report) = report else {
            eprintln!("capable-bench: the sessions client failed against the {era} server");
            return 1;
        };
        if !s.json {
            let f = |k: &str| report[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "{era} ({}): {n} sessions ready in {:.0} ms; {:.1} KiB per idle session \
                 ({:.1} trimmed, {:.1} after reads); {:.0} reads/s across them; after close: fds {:+}, tasks {:+}",
                report["era"].as_str().unwrap_or("?"),
                f("all_ready_ms"),
                f("kib_per_idle_session"),
                f("kib_per_idle_session_trimmed"),
                f("kib_per_session_after_reads"),
                f("reads_per_s"),
                report["fd_growth"].as_i64().unwrap_or(0),
                report["task_growth"].as_i64().unwrap_or(0),
            );
        }
        reports.insert(era.into(), report);
    }
    if s.json {
        println!("{}", Value::Object(reports));
    }
    0
}

/// The HTTP bench server of an `--http` run: started once, its URL read from the first
/// line of its stdout; dropping it closes its stdin and kills it by its PID.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(path: &str, placement: crate::Placement, args: &[&str]) -> Result<HttpServer, String> {
        let mut child = Command::new(path)
            .args(args)
            .envs(placement.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                format!("{path}: {e} (build it: cargo build --release -p capable-bench)")
            })?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| std::io::BufReader::new(out).read_line(&mut line));
        let url = line.trim().to_owned();
        let server = HttpServer { child, url };
        match read {
            Some(Ok(n)) if n > 0 && server.url.starts_with("http://127.0.0.1:") => Ok(server),
            _ => Err(format!("{path} printed no URL")),
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
