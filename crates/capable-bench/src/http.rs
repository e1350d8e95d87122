//! The HTTP mode's clients (`capable-bench --http`): the same workload as over stdio,
//! against `capable-bench-http-server` on loopback.
//!
//! - `raw` — the floor: one keep-alive `reqwest::Client`, every body pre-built, the
//!   session headers set by hand, responses read whole but never parsed.
//! - `raw-hyper` — the same over hyper's pooled client (`hyper_util`'s), which capable
//!   itself sends with, each request's URI and headers made once: the floor of
//!   capable's own HTTP stack, without reqwest's layers.
//! - `capable` — `capable::connect_http`, the path a host takes.
//! - `rmcp` — rmcp's `StreamableHttpClientTransport::from_config`, whose default reqwest
//!   client keeps no idle connections (`pool_max_idle_per_host(0)`), so every POST
//!   opens a new TCP connection.
//! - `rmcp-pooled` — the same transport over `reqwest::Client::new()` (keep-alive),
//!   through `with_client`, as a host may configure it.
//!
//! Both rmcp variants get `max_concurrent_requests = c` (their default is 16), so the
//! pipelined phase really has `c` requests in flight.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};

use crate::client::{handshakes, reads, Figures};
use crate::{Settings, URI};

fn url(s: &Settings) -> Result<reqwest::Url, String> {
    let url = s.url.as_deref().ok_or("--url is required in HTTP mode")?;
    reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))
}

// ---------------------------------------------------------------------------------
// capable

pub async fn capable(s: Settings) -> Result<Figures, String> {
    use capable::HttpConfig;
    let url = url(&s)?;
    // `connect_http` as a host calls it: the first connection probes (`server/discover`,
    // refused, then `initialize`); later ones to the same origin reuse the era found.
    let connect = || async {
        let mut config = HttpConfig::new(url.clone());
        config.headers = s.headers.clone();
        capable::connect_http(config, crate::client_options(&s))
            .await
            .map_err(|e| e.to_string())
    };
    let close = |session: capable::Session| async move {
        session.close().await;
    };
    let mut f = handshakes(&s, connect, close).await?;
    let session = connect().await?;
    reads(&s, &mut f, || async {
        session.read_resource(URI).await.is_ok()
    })
    .await;
    close(session).await;
    Ok(f)
}

// ---------------------------------------------------------------------------------
// rmcp

pub async fn rmcp(s: Settings, pooled: bool) -> Result<Figures, String> {
    use rmcp::model::ReadResourceRequestParams;
    use rmcp::service::{RoleClient, RunningService};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::ServiceExt;
    let url = url(&s)?;
    let connect = || async {
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
            .max_concurrent_requests(s.c);
        let transport = if pooled {
            StreamableHttpClientTransport::with_client(reqwest::Client::new(), config)
        } else {
            StreamableHttpClientTransport::from_config(config)
        };
        ().serve(transport).await.map_err(|e| e.to_string())
    };
    let close = |client: RunningService<RoleClient, ()>| async move {
        let _ = client.cancel().await;
    };
    let mut f = handshakes(&s, connect, close).await?;
    let client = connect().await?;
    let read = || async {
        client
            .read_resource(ReadResourceRequestParams::new(URI))
            .await
            .is_ok()
    };
    reads(&s, &mut f, read).await;
    close(client).await;
    Ok(f)
}

// ---------------------------------------------------------------------------------
// raw: pre-built bodies over one keep-alive reqwest client

const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
    r#""capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
);
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

struct Raw {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
}

impl Raw {
    async fn post(&self, body: Bytes) -> Result<reqwest::Response, reqwest::Error> {
        self.client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
    }
}

impl Floor for Raw {
    async fn handshake(url: &reqwest::Url) -> Result<Raw, String> {
        let mut raw = Raw {
            client: reqwest::Client::new(),
            url: url.clone(),
            headers: json_headers(),
        };
        let e = |e: reqwest::Error| e.to_string();
        let answer = raw
            .post(Bytes::from_static(INITIALIZE.as_bytes()))
            .await
            .map_err(e)?;
        let session = answer
            .headers()
            .get("mcp-session-id")
            .cloned()
            .ok_or("no Mcp-Session-Id")?;
        answer.bytes().await.map_err(e)?;
        session_headers(&mut raw.headers, session);
        let done = raw
            .post(Bytes::from_static(INITIALIZED.as_bytes()))
            .await
            .map_err(e)?;
        done.bytes().await.map_err(e)?;
        Ok(raw)
    }

    async fn read(&self, body: Bytes) -> bool {
        match self.post(body).await {
            Ok(r) if r.status() == reqwest::StatusCode::OK => r.bytes().await.is_ok(),
            _ => false,
        }
    }
}

/// Every read's body, pre-built, ids 1 and up: as many as the run makes.
fn read_bodies(s: &Settings) -> Vec<Bytes> {
    (1..=s.warmup + 2 * s.n)
        .map(|id| {
            Bytes::from(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"{URI}"}}}}"#
            ))
        })
        .collect()
}

pub async fn raw(s: Settings) -> Result<Figures, String> {
    floor::<Raw>(s).await
}

/// The headers of every POST: JSON out, JSON or an event stream back.
fn json_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    headers
}

/// The headers of a legacy session's requests after `initialize`.
fn session_headers(headers: &mut HeaderMap, session: HeaderValue) {
    headers.insert("mcp-session-id", session);
    headers.insert(
        "mcp-protocol-version",
        HeaderValue::from_static("2025-11-25"),
    );
}

/// A floor client: pre-built bodies, answers read whole, never parsed.
trait Floor: Sized {
    async fn handshake(url: &reqwest::Url) -> Result<Self, String>;
    async fn read(&self, body: Bytes) -> bool;
}

/// The workload on a floor client: handshakes, then the reads of the pre-built bodies.
async fn floor<F: Floor>(s: Settings) -> Result<Figures, String> {
    let url = url(&s)?;
    let bodies = read_bodies(&s);
    let next = AtomicUsize::new(0);
    let body = || bodies[next.fetch_add(1, Relaxed) % bodies.len()].clone();
    let mut f = handshakes(&s, || F::handshake(&url), |_: F| async {}).await?;
    let client = F::handshake(&url).await?;
    reads(&s, &mut f, || client.read(body())).await;
    Ok(f)
}

// ---------------------------------------------------------------------------------
// raw-hyper: pre-built requests over hyper's pooled client

type Hyper = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<Bytes>,
>;

struct RawHyper {
    client: Hyper,
    uri: hyper::Uri,
    headers: HeaderMap,
}

impl RawHyper {
    async fn send(&self, body: Bytes) -> Result<hyper::Response<hyper::body::Incoming>, String> {
        let mut request = hyper::Request::new(http_body_util::Full::new(body));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        self.client
            .request(request)
            .await
            .map_err(|e| e.to_string())
    }

    /// POSTs `body`: the answer's status, its body read whole.
    async fn post(&self, body: Bytes) -> Result<(u16, Bytes), String> {
        use http_body_util::BodyExt;
        let answer = self.send(body).await?;
        let status = answer.status().as_u16();
        let body = answer.into_body().collect().await;
        Ok((status, body.map_err(|e| e.to_string())?.to_bytes()))
    }
}

impl Floor for RawHyper {
    async fn handshake(url: &reqwest::Url) -> Result<RawHyper, String> {
        let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
        connector.set_nodelay(true);
        let executor = hyper_util::rt::TokioExecutor::new();
        let mut raw = RawHyper {
            client: hyper_util::client::legacy::Client::builder(executor).build(connector),
            uri: url.as_str().parse().map_err(|e| format!("{url}: {e}"))?,
            headers: json_headers(),
        };
        let answer = raw.send(Bytes::from_static(INITIALIZE.as_bytes())).await?;
        let session = answer
            .headers()
            .get("mcp-session-id")
            .cloned()
            .ok_or("no Mcp-Session-Id")?;
        http_body_util::BodyExt::collect(answer.into_body())
            .await
            .map_err(|e| e.to_string())?;
        session_headers(&mut raw.headers, session);
        raw.post(Bytes::from_static(INITIALIZED.as_bytes())).await?;
        Ok(raw)
    }

    async fn read(&self, body: Bytes) -> bool {
        matches!(self.post(body).await, Ok((200, _)))
    }
}

pub async fn raw_hyper(s: Settings) -> Result<Figures, String> {
    floor::<RawHyper>(s).await
}
