//! One client in its own process: handshakes, then sequential and pipelined reads (or,
//! with `--calls`, tool calls).
//! Prints one JSON line: `{client, handshake_ms, seq_read_rps, pipelined_read_rps,
//! errors, peak_rss_kib}`, with `--latency` the median and 99th percentile of the
//! sequential reads (`seq_p50_us`, `seq_p99_us`), and for a stdio server the resident set of its process once it is
//! up and idle (`server_rss_kib`).

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::{Settings, URI};

#[derive(Default)]
pub(crate) struct Figures {
    pub handshakes: Vec<Duration>,
    pub seq: Duration,
    pub pipelined: Duration,
    pub errors: u64,
    /// With `--latency`: each sequential read's time.
    pub latencies: Vec<Duration>,
    /// The stdio server's resident set once it is up and idle.
    pub server_rss_kib: Option<u64>,
}

pub fn main(args: &[String]) -> i32 {
    crate::placement::pin_from_env(crate::placement::CLIENT_CPU);
    let Some(kind) = args.first() else {
        eprintln!("capable-bench client: which client? raw, tokio-pipe, capable or rmcp");
        return 2;
    };
    if kind == "sessions" {
        return sessions_main(&args[1..]);
    }
    let settings = match Settings::parse(&args[1..]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let figures = match (settings.url.is_some(), kind.as_str()) {
        (true, "raw") => on_task(&settings, crate::http::raw(settings.clone())),
        (true, "raw-hyper") => on_task(&settings, crate::http::raw_hyper(settings.clone())),
        (true, "capable") => on_task(&settings, crate::http::capable(settings.clone())),
        (true, "rmcp") => on_task(&settings, crate::http::rmcp(settings.clone(), false)),
        (true, "rmcp-pooled") => on_task(&settings, crate::http::rmcp(settings.clone(), true)),
        (true, other) => Err(format!("unknown HTTP client {other:?}")),
        (false, "raw") => raw(&settings),
        (false, "tokio-pipe") => on_task(&settings, tokio_pipe(settings.clone())),
        (false, "capable") => on_task(&settings, capable(settings.clone())),
        (false, "rmcp") => on_task(&settings, rmcp(settings.clone())),
        (false, other) => Err(format!("unknown client {other:?}")),
    };
    let f = match figures {
        Ok(f) => f,
        Err(e) => {
            eprintln!("capable-bench client {kind}: {e}");
            return 1;
        }
    };
    let mut hs = f.handshakes.clone();
    hs.sort();
    let rps = |d: Duration| settings.n as f64 / d.as_secs_f64();
    let mut line = serde_json::json!({
        "client": kind,
        "handshake_ms": hs[hs.len() / 2].as_secs_f64() * 1e3,
        "first_handshake_ms": f.handshakes[0].as_secs_f64() * 1e3,
        "seq_read_rps": rps(f.seq),
        "pipelined_read_rps": rps(f.pipelined),
        "errors": f.errors,
        "peak_rss_kib": capable_test_support::own_status_kib("VmHWM"),
    });
    let mut latencies = f.latencies;
    latencies.sort();
    if let Some(p50) = latencies.get(latencies.len() / 2) {
        line["seq_p50_us"] = serde_json::json!(p50.as_secs_f64() * 1e6);
    }
    if let Some(p99) = latencies.get(latencies.len() * 99 / 100) {
        line["seq_p99_us"] = serde_json::json!(p99.as_secs_f64() * 1e6);
    }
    if let Some(rss) = f.server_rss_kib {
        line["server_rss_kib"] = serde_json::json!(rss);
    }
    println!("{line}");
    0
}

/// `client sessions --url URL --sessions N --reads K`: see `sessions.rs`.
fn sessions_main(args: &[String]) -> i32 {
    let mut s = crate::sessions::SessionSettings {
        url: String::new(),
        sessions: 1000,
        reads: 10,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().cloned().unwrap_or_default();
        match (a.as_str(), v.parse::<usize>()) {
            ("--url", _) => s.url = v,
            ("--sessions", Ok(n)) => s.sessions = n.max(1),
            ("--reads", Ok(n)) => s.reads = n,
            _ => {
                eprintln!("capable-bench client sessions: bad argument {a:?} {v:?}");
                return 2;
            }
        }
    }
    match runtime(0).block_on(async { tokio::spawn(crate::sessions::run(s)).await }) {
        Ok(Ok(report)) => {
            println!("{report}");
            0
        }
        Ok(Err(e)) => {
            eprintln!("capable-bench client sessions: {e}");
            1
        }
        Err(e) => {
            eprintln!("capable-bench client sessions: {e}");
            1
        }
    }
}

/// The async clients' runtime: current-thread, their fastest configuration, unless
/// `--threads` asks for a multi-thread one (what a host's `#[tokio::main]` builds).
fn runtime(threads: usize) -> tokio::runtime::Runtime {
    match threads {
        0 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime"),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build()
            .expect("a multi-thread runtime"),
    }
}

/// Times `s.handshakes` connections, each closed right after.
pub(crate) async fn handshakes<S, C, CF, X, XF>(
    s: &Settings,
    connect: C,
    close: X,
) -> Result<Figures, String>
where
    C: Fn() -> CF,
    CF: std::future::Future<Output = Result<S, String>>,
    X: Fn(S) -> XF,
    XF: std::future::Future<Output = ()>,
{
    let mut f = Figures::default();
    for _ in 0..s.handshakes {
        let t = Instant::now();
        let session = connect().await?;
        f.handshakes.push(t.elapsed());
        close(session).await;
    }
    Ok(f)
}

/// Warm-up, then `s.n` sequential reads, then `s.n` reads with `s.c` in flight.
pub(crate) async fn reads<R, RF>(s: &Settings, f: &mut Figures, read: R)
where
    R: Fn() -> RF,
    RF: std::future::Future<Output = bool>,
{
    for _ in 0..s.warmup {
        read().await;
    }
    let t = Instant::now();
    if s.latency {
        f.latencies.reserve(s.n);
        for _ in 0..s.n {
            let one = Instant::now();
            if !read().await {
                f.errors += 1;
            }
            f.latencies.push(one.elapsed());
        }
    } else {
        for _ in 0..s.n {
            if !read().await {
                f.errors += 1;
            }
        }
    }
    f.seq = t.elapsed();
    let t = Instant::now();
    f.errors += pipelined(s.n, s.c, read).await;
    f.pipelined = t.elapsed();
}

/// Runs `n` operations with `c` in flight, on one task.
pub(crate) async fn pipelined<F, Fut>(n: usize, c: usize, op: F) -> u64
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let issued = AtomicUsize::new(0);
    let errors = AtomicU64::new(0);
    let worker = || async {
        while issued.fetch_add(1, Relaxed) < n {
            if !op().await {
                errors.fetch_add(1, Relaxed);
            }
        }
    };
    let mut workers: FuturesUnordered<_> = (0..c.min(n.max(1))).map(|_| worker()).collect();
    while workers.next().await.is_some() {}
    errors.load(Relaxed)
}

/// Runs a client's workload as a spawned task, as a host's request handlers run (the
/// `block_on` future itself is woken through an extra driver poll on every wake-up).
fn on_task<F>(s: &Settings, work: F) -> Result<Figures, String>
where
    F: std::future::Future<Output = Result<Figures, String>> + Send + 'static,
{
    runtime(s.threads).block_on(async {
        tokio::spawn(work)
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
    })
}

// ---------------------------------------------------------------------------------
// capable

async fn capable(s: Settings) -> Result<Figures, String> {
    use capable::{ServerCommand, StdioTransport};
    let mut command = ServerCommand::new(s.server.clone(), s.server_args.clone());
    // capable starts a server with a clean environment: its CPU is passed on by name.
    if let Ok(cpu) = std::env::var(crate::placement::SERVER_CPU) {
        command.env.insert(crate::placement::SERVER_CPU.into(), cpu);
    }
    let connect = || async {
        // `connect` over a fresh transport: the modern probe is paid every time (no
        // era memory), as a host's first connection to a server pays it.
        let transport =
            StdioTransport::spawn(&command, Default::default()).map_err(|e| e.to_string())?;
        capable::connect(transport, crate::client_options(&s))
            .await
            .map_err(|e| e.to_string())
    };
    let close = |session: capable::Session| async move {
        session.close().await;
    };
    let mut f = handshakes(&s, connect, close).await?;
    let session = connect().await?;
    f.server_rss_kib = session.server_process_id().and_then(process_rss_kib);
    reads(&s, &mut f, || async {
        match s.calls {
            true => session.call_tool("echo", None).await.is_ok(),
            false => session.read_resource(URI).await.is_ok(),
        }
    })
    .await;
    close(session).await;
    Ok(f)
}

/// Process `pid`'s resident set now (`VmRSS`), in KiB.
fn process_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

// ---------------------------------------------------------------------------------
// rmcp

async fn rmcp(s: Settings) -> Result<Figures, String> {
    use rmcp::model::ReadResourceRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;
    let connect = || async {
        let transport = TokioChildProcess::new(tokio::process::Command::new(&s.server))
            .map_err(|e| e.to_string())?;
        ().serve(transport).await.map_err(|e| e.to_string())
    };
    let close = |client: rmcp::service::RunningService<rmcp::RoleClient, ()>| async move {
        let _ = client.cancel().await;
    };
    let mut f = handshakes(&s, connect, close).await?;
    let client = connect().await?;
    let read = || async {
        match s.calls {
            true => client
                .call_tool(rmcp::model::CallToolRequestParams::new("echo"))
                .await
                .is_ok(),
            false => client
                .read_resource(ReadResourceRequestParams::new(URI))
                .await
                .is_ok(),
        }
    };
    reads(&s, &mut f, read).await;
    close(client).await;
    Ok(f)
}

// ---------------------------------------------------------------------------------
// raw pipe: pre-serialised requests, responses counted by newline

const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
    r#""capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
    "\n"
);
const INITIALIZED: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// Every request pre-serialised, back to back: the floors send bytes, nothing more.
struct Preserialised {
    bytes: Vec<u8>,
    /// `ends[i]`: where request i ends.
    ends: Vec<usize>,
}

impl Preserialised {
    /// `resources/read` requests (or, with `--calls`, `tools/call` of `echo`) with ids
    /// 1..=total.
    fn requests(s: &Settings, total: usize) -> Preserialised {
        let mut bytes = Vec::with_capacity(total * 80);
        let mut ends = Vec::with_capacity(total);
        for id in 1..=total {
            let _ = match s.calls {
                true => writeln!(
                    bytes,
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo"}}}}"#
                ),
                false => writeln!(
                    bytes,
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"{URI}"}}}}"#
                ),
            };
            ends.push(bytes.len());
        }
        Preserialised { bytes, ends }
    }

    /// Requests `first .. first + count`, as one slice.
    fn span(&self, first: usize, count: usize) -> &[u8] {
        let start = if first == 0 { 0 } else { self.ends[first - 1] };
        &self.bytes[start..self.ends[first + count - 1]]
    }
}

struct RawServer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    buf: Vec<u8>,
}

impl RawServer {
    fn spawn(server: &str) -> Result<RawServer, String> {
        let mut child = Command::new(server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{server}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok(RawServer {
            child,
            stdin,
            stdout,
            buf: vec![0; 64 * 1024],
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.stdin.write_all(bytes).map_err(|e| e.to_string())
    }

    /// Reads what is available; returns how many newlines it held.
    fn read_lines(&mut self) -> Result<usize, String> {
        let n = self.stdout.read(&mut self.buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed its output".into());
        }
        Ok(memchr::memchr_iter(b'\n', &self.buf[..n]).count())
    }

    fn handshake(server: &str) -> Result<RawServer, String> {
        let mut s = RawServer::spawn(server)?;
        s.write(INITIALIZE.as_bytes())?;
        while s.read_lines()? == 0 {}
        s.write(INITIALIZED.as_bytes())?;
        Ok(s)
    }

    fn close(self) {
        let RawServer {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

fn raw(s: &Settings) -> Result<Figures, String> {
    let mut f = Figures::default();
    for _ in 0..s.handshakes {
        let t = Instant::now();
        let server = RawServer::handshake(&s.server)?;
        f.handshakes.push(t.elapsed());
        server.close();
    }
    let mut server = RawServer::handshake(&s.server)?;
    let requests = Preserialised::requests(s, s.warmup + 2 * s.n);
    let mut next = 0;
    let mut sequential = |server: &mut RawServer, count: usize| -> Result<(), String> {
        for _ in 0..count {
            server.write(requests.span(next, 1))?;
            next += 1;
            while server.read_lines()? == 0 {}
        }
        Ok(())
    };
    sequential(&mut server, s.warmup)?;
    let t = Instant::now();
    sequential(&mut server, s.n)?;
    f.seq = t.elapsed();
    let first = s.warmup + s.n;
    let t = Instant::now();
    let (mut sent, mut received) = (0usize, 0usize);
    let window = s.c.min(s.n);
    server.write(requests.span(first, window))?;
    sent += window;
    while received < s.n {
        let k = server.read_lines()?;
        received += k;
        let more = k.min(s.n - sent);
        if more > 0 {
            server.write(requests.span(first + sent, more))?;
            sent += more;
        }
    }
    f.pipelined = t.elapsed();
    server.close();
    Ok(f)
}

// ---------------------------------------------------------------------------------
// tokio pipe: the raw floor's workload on tokio's child-process pipes, the same
// runtime the async clients use — what the runtime alone costs over blocking I/O.

async fn tokio_pipe(s: Settings) -> Result<Figures, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let spawn = || async {
        let mut child = tokio::process::Command::new(&s.server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", s.server))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let mut stdout = child.stdout.take().ok_or("no stdout")?;
        let mut buf = vec![0u8; 64 * 1024];
        stdin
            .write_all(INITIALIZE.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        loop {
            let n = stdout.read(&mut buf).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the server closed its output".to_string());
            }
            if memchr::memchr(b'\n', &buf[..n]).is_some() {
                break;
            }
        }
        stdin
            .write_all(INITIALIZED.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((child, stdin, stdout, buf))
    };
    let mut f = Figures::default();
    for _ in 0..s.handshakes {
        let t = Instant::now();
        let (mut child, stdin, _stdout, _buf) = spawn().await?;
        f.handshakes.push(t.elapsed());
        drop(stdin);
        let _ = child.wait().await;
    }
    let (mut child, mut stdin, mut stdout, mut buf) = spawn().await?;
    let requests = Preserialised::requests(&s, s.warmup + 2 * s.n);
    let mut read_lines = async |stdout: &mut tokio::process::ChildStdout| -> Result<usize, String> {
        let n = stdout.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed its output".into());
        }
        Ok(memchr::memchr_iter(b'\n', &buf[..n]).count())
    };
    let mut t = Instant::now();
    for next in 0..s.warmup + s.n {
        if next == s.warmup {
            t = Instant::now();
        }
        stdin
            .write_all(requests.span(next, 1))
            .await
            .map_err(|e| e.to_string())?;
        while read_lines(&mut stdout).await? == 0 {}
    }
    f.seq = t.elapsed();
    let first = s.warmup + s.n;
    let t = Instant::now();
    let (mut sent, mut received) = (0usize, 0usize);
    let window = s.c.min(s.n);
    stdin
        .write_all(requests.span(first, window))
        .await
        .map_err(|e| e.to_string())?;
    sent += window;
    while received < s.n {
        let k = read_lines(&mut stdout).await?;
        received += k;
        let more = k.min(s.n - sent);
        if more > 0 {
            stdin
                .write_all(requests.span(first + sent, more))
                .await
                .map_err(|e| e.to_string())?;
            sent += more;
        }
    }
    f.pipelined = t.elapsed();
    drop(stdin);
    let _ = child.wait().await;
    Ok(f)
}
