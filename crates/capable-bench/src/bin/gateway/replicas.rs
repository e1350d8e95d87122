//! `--replicas`: the gateway as replicas behind a load balancer, against one replica
//! direct, in one run.
//!
//! One HTTP upstream (`capable-bench-http-server`, a legacy server) behind everything;
//! three `capable bridge --listen --url UPSTREAM` replicas started with one seal key;
//! Debian's HAProxy twice, round robin with no affinity: once in front of replica 1
//! alone, once in front of all three. The same capable client loads each row, in rounds
//! whose order rotates:
//!
//! | row | the client talks to |
//! |---|---|
//! | `upstream` | the HTTP server itself (the floor every added latency is over) |
//! | `ERA/direct` | replica 1 |
//! | `ERA/lb1` | HAProxy, replica 1 behind it |
//! | `ERA/lb3` | HAProxy, the three replicas behind it |
//!
//! where ERA is `legacy` (a legacy session: its id is a seal; the first request of it
//! that lands on a replica other than the one that began it opens the seal and continues
//! the session there, later ones find it held) or `modern` (2026-07-28 requests, no
//! session at all). Besides the client's figures, each row counts the CPU time HAProxy
//! and the replicas spent in it, per request: the load balancer's own cost, apart from
//! the latency it adds.

use serde_json::{json, Map, Value};

use crate::procs::{self, Proc};
use crate::rounds::{medians, per_round, value, Round};
use crate::Settings;

/// The rows, in the order of the first round.
const ROWS: [&str; 7] = [
    "upstream",
    "legacy/direct",
    "legacy/lb1",
    "legacy/lb3",
    "modern/direct",
    "modern/lb1",
    "modern/lb3",
];

/// The processes of a replica run.
pub struct Deployment {
    pub upstream: Proc,
    pub replicas: Vec<Proc>,
    lb1: Proc,
    lb3: Proc,
}

impl Deployment {
    pub fn start() -> Result<Deployment, String> {
        let upstream = procs::upstream()?;
        let key = procs::seal_key()?;
        let replicas = (0..3)
            .map(|_| procs::replica(Some(&key), &upstream.url))
            .collect::<Result<Vec<_>, _>>()?;
        let lb1 = procs::haproxy(&[&replicas[0]])?;
        let lb3 = procs::haproxy(&replicas.iter().collect::<Vec<_>>())?;
        Ok(Deployment {
            upstream,
            replicas,
            lb1,
            lb3,
        })
    }

    /// Where `row`'s client goes, whether it keeps a legacy session, the load balancer
    /// in its path and the replicas that serve it.
    fn route(&self, row: &str) -> (&str, bool, Option<&Proc>, &[Proc]) {
        let legacy = !row.starts_with("modern");
        match row.rsplit('/').next() {
            Some("direct") => (&self.replicas[0].url, legacy, None, &self.replicas[..1]),
            Some("lb1") => (&self.lb1.url, legacy, Some(&self.lb1), &self.replicas[..1]),
            Some("lb3") => (&self.lb3.url, legacy, Some(&self.lb3), &self.replicas[..]),
            _ => (&self.upstream.url, true, None, &[]),
        }
    }
}

/// Runs the rows in rotating rounds; the report.
pub fn run(s: &Settings) -> Result<Value, String> {
    if std::process::Command::new("haproxy")
        .arg("-v")
        .output()
        .is_err()
    {
        return Err("--replicas needs haproxy on the PATH (Debian's package)".into());
    }
    let deployment = Deployment::start()?;
    let mut rounds: Vec<Round> = Vec::new();
    for r in 0..s.rounds {
        let mut this = Map::new();
        for i in 0..ROWS.len() {
            let row = ROWS[(i + r) % ROWS.len()];
            let (url, legacy, lb, serving) = deployment.route(row);
            let cpu = |procs: &[&Proc]| procs.iter().map(|p| p.cpu_seconds()).sum::<f64>();
            let lb_before = cpu(&lb.into_iter().collect::<Vec<_>>());
            let gw_before = cpu(&serving.iter().collect::<Vec<_>>());
            let mut figures = procs::client(url, legacy, s)?;
            let per_read = |seconds: f64| seconds * 1e6 / procs::reads(s);
            let lb_cpu = cpu(&lb.into_iter().collect::<Vec<_>>()) - lb_before;
            let gw_cpu = cpu(&serving.iter().collect::<Vec<_>>()) - gw_before;
            figures["lb_cpu_us_per_read"] = json!(per_read(lb_cpu));
            figures["gateway_cpu_us_per_read"] = json!(per_read(gw_cpu));
            if !s.json {
                eprintln!("round {}/{}: {row:<13} {figures}", r + 1, s.rounds);
            }
            this.insert(row.into(), figures);
        }
        rounds.push(this);
    }
    let restored = crate::unseal::restored(&deployment, s.tokens)?;
    Ok(report(&rounds, restored))
}

fn report(rounds: &[Round], restored: Value) -> Value {
    let metrics = [
        "seq_read_rps",
        "pipelined_read_rps",
        "seq_p50_us",
        "seq_p99_us",
        "lb_cpu_us_per_read",
        "gateway_cpu_us_per_read",
    ];
    let medians = medians(rounds, &ROWS, &metrics);
    // `row` over `base`, round by round, then the median: throughput ratios and the
    // latency added.
    let over = |row: &str, base: &str| {
        let ratio = |m: &str| per_round(rounds, |r| Some(value(r, row, m)? / value(r, base, m)?));
        let added = |m: &str| per_round(rounds, |r| Some(value(r, row, m)? - value(r, base, m)?));
        json!({
            "seq_ratio": ratio("seq_read_rps"),
            "pipelined_ratio": ratio("pipelined_read_rps"),
            "added_p50_us": added("seq_p50_us"),
            "added_p99_us": added("seq_p99_us"),
        })
    };
    let mut ratios = Map::new();
    for era in ["legacy", "modern"] {
        let row = |name: &str| format!("{era}/{name}");
        ratios.insert(row("direct/upstream"), over(&row("direct"), "upstream"));
        ratios.insert(row("lb1/direct"), over(&row("lb1"), &row("direct")));
        ratios.insert(row("lb3/lb1"), over(&row("lb3"), &row("lb1")));
        ratios.insert(row("lb3/direct"), over(&row("lb3"), &row("direct")));
        ratios.insert(row("lb3/upstream"), over(&row("lb3"), "upstream"));
    }
    json!({
        "median": medians,
        "over": ratios,
        "restored": restored,
        "unseal": crate::unseal::in_process(),
        "rounds": rounds.len(),
    })
}
