//! `capable bench`: a load generator for any MCP server, through the same client a
//! host uses ([`capable::Session`]): gate checks, id routing and decoding included.
//!
//! Phases: the handshake (spawn or connect to ready), `--warmup` untimed reads, `-n`
//! sequential `resources/read`, `-n` reads with `-c` in flight, and `-n` sequential
//! `tools/call` when `--tool` is given. Each phase reports its throughput, latency
//! percentiles and errors. A server that declares no `resources` gets no read: the
//! refusal is reported and nothing is sent (exit 5), as for any other command; nor
//! does one without `tools` get a call.

use std::cell::{Cell, RefCell};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use capable::{Method, Session};
use futures_util::stream::{FuturesUnordered, StreamExt};
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use serde_json::{json, Value};

use super::{parse_args, Context};
use crate::exit::CliError;
use crate::flags::BenchArgs;
use crate::output::{self, Table};

/// One timed phase.
struct Phase {
    name: &'static str,
    /// Requests issued (fewer than asked when the phase stopped).
    requests: usize,
    /// Stopped at its first failure to reach the server.
    stopped: bool,
    errors: u64,
    elapsed: Duration,
    /// Every request's latency, sorted.
    latencies: Vec<Duration>,
    first_error: Option<capable::Error>,
}

impl Phase {
    fn rps(&self) -> f64 {
        let ok = self.requests as f64 - self.errors as f64;
        if self.elapsed.is_zero() {
            0.0
        } else {
            ok / self.elapsed.as_secs_f64()
        }
    }

    /// Nearest-rank percentile.
    fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.latencies.len() as f64).ceil() as usize;
        self.latencies[rank.clamp(1, self.latencies.len()) - 1]
    }

    fn json(&self) -> Value {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        json!({
            "requests": self.requests,
            "errors": self.errors,
            "seconds": self.elapsed.as_secs_f64(),
            "rps": self.rps(),
            "p50_ms": ms(self.percentile(50.0)),
            "p90_ms": ms(self.percentile(90.0)),
            "p99_ms": ms(self.percentile(99.0)),
            "max_ms": ms(self.latencies.last().copied().unwrap_or_default()),
        })
    }
}

/// Runs `n` requests, `c` in flight at a time, on this task; `op` is one request.
/// The failure that stopped `phase`, saying how far it got.
fn stopped(phase: Phase) -> CliError {
    match phase.first_error {
        Some(e) => {
            crate::output::eprint_line(&format!(
                "capable bench: the {} stopped after {} request{}: the server could not be reached",
                phase.name,
                phase.requests,
                if phase.requests == 1 { "" } else { "s" }
            ));
            CliError::Client(e)
        }
        None => CliError::Usage(format!("the {} stopped", phase.name)),
    }
}

/// Whether `e` means the server can no longer be reached: every later request would
/// fail the same way, or wait out its timeout.
fn unreachable(e: &capable::Error) -> bool {
    use capable::Error;
    matches!(
        e,
        Error::Timeout { .. }
            | Error::ServerExited { .. }
            | Error::Transport(_)
            | Error::Http { .. }
            | Error::Closed
    )
}

async fn run_phase<F, Fut>(
    name: &'static str,
    n: usize,
    c: usize,
    bar: &ProgressBar,
    op: F,
) -> Phase
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), capable::Error>>,
{
    bar.reset();
    bar.set_length(n as u64);
    bar.set_message(name);
    let issued = Cell::new(0usize);
    let errors = Cell::new(0u64);
    // The server cannot be reached any more (a timeout, an exit, a broken transport):
    // the phase stops at once instead of waiting out a timeout per remaining request.
    let stopped = Cell::new(false);
    let first_error = RefCell::new(None);
    let latencies = RefCell::new(Vec::with_capacity(n));
    let worker = || async {
        while issued.get() < n && !stopped.get() {
            issued.set(issued.get() + 1);
            let t = Instant::now();
            let outcome = op().await;
            latencies.borrow_mut().push(t.elapsed());
            if let Err(e) = outcome {
                errors.set(errors.get() + 1);
                if unreachable(&e) {
                    stopped.set(true);
                }
                first_error.borrow_mut().get_or_insert(e);
            }
            bar.inc(1);
        }
    };
    let started = Instant::now();
    {
        let mut workers: FuturesUnordered<_> = (0..c.clamp(1, n)).map(|_| worker()).collect();
        while workers.next().await.is_some() {}
    }
    let elapsed = started.elapsed();
    let mut latencies = latencies.into_inner();
    latencies.sort_unstable();
    Phase {
        name,
        requests: issued.get(),
        stopped: stopped.get(),
        errors: errors.get(),
        elapsed,
        latencies,
        first_error: first_error.into_inner(),
    }
}

pub async fn run(ctx: &Context, args: &BenchArgs) -> Result<(), CliError> {
    let tool_args = match &args.tool {
        Some(_) => Some(parse_args(&args.args)?),
        None => None,
    };
    if args.n == 0 {
        return Err(CliError::Usage("-n must be at least 1".into()));
    }
    if args.concurrency == 0 {
        return Err(CliError::Usage("-c must be at least 1".into()));
    }
    // Spawn (or connect) to ready: the handshake as a host pays it, probe included.
    let started = Instant::now();
    let session = ctx.connect(&args.server).await?;
    let handshake = started.elapsed();
    super::with_session(ctx, session, async |s| {
        bench(ctx, args, s, handshake, tool_args.as_ref()).await
    })
    .await
}

/// The progress line on a terminal: the phase, a bar, how far, and the rate in whole
/// requests a second (`sequential reads [=====>    ] 856/20000 3850/s`). At most
/// 16 + 27 + 2 × 20 + 12 columns, so it fits 80 columns for any `-n` up to 10⁹.
fn progress_style() -> ProgressStyle {
    let rate = |state: &ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(w, "{}/s", rate(state.per_sec()));
    };
    ProgressStyle::with_template("{msg:>16} [{bar:24}] {pos}/{len} {rate}")
        .map(|style| style.with_key("rate", rate).progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// A rate in whole units, for people (`3850`): the fractions a second are noise.
fn rate(per_sec: f64) -> String {
    if per_sec.is_finite() && per_sec >= 0.0 {
        format!("{per_sec:.0}")
    } else {
        "?".to_owned()
    }
}

async fn bench(
    ctx: &Context,
    args: &BenchArgs,
    s: &Session,
    handshake: Duration,
    tool_args: Option<&serde_json::Map<String, Value>>,
) -> Result<(), CliError> {
    let bar = if std::io::stderr().is_terminal() && !ctx.global.json {
        let bar = ProgressBar::new(args.n as u64);
        bar.set_style(progress_style());
        bar
    } else {
        ProgressBar::hidden()
    };
    // The capability contract first: no read is sent to a server without `resources`,
    // and no call to one without `tools` (refused locally, exit 5).
    s.check(Method::ReadResource)?;
    if args.tool.is_some() {
        s.check(Method::CallTool)?;
    }
    let mut phases: Vec<Phase> = Vec::new();
    let uri = match &args.uri {
        Some(u) => u.clone(),
        None => match s.list_resources().await?.into_iter().next() {
            Some(r) => r.uri,
            None => {
                return Err(CliError::Usage(
                    "the server lists no resources: name one with --uri".into(),
                ))
            }
        },
    };
    // Every read goes to the server: a cached answer would measure nothing.
    let read = || async {
        s.read_resource_with(&uri, capable::CachePolicy::Bypass)
            .await
            .map(drop)
    };
    if args.warmup > 0 {
        let warm = run_phase("warmup", args.warmup, 1, &bar, read).await;
        if warm.errors == warm.requests as u64 {
            if let Some(e) = warm.first_error {
                bar.finish_and_clear();
                return Err(e.into());
            }
        }
    }
    for (name, c) in [
        ("sequential reads", 1),
        ("pipelined reads", args.concurrency),
    ] {
        let phase = run_phase(name, args.n, c, &bar, read).await;
        if phase.stopped {
            bar.finish_and_clear();
            return Err(stopped(phase));
        }
        phases.push(phase);
    }
    if let Some(tool) = &args.tool {
        let call = || async {
            match s.call_tool(tool, tool_args).await {
                Ok(r) if r.is_error == Some(true) => Err(capable::Error::MalformedResult {
                    method: Method::CallTool,
                    detail: format!("the tool {tool} answered isError: true"),
                }),
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            }
        };
        let phase = run_phase("sequential calls", args.n, 1, &bar, call).await;
        if phase.stopped {
            bar.finish_and_clear();
            return Err(stopped(phase));
        }
        phases.push(phase);
    }
    bar.finish_and_clear();

    let phase = |name: &str| phases.iter().find(|p| p.name == name);
    let rps = |name: &str| phase(name).map(Phase::rps);
    let report = json!({
        "server": s.server_info(),
        "protocolVersion": s.protocol_version(),
        "era": s.era().as_str(),
        "uri": uri,
        "tool": args.tool,
        "n": args.n,
        "concurrency": args.concurrency,
        "warmup": args.warmup,
        "handshake_ms": handshake.as_secs_f64() * 1e3,
        "seq_read_rps": rps("sequential reads"),
        "pipelined_read_rps": rps("pipelined reads"),
        "seq_call_rps": rps("sequential calls"),
        "seq_read": phase("sequential reads").map(Phase::json),
        "pipelined_read": phase("pipelined reads").map(Phase::json),
        "seq_call": phase("sequential calls").map(Phase::json),
    });
    if ctx.global.json {
        output::json(&report)?;
    } else {
        output::print(&human(s, args, handshake, &uri, &phases))?;
    }
    // A phase in which every request failed is a failure of the run.
    if let Some(e) = phases
        .iter_mut()
        .find(|p| p.errors == p.requests as u64)
        .and_then(|p| p.first_error.take())
    {
        return Err(e.into());
    }
    Ok(())
}

fn human(
    s: &Session,
    args: &BenchArgs,
    handshake: Duration,
    uri: &str,
    phases: &[Phase],
) -> String {
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
    let mut out = format!(
        "server     {} ({} era, {})\nhandshake  {} ms (start to ready)\n",
        s.server_info(),
        s.era().as_str(),
        s.protocol_version(),
        ms(handshake),
    );
    out.push_str(&format!("resource   {uri}\n"));
    if let Some(tool) = &args.tool {
        out.push_str(&format!("tool       {tool}\n"));
    }
    out.push('\n');
    let mut t = Table::new(&[
        "phase", "requests", "errors", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms",
    ]);
    for p in phases {
        let name = if p.name == "pipelined reads" {
            format!("{} (c={})", p.name, args.concurrency)
        } else {
            p.name.to_owned()
        };
        t.row(vec![
            name,
            p.requests.to_string(),
            p.errors.to_string(),
            rate(p.rps()),
            ms(p.percentile(50.0)),
            ms(p.percentile(90.0)),
            ms(p.percentile(99.0)),
            ms(p.latencies.last().copied().unwrap_or_default()),
        ]);
    }
    out.push_str(&t.render());
    for p in phases {
        if let (Some(e), true) = (&p.first_error, p.errors > 0) {
            out.push_str(&format!("\n{}: first error: {e}\n", p.name));
        }
    }
    out
}
