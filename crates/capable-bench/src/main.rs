//! `capable-bench`: the same stdio workload through a raw pipe (the floor), capable and
//! rmcp, side by side.
//!
//! ```text
//! cargo run --release -p capable-bench -- [--rounds 5] [-n 20000] [-c 32] [--warmup 1000]
//!                                          [--handshakes 20] [--placement split|shared|free]
//!                                          [--threads T] [--json] [--guard]
//! cargo run --release -p capable-bench -- --http [--rounds 5] [-n 5000] …
//! ```
//!
//! `--http` runs the same workload over Streamable HTTP on loopback instead, against
//! `capable-bench-http-server` (started once for the run, bound to 127.0.0.1:0, stopped
//! at the end), with the clients `raw,raw-hyper,capable,rmcp,rmcp-pooled` (see
//! `http.rs`).
//!
//! The stdio clients are `raw` (the floor: blocking pipe I/O, pre-serialised requests),
//! `tokio-pipe` (the floor's workload on tokio's pipes: what the async runtime alone
//! costs), `capable` and `rmcp`. `--placement` pins the client and the server to
//! CPUs (see `placement.rs`; `split` by default).
//!
//! Every client runs in its own process (`capable-bench client KIND …`), so each one's
//! peak RSS is its own; rounds interleave the clients (the order rotates each round)
//! so drift on a noisy machine hits all of them alike. The figures are medians over the
//! rounds; the ratios are medians of the per-round ratios. `--guard` exits 1 when
//! capable falls behind rmcp in the same run.
//!
//! The async clients run on a current-thread runtime, their fastest configuration;
//! `--threads T` runs them on a multi-thread one of `T` workers, as a host's
//! `#[tokio::main]` does (with `--placement shared` or `free`: `split` pins each client
//! to one CPU).

#[allow(dead_code)] // the servers' answers; the clients need only the URI
mod answers;
mod client;
mod http;
mod placement;
mod runner;
mod sessions;

use placement::Placement;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("client") => client::main(&args[1..]),
        _ => runner::main(&args),
    };
    std::process::exit(code);
}

/// Command-line settings shared by the runner and the clients.
#[derive(Clone, Debug)]
pub struct Settings {
    pub server: String,
    /// The server command's arguments (`--server-arg`, repeated): a server behind a
    /// bridge is `capable` with `bridge -- SERVER`.
    pub server_args: Vec<String>,
    pub n: usize,
    pub c: usize,
    pub warmup: usize,
    pub handshakes: usize,
    pub rounds: usize,
    pub json: bool,
    pub guard: bool,
    pub clients: Vec<String>,
    /// Where the client and server processes run (runner only).
    pub placement: Placement,
    /// HTTP mode (runner): start the HTTP bench server and run the HTTP clients.
    pub http: bool,
    /// HTTP mode (client): the endpoint of the running HTTP bench server.
    pub url: Option<String>,
    /// Sessions mode (runner): this many concurrent HTTP sessions in one process.
    pub sessions: Option<usize>,
    /// Sessions mode: reads per session.
    pub reads: usize,
    /// Every request is a `tools/call` of `echo` (a one-block text result) instead of
    /// the 1 KiB `resources/read` (stdio).
    pub calls: bool,
    /// The async clients' runtime: current-thread (0, the default) or multi-thread
    /// with this many workers, as a host's `#[tokio::main]` runs.
    pub threads: usize,
    /// The capable client speaks only the legacy era (`--legacy`): what a host of
    /// today asks a bridge in front of a legacy server, the same era as direct.
    pub legacy: bool,
    /// Time each sequential read too, for its median latency (`seq_p50_us`); off by
    /// default, so that the throughput loops stay as they are.
    pub latency: bool,
    /// HTTP mode (client): extra headers on every request (`--header "Name: value"`,
    /// e.g. a gateway's `Authorization`).
    pub headers: Vec<(String, String)>,
}

impl Settings {
    pub fn parse(args: &[String]) -> Result<Settings, String> {
        let mut s = Settings {
            server: default_server(),
            server_args: Vec::new(),
            n: 20_000,
            c: 32,
            warmup: 1_000,
            handshakes: 20,
            rounds: 5,
            json: false,
            guard: false,
            clients: ["raw", "tokio-pipe", "capable", "rmcp"]
                .map(String::from)
                .to_vec(),
            placement: Placement::Split,
            http: false,
            url: None,
            sessions: None,
            reads: 10,
            calls: false,
            threads: 0,
            latency: false,
            legacy: false,
            headers: Vec::new(),
        };
        let (mut server_set, mut clients_set) = (false, false);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            let number = |v: String, name: &str| {
                v.parse::<usize>()
                    .map_err(|_| format!("{name}: {v:?} is not a number"))
            };
            match a.as_str() {
                "--server" => {
                    s.server = value(a)?;
                    server_set = true;
                }
                "-n" => s.n = number(value(a)?, a)?,
                "-c" => s.c = number(value(a)?, a)?.max(1),
                "--warmup" => s.warmup = number(value(a)?, a)?,
                "--handshakes" => s.handshakes = number(value(a)?, a)?.max(1),
                "--rounds" => s.rounds = number(value(a)?, a)?.max(1),
                "--clients" => {
                    s.clients = value(a)?.split(',').map(str::to_owned).collect();
                    clients_set = true;
                }
                "--placement" => s.placement = Placement::parse(&value(a)?)?,
                "--http" => s.http = true,
                "--sessions" => s.sessions = Some(number(value(a)?, a)?.max(1)),
                "--reads" => s.reads = number(value(a)?, a)?,
                "--url" => s.url = Some(value(a)?),
                "--calls" => s.calls = true,
                "--server-arg" => s.server_args.push(value(a)?),
                "--latency" => s.latency = true,
                "--legacy" => s.legacy = true,
                "--header" => {
                    let header = value(a)?;
                    let (name, v) = header
                        .split_once(':')
                        .ok_or_else(|| format!("--header {header:?}: not \"Name: value\""))?;
                    s.headers
                        .push((name.trim().to_owned(), v.trim().to_owned()));
                }
                "--threads" => s.threads = number(value(a)?, a)?,
                "--json" => s.json = true,
                "--guard" => s.guard = true,
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        if s.calls && (s.http || s.sessions.is_some() || s.url.is_some()) {
            return Err("--calls is for the stdio clients".into());
        }
        if s.sessions.is_some() && !server_set {
            s.server = sibling("capable-bench-http-server");
        }
        if s.http {
            if !server_set {
                s.server = sibling("capable-bench-http-server");
            }
            if !clients_set {
                s.clients = ["raw", "raw-hyper", "capable", "rmcp", "rmcp-pooled"]
                    .map(String::from)
                    .to_vec();
            }
        }
        Ok(s)
    }

    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--server".into(),
            self.server.clone(),
            "-n".into(),
            self.n.to_string(),
            "-c".into(),
            self.c.to_string(),
            "--warmup".into(),
            self.warmup.to_string(),
            "--handshakes".into(),
            self.handshakes.to_string(),
        ];
        if let Some(url) = &self.url {
            args.extend(["--url".into(), url.clone()]);
        }
        if self.calls {
            args.push("--calls".into());
        }
        for arg in &self.server_args {
            args.extend(["--server-arg".into(), arg.clone()]);
        }
        if self.latency {
            args.push("--latency".into());
        }
        if self.legacy {
            args.push("--legacy".into());
        }
        if self.threads > 0 {
            args.extend(["--threads".into(), self.threads.to_string()]);
        }
        args
    }
}

const USAGE: &str =
    "usage: capable-bench [--rounds R] [-n N] [-c C] [--warmup W] [--handshakes H] \
[--clients raw,tokio-pipe,capable,rmcp] [--placement split|shared|free] [--server PATH] \
[--calls] [--threads T] [--json] [--guard] [--server-arg ARG]… [--latency] [--legacy]
       capable-bench --http [--rounds R] [-n N] [-c C] [--warmup W] [--handshakes H] \
[--clients raw,raw-hyper,capable,rmcp,rmcp-pooled] [--placement split|shared|free] [--server PATH] \
[--threads T] [--json] [--guard]
       capable-bench --sessions N [--reads K] [--placement split|shared|free] [--server PATH] [--json]";

/// The bench server next to this binary (cargo builds both into the same directory).
fn default_server() -> String {
    sibling("capable-bench-server")
}

/// A binary next to this one.
fn sibling(name: &str) -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.join(name)))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.into())
}

/// The URI of the bench servers' 1 KiB resource.
pub use answers::URI;

/// The capable client's options: the defaults (both eras, the modern one first), or
/// the legacy era alone with `--legacy`.
pub(crate) fn client_options(s: &Settings) -> capable::ClientOptions {
    let options = capable::ClientOptions::default();
    match s.legacy {
        true => options.with_protocol(capable::ProtocolChoice::Legacy),
        false => options,
    }
}
