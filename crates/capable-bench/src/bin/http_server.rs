//! A minimal, fast Streamable HTTP MCP server for benchmarks (hyper 1.x, HTTP/1.1,
//! one current-thread runtime, so the client under test keeps the other core).
//!
//! It binds `127.0.0.1:0`, prints its endpoint URL (`http://127.0.0.1:PORT/mcp`) on one
//! line of stdout, and serves until its stdin closes. It behaves like a legacy
//! (2025-11-25) Streamable HTTP server answering with `application/json`, never SSE:
//!
//! - `POST server/discover` → 400 with a JSON-RPC -32601 error (clients fall back);
//! - `POST initialize` → the result, with an `Mcp-Session-Id` header;
//! - `POST` of a notification or a response → 202, empty;
//! - `POST resources/read` and the other requests → the stdio server's answers
//!   (`answers.rs`; `resources/read`: exactly 1 KiB of JSON);
//! - `GET` → 405 (no standalone stream); `DELETE` → 200.
//!
//! With `--modern` it is a modern (2026-07-28) server instead: `server/discover` is
//! answered (and `initialize` refused), no session ids, and every result carries what
//! that version requires: `resultType` on all of them, and `ttlMs` and `cacheScope` on
//! the ones a client may cache (`ttlMs: 0`: kept by nobody, so every read is a round
//! trip).
//!
//! It raises its own `RLIMIT_NOFILE` soft limit to the hard one, for benches that hold
//! many connections open.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};

#[path = "../answers.rs"]
mod answers;
#[path = "../placement.rs"]
#[allow(dead_code)]
mod placement;

use answers::{Answers, Message};

struct Server {
    answers: Answers,
    sessions: AtomicU64,
    modern: bool,
}

const DISCOVER: &str = concat!(
    r#"{"supportedVersions":["2026-07-28"],"capabilities":{"resources":{},"tools":{}},"#,
    r#""resultType":"complete","ttlMs":0,"cacheScope":"public","#,
    r#""_meta":{"io.modelcontextprotocol/serverInfo":{"name":"capable-bench-http-server","#,
    r#""version":"0"}}}"#,
);

/// A result (an object's JSON text) with the members 2026-07-28 requires of it.
fn modern_result(method: &str, body: &str) -> String {
    let members = match method {
        "resources/read" | "resources/list" | "tools/list" => {
            r#""resultType":"complete","ttlMs":0,"cacheScope":"public""#
        }
        _ => r#""resultType":"complete""#,
    };
    match body.strip_prefix('{') {
        Some("}") => format!("{{{members}}}"),
        Some(rest) => format!("{{{members},{rest}"),
        None => body.to_owned(),
    }
}

fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read or write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn main() {
    placement::pin_from_env(placement::SERVER_CPU);
    raise_nofile();
    let server: &'static Server = Box::leak(Box::new(Server {
        answers: Answers::new("capable-bench-http-server"),
        sessions: AtomicU64::new(0),
        modern: std::env::args().any(|a| a == "--modern"),
    }));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a local address");
        println!("http://{addr}/mcp");
        // Serve until stdin closes (the runner holds it), then exit.
        std::thread::spawn(|| {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| handle(server, req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

fn respond(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r
}

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = respond(status, body);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

async fn handle(
    server: &'static Server,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    match *req.method() {
        Method::POST => {}
        Method::DELETE => return Ok(respond(StatusCode::OK, Bytes::new())),
        _ => return Ok(respond(StatusCode::METHOD_NOT_ALLOWED, Bytes::new())),
    }
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(respond(StatusCode::BAD_REQUEST, Bytes::new())),
    };
    let Ok(msg) = serde_json::from_slice::<Message<'_>>(&body) else {
        return Ok(respond(StatusCode::BAD_REQUEST, Bytes::new()));
    };
    let (Some(id), Some(method)) = (msg.id, msg.method) else {
        // A notification or a response.
        return Ok(respond(StatusCode::ACCEPTED, Bytes::new()));
    };
    let id = id.get();
    let result = |body: &str| {
        json(
            StatusCode::OK,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{body}}}"#),
        )
    };
    let error = |status: StatusCode| json(status, answers::method_not_found(id, method));
    if server.modern {
        return Ok(match method {
            "server/discover" => result(DISCOVER),
            "initialize" => error(StatusCode::BAD_REQUEST),
            _ => match server.answers.result(method, msg.params) {
                Some(body) => result(&modern_result(method, &body)),
                None => error(StatusCode::OK),
            },
        });
    }
    Ok(match server.answers.result(method, msg.params) {
        // Unknown here: the discover probe is refused as a legacy HTTP server does.
        None if method == "server/discover" => error(StatusCode::BAD_REQUEST),
        None => error(StatusCode::OK),
        Some(body) if method == "initialize" => {
            let mut r = result(&body);
            let session = server.sessions.fetch_add(1, Relaxed) + 1;
            if let Ok(v) = HeaderValue::from_str(&format!("bench-session-{session}")) {
                r.headers_mut().insert("mcp-session-id", v);
            }
            r
        }
        Some(body) => result(&body),
    })
}
