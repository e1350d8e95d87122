//! `--agentgateway BINARY`: capable's gateway and agentgateway side by side, in one run.
//!
//! One HTTP upstream (`capable-bench-http-server`, a legacy Streamable HTTP server);
//! in front of it, in rounds whose order rotates, each gateway started afresh:
//!
//! | row | the client talks to |
//! |---|---|
//! | `upstream` | the HTTP server itself (the floor every added latency is over) |
//! | `capable` | `capable bridge --listen --seal-key-file KEY --url UPSTREAM` |
//! | `agentgateway` | `agentgateway -f CONFIG`: one MCP target, the upstream over Streamable HTTP |
//!
//! Both gateways seal a legacy session's state into its id (agentgateway with AES-GCM by
//! default, capable with its key file), so either can run as replicas with no store. The
//! same capable client in a legacy session loads each (1 KiB reads, sequential then
//! pipelined). Each gateway's resident set is read once it listens and has been idle for
//! half a second (`idle_rss_kib`), and its peak after the load (`loaded_hwm_kib`).
//!
//! agentgateway binds its port on every address (it has no per-port address); run the
//! comparison in a network namespace of its own holding only loopback
//! (`crates/capable-bench/agentgateway-compare.sh` does), so nothing is reachable from
//! outside the machine.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::procs::{self, Proc};
use crate::rounds::{medians, per_round, value, Round};
use crate::Settings;

const ROWS: [&str; 3] = ["upstream", "capable", "agentgateway"];

/// Runs the rows in rotating rounds; the report.
pub fn run(binary: &Path, s: &Settings) -> Result<Value, String> {
    if !binary.exists() {
        return Err(format!("no agentgateway at {}", binary.display()));
    }
    let upstream = procs::upstream()?;
    let key = procs::seal_key()?;
    let mut rounds: Vec<Round> = Vec::new();
    for r in 0..s.rounds {
        let mut this = Map::new();
        for i in 0..ROWS.len() {
            let row = ROWS[(i + r) % ROWS.len()];
            let gateway: Option<Proc> = match row {
                "capable" => Some(procs::replica(Some(&key), &upstream.url)?),
                "agentgateway" => Some(procs::agentgateway(binary, &upstream.url)?),
                _ => None,
            };
            let url = gateway.as_ref().map_or(&upstream.url, |g| &g.url);
            std::thread::sleep(Duration::from_millis(500));
            let idle = gateway.as_ref().and_then(|g| g.status_kib("VmRSS"));
            let cpu_before = gateway.as_ref().map_or(0.0, Proc::cpu_seconds);
            let mut figures = procs::client(url, true, s)?;
            if let Some(g) = &gateway {
                figures["idle_rss_kib"] = json!(idle);
                figures["loaded_hwm_kib"] = json!(g.status_kib("VmHWM"));
                let cpu = g.cpu_seconds() - cpu_before;
                figures["gateway_cpu_us_per_read"] = json!(cpu * 1e6 / procs::reads(s));
            }
            if !s.json {
                eprintln!("round {}/{}: {row:<12} {figures}", r + 1, s.rounds);
            }
            this.insert(row.into(), figures);
        }
        rounds.push(this);
    }
    Ok(report(&rounds))
}

fn report(rounds: &[Round]) -> Value {
    let metrics = [
        "seq_read_rps",
        "pipelined_read_rps",
        "seq_p50_us",
        "seq_p99_us",
        "handshake_ms",
        "idle_rss_kib",
        "loaded_hwm_kib",
        "gateway_cpu_us_per_read",
    ];
    let medians = medians(rounds, &ROWS, &metrics);
    let added = |row: &str, m: &str| {
        per_round(rounds, |r| {
            Some(value(r, row, m)? - value(r, "upstream", m)?)
        })
    };
    let over = |m: &str| {
        per_round(rounds, |r| {
            Some(value(r, "capable", m)? / value(r, "agentgateway", m)?)
        })
    };
    // Added latency: each gateway's over the upstream's, round by round; capable's
    // share of agentgateway's is the ratio of the two medians.
    let share = |m: &str| Some(added("capable", m)? / added("agentgateway", m)?);
    json!({
        "median": medians,
        "added_us": {
            "capable": {"p50": added("capable", "seq_p50_us"), "p99": added("capable", "seq_p99_us")},
            "agentgateway": {"p50": added("agentgateway", "seq_p50_us"),
                             "p99": added("agentgateway", "seq_p99_us")},
        },
        "capable/agentgateway": {
            "seq_ratio": over("seq_read_rps"),
            "pipelined_ratio": over("pipelined_read_rps"),
            "added_p50_share": share("seq_p50_us"),
            "added_p99_share": share("seq_p99_us"),
        },
        "bars": "throughput ratio ≥ 2, added latency share ≤ 0.5",
        "rounds": rounds.len(),
    })
}
