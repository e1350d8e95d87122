//! `capable-bench-gateway`: what the gateway's identity costs a request, in one run.
//!
//! ```text
//! cargo build --release -p capable-cli -p capable-bench
//! target/release/capable-bench-gateway [--rounds 5] [-n 10000] [-c 32] [--tokens 200] [--json]
//! ```
//!
//! An issuer runs in this process (loopback: its metadata and an ES256 key set, as an
//! OAuth authorization server publishes them), and `capable bridge --listen` runs in
//! front of `capable-bench-server` in each of these ways, in rounds whose order
//! rotates, each in its own process, with the same capable client
//! (`capable-bench client capable --url … --latency --legacy`: a legacy host's
//! session, 1 KiB reads):
//!
//! | row | the gateway |
//! |---|---|
//! | `open` | a loopback listener, no `Authorization` |
//! | `oauth` | `--auth-issuer` (this process) `--public-url`: every request carries a JWT access token, verified once and then known by its hash |
//! | `traced` | `open`, with traces on (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: a loopback OTLP/HTTP collector in this process that takes every batch) and `/metrics` scraped every second; `open` counts its metrics too (they are always on), unscraped |
//!
//! Figures, medians over the rounds: sequential and pipelined reads per second and
//! the median sequential read; then, round by round, `oauth` over `open` (throughput
//! ratio, added median latency). The issue's bars: ≤ 5 % throughput and ≤ 10 µs
//! median added. And `traced` over `open`, the same way: the issue's bars for traces
//! and metrics, ≤ 5 % throughput and ≤ 5 µs median added.
//!
//! Then **a new token's first request** (`--tokens K`): one `oauth` gateway, a legacy
//! session opened; K tokens of the same caller, each new (its own `jti`), each
//! sending a `ping` in that session twice. The first is verified (the key set is
//! cached: a signature check and the claims), the second is a lookup; the median of
//! each, and of their difference. The bar: ≤ 1 ms for the first.
//!
//! Two other modes, each a run of its own (see their modules):
//!
//! - `--replicas`: three replicas with one seal key behind HAProxy round robin, against
//!   one replica direct and one behind HAProxy, legacy sessions and 2026-07-28 requests
//!   (`gateway/replicas.rs`); then what continuing a sealed session costs: opening a
//!   seal in this process, and a replica's first request of a session begun elsewhere
//!   against its second (`gateway/unseal.rs`, with `--tokens K` sessions);
//! - `--agentgateway BINARY`: capable's gateway and agentgateway in front of the same
//!   HTTP upstream (`gateway/agentgateway.rs`).
//!
//! `--unseal-opens N` only opens a realistic seal N times: for an instruction counter.

#[path = "gateway/agentgateway.rs"]
mod agentgateway;
#[path = "gateway/post.rs"]
mod post;
#[path = "gateway/procs.rs"]
mod procs;
#[path = "gateway/replicas.rs"]
mod replicas;
#[path = "gateway/rounds.rs"]
mod rounds;
#[path = "shared/mod.rs"]
mod shared;
#[path = "gateway/unseal.rs"]
mod unseal;

use shared::{median, number, sibling};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

struct Settings {
    rounds: usize,
    n: usize,
    c: usize,
    warmup: usize,
    tokens: usize,
    json: bool,
    mode: Mode,
}

/// Which run: the identity rows (the default), the replica rows, agentgateway side by
/// side, or only opens of a seal.
enum Mode {
    Identity,
    Replicas,
    Agentgateway(std::path::PathBuf),
    UnsealOpens(usize),
}

fn main() {
    let settings = match parse(std::env::args().skip(1).collect()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    std::process::exit(match run(&settings) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("capable-bench-gateway: {e}");
            1
        }
    });
}

fn parse(args: Vec<String>) -> Result<Settings, String> {
    let mut s = Settings {
        rounds: 5,
        n: 10_000,
        c: 32,
        warmup: 1_000,
        tokens: 200,
        json: false,
        mode: Mode::Identity,
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--rounds" => s.rounds = number(value()?)?.max(1),
            "-n" => s.n = number(value()?)?.max(1),
            "-c" => s.c = number(value()?)?.max(1),
            "--warmup" => s.warmup = number(value()?)?,
            "--tokens" => s.tokens = number(value()?)?.max(1),
            "--json" => s.json = true,
            "--replicas" => s.mode = Mode::Replicas,
            "--agentgateway" => s.mode = Mode::Agentgateway(value()?.into()),
            "--unseal-opens" => s.mode = Mode::UnsealOpens(number(value()?)?),
            _ => {
                return Err("usage: capable-bench-gateway [--rounds R] [-n N] [-c C] \
                     [--warmup W] [--tokens K] [--json] \
                     [--replicas | --agentgateway BINARY | --unseal-opens N]"
                    .into())
            }
        }
    }
    Ok(s)
}

/// The issuer: its address, and the key it signs with.
struct Issuer {
    url: String,
    key: jsonwebtoken::EncodingKey,
}

impl Issuer {
    /// Serves the metadata and key set on a loopback port, on a thread of its own.
    fn start() -> Result<Issuer, String> {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "cannot make a key")?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .map_err(|_| "cannot read the key")?;
        let point = pair.public_key().as_ref().to_vec();
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "bench", "alg": "ES256",
            "use": "sig", "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..])});
        let socket = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let url = format!("http://{}", socket.local_addr().map_err(|e| e.to_string())?);
        let metadata = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")}).to_string();
        let keys = json!({"keys": [jwk]}).to_string();
        std::thread::spawn(move || {
            for conn in socket.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut head = [0u8; 4096];
                let n = conn.read(&mut head).unwrap_or(0);
                let head = String::from_utf8_lossy(&head[..n]);
                let body = if head.starts_with("GET /.well-known/oauth-authorization-server") {
                    &metadata
                } else if head.starts_with("GET /jwks") {
                    &keys
                } else {
                    ""
                };
                let status = if body.is_empty() {
                    "404 Not Found"
                } else {
                    "200 OK"
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = std::io::Write::write_all(&mut conn, answer.as_bytes());
            }
        });
        Ok(Issuer {
            url,
            key: jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()),
        })
    }

    /// A new access token (its own `jti`) of the caller `bench` for `audience`.
    fn token(&self, audience: &str, n: usize) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.typ = Some("at+jwt".into());
        header.kid = Some("bench".into());
        let claims = json!({"iss": self.url, "aud": audience, "sub": "bench",
            "client_id": "bench-app", "scope": "mcp:tools", "iat": now, "exp": now + 3600,
            "jti": format!("bench-{n}")});
        jsonwebtoken::encode(&header, &claims, &self.key).unwrap_or_default()
    }
}

/// A loopback OTLP/HTTP collector that takes every batch (`200`, body read and let go):
/// its traces endpoint.
fn collector() -> Result<String, String> {
    let socket = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!(
        "http://{}/v1/traces",
        socket.local_addr().map_err(|e| e.to_string())?
    );
    std::thread::spawn(move || {
        for conn in socket.incoming() {
            let Ok(conn) = conn else { continue };
            std::thread::spawn(move || take_batches(conn));
        }
    });
    Ok(url)
}

/// Answers one connection's POSTs (HTTP/1.1, kept alive) until it closes.
fn take_batches(conn: TcpStream) {
    use std::io::{BufRead, BufReader, Write};
    let Ok(mut writer) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    loop {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {
                    if let Some((name, value)) = line.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                }
            }
        }
        let mut body = vec![0; length.min(64 << 20)];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let ok =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(ok).is_err() {
            return;
        }
    }
}

/// Scrapes `url`'s `/metrics` every second until `stop` is set.
fn scraper(url: &str, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let metrics = url.trim_end_matches("/mcp").to_owned() + "/metrics";
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let Ok(runtime) = runtime else { return };
        let http = reqwest::Client::new();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            runtime.block_on(async {
                if let Ok(answer) = http.get(&metrics).send().await {
                    let _ = answer.bytes().await;
                }
            });
            std::thread::sleep(Duration::from_secs(1));
        }
    });
}

/// A gateway process, stopped by its PID when dropped.
struct Gateway {
    child: Child,
    url: String,
}

impl Gateway {
    fn start(issuer: Option<&Issuer>) -> Result<Gateway, String> {
        Gateway::start_traced(issuer, None)
    }

    /// A gateway whose traces go to `traces` (an OTLP/HTTP traces endpoint), if given.
    fn start_traced(issuer: Option<&Issuer>, traces: Option<&str>) -> Result<Gateway, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let listen = format!("127.0.0.1:{port}");
        let url = format!("http://{listen}/mcp");
        let mut command = Command::new(sibling("capable"));
        command.args(["bridge", "--listen", &listen]);
        if let Some(issuer) = issuer {
            command.args(["--auth-issuer", &issuer.url, "--public-url", &url]);
        }
        for name in [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ] {
            command.env_remove(name);
        }
        if let Some(traces) = traces {
            command.env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces);
        }
        command
            .arg("--")
            .arg(sibling("capable-bench-server"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command.spawn().map_err(|e| e.to_string())?;
        let gateway = Gateway { child, url };
        let addr: SocketAddr = listen.parse().map_err(|_| "no address")?;
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            if Instant::now() > until {
                return Err("the gateway did not listen within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(gateway)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(s: &Settings) -> Result<(), String> {
    if let Mode::UnsealOpens(n) = s.mode {
        unseal::opens(n);
        return Ok(());
    }
    for needed in [
        "capable",
        "capable-bench",
        "capable-bench-server",
        "capable-bench-http-server",
    ] {
        if !sibling(needed).exists() {
            return Err(format!(
                "no {needed} next to this binary (cargo build --release -p capable-cli -p capable-bench)"
            ));
        }
    }
    let report = match &s.mode {
        Mode::Identity => return identity(s),
        Mode::UnsealOpens(_) => return Ok(()),
        Mode::Replicas => replicas::run(s)?,
        Mode::Agentgateway(binary) => agentgateway::run(binary, s)?,
    };
    print(s, &report);
    Ok(())
}

fn print(s: &Settings, report: &Value) {
    match s.json {
        true => println!("{report}"),
        false => println!(
            "{}",
            serde_json::to_string_pretty(report).unwrap_or_default()
        ),
    }
}

/// The identity rows (`open`, `oauth`, `traced`) and a new token's first request.
fn identity(s: &Settings) -> Result<(), String> {
    let issuer = Issuer::start()?;
    let traces = collector()?;
    let rows = ["open", "oauth", "traced"];
    let mut rounds: Vec<Vec<(&str, Value)>> = Vec::new();
    for r in 0..s.rounds {
        let mut this = Vec::new();
        for i in 0..rows.len() {
            let row = rows[(i + r) % rows.len()];
            let with = (row == "oauth").then_some(&issuer);
            let traced = (row == "traced").then_some(traces.as_str());
            let gateway = Gateway::start_traced(with, traced)?;
            let scraping = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            if traced.is_some() {
                scraper(&gateway.url, scraping.clone());
            }
            let mut client = Command::new(sibling("capable-bench"));
            client.args([
                "client",
                "capable",
                "--url",
                &gateway.url,
                "--latency",
                "--legacy",
            ]);
            client.args(["-n", &s.n.to_string(), "-c", &s.c.to_string()]);
            client.args(["--warmup", &s.warmup.to_string(), "--handshakes", "5"]);
            if let Some(issuer) = with {
                let bearer = format!("Authorization: Bearer {}", issuer.token(&gateway.url, r));
                client.args(["--header", &bearer]);
            }
            let out = client
                .stderr(Stdio::inherit())
                .output()
                .map_err(|e| e.to_string());
            scraping.store(true, std::sync::atomic::Ordering::Relaxed);
            let out = out?;
            let figures: Value = serde_json::from_slice(&out.stdout)
                .map_err(|_| format!("{row} failed in round {}", r + 1))?;
            if !s.json {
                eprintln!("round {}/{}: {row:<6} {figures}", r + 1, s.rounds);
            }
            this.push((row, figures));
        }
        rounds.push(this);
    }
    let first = first_requests(&issuer, s.tokens)?;
    print(s, &report(&rounds, &rows, first));
    Ok(())
}

/// A new token's first request against its second, `tokens` times, on one gateway.
fn first_requests(issuer: &Issuer, tokens: usize) -> Result<Value, String> {
    let gateway = Gateway::start(Some(issuer))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let url = gateway.url.as_str();
        let post = |token: String, session: Option<String>, body: Value| {
            let http = &http;
            async move {
                let answered = post::post(http, url, Some(&token), session.as_deref(), &body);
                answered.await.map(|(session, _)| session)
            }
        };
        let opened = post(
            issuer.token(&gateway.url, 0),
            None,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}),
        )
        .await?;
        let session = opened.ok_or("no session")?;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(
            issuer.token(&gateway.url, 0),
            Some(session.clone()),
            initialized,
        )
        .await?;
        let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
        let (mut first, mut again) = (Vec::new(), Vec::new());
        for n in 0..tokens {
            let token = issuer.token(&gateway.url, 1_000_000 + n);
            let started = Instant::now();
            post(token.clone(), Some(session.clone()), ping.clone()).await?;
            let middle = Instant::now();
            post(token, Some(session.clone()), ping.clone()).await?;
            first.push(middle - started);
            again.push(middle.elapsed());
        }
        let us = |d: &Duration| d.as_secs_f64() * 1e6;
        let added: Vec<f64> = first
            .iter()
            .zip(&again)
            .map(|(f, a)| us(f) - us(a))
            .collect();
        Ok(json!({
            "tokens": tokens,
            "first_p50_us": median(first.iter().map(us).collect()),
            "again_p50_us": median(again.iter().map(us).collect()),
            "first_minus_again_p50_us": median(added),
        }))
    })
}

/// One round's figures, by row.
type Round<'a> = [(&'a str, Value)];

fn report(rounds: &[Vec<(&str, Value)>], rows: &[&str], first: Value) -> Value {
    let value = |round: &Round, row: &str, metric: &str| {
        round
            .iter()
            .find(|(r, _)| *r == row)
            .and_then(|(_, f)| f[metric].as_f64())
    };
    let metrics = [
        "seq_read_rps",
        "pipelined_read_rps",
        "seq_p50_us",
        "handshake_ms",
    ];
    let mut medians = serde_json::Map::new();
    for row in rows {
        let mut m = serde_json::Map::new();
        for metric in metrics {
            let values = rounds
                .iter()
                .filter_map(|r| value(r, row, metric))
                .collect();
            m.insert(metric.into(), json!(median(values)));
        }
        medians.insert((*row).into(), Value::Object(m));
    }
    let per_round =
        |f: &dyn Fn(&Round) -> Option<f64>| median(rounds.iter().filter_map(|r| f(r)).collect());
    let over = |row: &str| {
        let ratio =
            |metric: &str| per_round(&|r| Some(value(r, row, metric)? / value(r, "open", metric)?));
        let added =
            per_round(&|r| Some(value(r, row, "seq_p50_us")? - value(r, "open", "seq_p50_us")?));
        json!({
            "seq_ratio": ratio("seq_read_rps"),
            "pipelined_ratio": ratio("pipelined_read_rps"),
            "added_p50_us": added,
        })
    };
    json!({
        "median": medians,
        "oauth/open": over("oauth"),
        "traced/open": over("traced"),
        "new_token": first,
        "rounds": rounds.len(),
    })
}
