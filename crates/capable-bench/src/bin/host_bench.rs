//! `capable-bench-host`: many stdio servers in one [`capable::host::Host`] — how long
//! until all are ready, what the host costs in memory, and a restart storm.
//!
//! ```text
//! cargo build --release -p capable-bench
//! ./target/release/capable-bench-host [--servers 100] [--kill 50] [--rounds 3] [--json]
//! ```
//!
//! Each round starts `--servers` copies of `capable-bench-server` (the stdio bench
//! server: legacy, `resources` and `tools`) in one host and measures:
//!
//! - **all ready**: from the first `Host::add` until every server is ready (each
//!   spawned, handshaken, its tool and resource lists read into the merged view);
//! - **RSS**: the bench process's resident memory before the host and with every
//!   server ready (the servers are other processes: this is the host's own cost);
//! - **storm**: `--kill` servers' process groups are sent SIGKILL at once; the time
//!   until all are ready again, and the restarts the host counted (each killed server
//!   exactly once, the others never: attempts stay bounded);
//! - **shutdown**: `Host::shutdown` until it returns, then that no server process is
//!   left (every pid the host reported is gone).

use std::time::{Duration, Instant};

use capable::config::ServerTarget;
use capable::host::{Host, HostOptions};
use capable::ServerCommand;
use serde_json::json;

struct Args {
    servers: usize,
    kill: usize,
    rounds: usize,
    json: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        servers: 100,
        kill: 50,
        rounds: 3,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} takes a number"))
        };
        match a.as_str() {
            "--servers" => args.servers = number("--servers")?,
            "--kill" => args.kill = number("--kill")?,
            "--rounds" => args.rounds = number("--rounds")?.max(1),
            "--json" => args.json = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    args.kill = args.kill.min(args.servers);
    Ok(args)
}

/// The bench server beside this binary.
fn server_program() -> String {
    let me = std::env::current_exe().expect("own path");
    me.with_file_name("capable-bench-server")
        .to_string_lossy()
        .into_owned()
}

struct Round {
    all_ready: Duration,
    rss_before: u64,
    rss_ready: u64,
    storm: Duration,
    restarts_killed: Vec<u32>,
    restarts_others: Vec<u32>,
    shutdown: Duration,
    left: usize,
}

async fn wait_all_ready(host: &Host, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        let servers = host.servers();
        if servers.iter().all(|s| s.state.is_ready()) {
            return Ok(());
        }
        if let Some(bad) = servers
            .iter()
            .find(|s| s.state.is_settled() && !s.state.is_ready())
        {
            return Err(format!("{} settled as {}", bad.name, bad.state));
        }
        if Instant::now() >= deadline {
            let waiting = servers.iter().filter(|s| !s.state.is_ready()).count();
            return Err(format!("{waiting} servers not ready after {limit:?}"));
        }
        // The host's own change signal is internal; its event stream would do too, but
        // a short poll keeps the measurement independent of event buffering.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn round(args: &Args, program: &str) -> Result<Round, String> {
    let rss_before = capable_test_support::own_status_kib("VmRSS");
    let host = Host::new(HostOptions::default());
    let started = Instant::now();
    for i in 0..args.servers {
        let command = ServerCommand::new(program, Vec::<String>::new());
        host.add(&format!("s{i}"), ServerTarget::Stdio(command))
            .map_err(|e| e.to_string())?;
    }
    wait_all_ready(&host, Duration::from_secs(60)).await?;
    let all_ready = started.elapsed();
    let rss_ready = capable_test_support::own_status_kib("VmRSS");

    // The storm: kill the first `kill` servers' process groups at once.
    let mut pids = Vec::new();
    for i in 0..args.servers {
        let session = host.session(&format!("s{i}")).map_err(|e| e.to_string())?;
        pids.push(session.server_process_id().ok_or("no server pid")?);
    }
    let storm_started = Instant::now();
    for &pid in &pids[..args.kill] {
        // SAFETY: kill(2) with a process group id the host reported; no memory is
        // touched.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
        }
    }
    // Wait until the host has seen every killed one go down and come back.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let servers = host.servers();
        let back = servers[..args.kill]
            .iter()
            .all(|s| s.restarts >= 1 && s.state.is_ready());
        if back && servers.iter().all(|s| s.state.is_ready()) {
            break;
        }
        if Instant::now() >= deadline {
            return Err("the killed servers were not all back within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let storm = storm_started.elapsed();
    let servers = host.servers();
    let restarts_killed = servers[..args.kill].iter().map(|s| s.restarts).collect();
    let restarts_others = servers[args.kill..].iter().map(|s| s.restarts).collect();
    for i in 0..args.servers {
        if let Ok(session) = host.session(&format!("s{i}")) {
            pids.extend(session.server_process_id());
        }
    }

    let shutdown_started = Instant::now();
    host.shutdown().await;
    let shutdown = shutdown_started.elapsed();
    let left = pids
        .iter()
        .filter(|&&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("capable-bench-server"))
        })
        .count();
    Ok(Round {
        all_ready,
        rss_before,
        rss_ready,
        storm,
        restarts_killed,
        restarts_others,
        shutdown,
        left,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("capable-bench-host: {e}");
            std::process::exit(2);
        }
    };
    // Room for the servers' pipes (three per server, and the host's own).
    raise_fd_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let program = server_program();
    let mut rounds = Vec::new();
    for _ in 0..args.rounds {
        match runtime.block_on(round(&args, &program)) {
            Ok(r) => rounds.push(r),
            Err(e) => {
                eprintln!("capable-bench-host: {e}");
                std::process::exit(1);
            }
        }
    }
    let ready = median(rounds.iter().map(|r| ms(r.all_ready)).collect());
    let storm = median(rounds.iter().map(|r| ms(r.storm)).collect());
    let shutdown = median(rounds.iter().map(|r| ms(r.shutdown)).collect());
    // The most any round added (the first round, usually: later ones reuse memory
    // the allocator kept).
    let per_server = rounds
        .iter()
        .map(|r| r.rss_ready.saturating_sub(r.rss_before) as f64 / args.servers as f64)
        .fold(0.0, f64::max);
    let rss_ready = rounds.iter().map(|r| r.rss_ready).max().unwrap_or(0);
    let max_restarts_killed = rounds
        .iter()
        .flat_map(|r| r.restarts_killed.iter().copied())
        .max()
        .unwrap_or(0);
    let max_restarts_others = rounds
        .iter()
        .flat_map(|r| r.restarts_others.iter().copied())
        .max()
        .unwrap_or(0);
    let left: usize = rounds.iter().map(|r| r.left).sum();
    if args.json {
        println!(
            "{}",
            json!({
                "servers": args.servers, "killed": args.kill, "rounds": args.rounds,
                "allReadyMs": ready, "rssReadyKiB": rss_ready, "rssPerServerKiB": per_server,
                "stormBackMs": storm, "maxRestartsKilled": max_restarts_killed,
                "maxRestartsOthers": max_restarts_others, "shutdownMs": shutdown,
                "processesLeft": left,
            })
        );
    } else {
        println!(
            "{} stdio servers in one Host, {} rounds (medians; memory: the most a round added)",
            args.servers, args.rounds
        );
        println!("  all ready            {ready:.0} ms");
        println!("  host RSS, all ready  {rss_ready} KiB ({per_server:.0} KiB per server)");
        println!(
            "  kill {} at once      all back in {storm:.0} ms; restarts per killed server ≤ {max_restarts_killed}, others {max_restarts_others}",
            args.kill
        );
        println!("  shutdown             {shutdown:.0} ms, {left} server processes left");
    }
    if left > 0 || max_restarts_killed > 1 || max_restarts_others > 0 {
        std::process::exit(1);
    }
}

fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
