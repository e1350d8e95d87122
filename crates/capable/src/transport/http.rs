//! Streamable HTTP, in both shapes, with an automatic fallback to the 2024-11-05
//! HTTP+SSE transport.
//!
//! Every client message is its own POST. What the transport adds to each depends on
//! the message:
//!
//! - **Modern (2026-07-28)** messages carry their version in `_meta`; their POST carries
//!   `MCP-Protocol-Version` (the same version), `Mcp-Method`, `Mcp-Name` for
//!   `tools/call`, `resources/read` and `prompts/get`, and `Mcp-Param-*` for tool
//!   arguments a tool's input schema marks with `x-mcp-header`. There are no sessions
//!   and no GET stream; cancelling is closing the response stream, and a stream that
//!   breaks before its answer is re-issued with a new id (bounded).
//! - **Legacy (2025-03-26 … 2025-11-25)**: `Mcp-Session-Id` from the `initialize`
//!   answer is echoed on every later request, and `MCP-Protocol-Version` carries the
//!   *negotiated* version. After `notifications/initialized` a standalone GET stream is
//!   opened (405: the server has none). A response stream that breaks before its answer
//!   is resumed by GET with `Last-Event-ID`, after the server's `retry`. A 404 to a
//!   request that carried a session id starts a new session and retries once.
//! - When `initialize` itself is refused with 400, 404 or 405 and the body is not a
//!   modern error, the URL is tried as a 2024-11-05 HTTP+SSE endpoint (see
//!   [`legacy_sse`](super::legacy_sse)).
//!
//! HTTP failures that concern one request become a JSON-RPC error for that request
//! whose message names the URL, the status and the server's own error, so the session
//! reports them where the request was made. Redirects are followed by hand so that an
//! `Authorization` header never reaches another origin.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
pub use reqwest::Url;
use reqwest::{Method as HttpMethod, StatusCode};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::sse::{SseItem, SseReader};
use super::{legacy_sse, BoxFuture, MessageSink, MessageSource, Peer, Transport, TransportError};

/// How an HTTP server is reached.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The MCP endpoint.
    pub url: Url,
    /// Extra headers for every request (`Authorization`, API keys, …). Their values
    /// are never logged.
    pub headers: Vec<(String, String)>,
    /// The largest message accepted, in bytes.
    pub max_message_size: usize,
    /// How a broken stream is resumed.
    pub reconnect: Reconnect,
    /// How long closing waits for the session's DELETE.
    pub close_timeout: Duration,
}

impl HttpConfig {
    /// A configuration for `url` with default limits.
    pub fn new(url: Url) -> Self {
        HttpConfig {
            url,
            headers: Vec::new(),
            max_message_size: 64 * 1024 * 1024,
            reconnect: Reconnect::default(),
            close_timeout: Duration::from_secs(2),
        }
    }
}

/// Reconnection of broken SSE streams: the server's `retry` when it gave one, else a
/// doubling delay from `initial` capped at `max`; at most `attempts` tries in a row.
/// A reconnect that delivers nothing does not reset the count.
#[derive(Clone, Copy, Debug)]
pub struct Reconnect {
    /// First delay when the server gave no `retry`.
    pub initial: Duration,
    /// Largest delay.
    pub max: Duration,
    /// Most attempts in a row.
    pub attempts: u32,
    /// How many times a modern request whose stream broke is re-issued.
    pub reissues: u32,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(8),
            attempts: 5,
            reissues: 2,
        }
    }
}

impl Reconnect {
    /// The longest `retry` a server may ask for; longer values are taken as this.
    pub const MAX_SERVER_RETRY: Duration = Duration::from_secs(60);

    fn delay(&self, attempt: u32, retry: Option<Duration>) -> Duration {
        match retry {
            // The server's `retry` is honoured (MUST), within reason.
            Some(r) => r.min(Self::MAX_SERVER_RETRY),
            None => self
                .initial
                .saturating_mul(1 << attempt.min(16))
                .min(self.max),
        }
    }
}

type Inbound = Result<Vec<u8>, TransportError>;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Mode {
    Streamable,
    LegacySse { endpoint: Url },
}

/// A tool argument sent as an `Mcp-Param-*` header (modern).
#[derive(Clone, Debug, PartialEq)]
struct ParamHeader {
    path: Vec<String>,
    header: String,
}

#[derive(Default)]
struct State {
    mode: Option<Mode>,
    session_id: Option<String>,
    negotiated: Option<String>,
    /// The `initialize` request as sent, to start a new session after a 404.
    initialize: Option<Value>,
    /// Requests in flight: their task, and whether they are modern (cancel = close).
    in_flight: HashMap<String, (AbortHandle, bool)>,
    tool_headers: HashMap<String, Vec<ParamHeader>>,
    background: Vec<AbortHandle>,
    closed: bool,
}

pub(super) struct Http {
    client: reqwest::Client,
    pub(super) config: HttpConfig,
    inbound: mpsc::Sender<Inbound>,
    state: Mutex<State>,
}

/// An HTTP connection to one MCP endpoint, ready to be split.
pub struct HttpTransport {
    http: Arc<Http>,
    inbound: mpsc::Receiver<Inbound>,
}

impl HttpTransport {
    /// Prepares a connection (one HTTP client with keep-alive for its whole life).
    pub fn new(config: HttpConfig) -> Result<HttpTransport, TransportError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| TransportError::Io(format!("cannot build the HTTP client: {e}")))?;
        let (tx, rx) = mpsc::channel(1024);
        Ok(HttpTransport {
            http: Arc::new(Http {
                client,
                config,
                inbound: tx,
                state: Mutex::new(State::default()),
            }),
            inbound: rx,
        })
    }
}

impl Transport for HttpTransport {
    type Sink = HttpSink;
    type Source = HttpSource;

    fn split(self) -> (HttpSink, HttpSource, Box<dyn Peer>) {
        (
            HttpSink {
                http: self.http.clone(),
            },
            HttpSource { rx: self.inbound },
            Box::new(HttpPeer { http: self.http }),
        )
    }
}

/// Sends each message as its own POST.
pub struct HttpSink {
    http: Arc<Http>,
}

/// Messages from response bodies and SSE streams, in arrival order.
pub struct HttpSource {
    rx: mpsc::Receiver<Inbound>,
}

impl MessageSource for HttpSource {
    async fn recv(&mut self) -> Result<Option<bytes::Bytes>, TransportError> {
        match self.rx.recv().await {
            Some(Ok(m)) => Ok(Some(m.into())),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

fn protocol_version_of(msg: &Value) -> Option<&str> {
    msg.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
}

impl MessageSink for HttpSink {
    async fn send(&mut self, batch: &[u8]) -> Result<(), TransportError> {
        for line in batch.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(msg) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let http = self.http.clone();
            let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
            match (msg.get("id").cloned(), method.as_deref()) {
                (Some(id), Some(method)) => {
                    let modern = protocol_version_of(&msg).is_some();
                    if method == "initialize" {
                        http.lock().initialize = Some(msg.clone());
                    }
                    let task = tokio::spawn({
                        let http = http.clone();
                        let id = id.clone();
                        async move {
                            if let Err(e) = http.clone().request(msg).await {
                                http.fail(&id, e).await;
                            }
                            http.lock().in_flight.remove(&id_key(&id));
                        }
                    });
                    http.lock()
                        .in_flight
                        .insert(id_key(&id), (task.abort_handle(), modern));
                }
                (None, Some("notifications/cancelled")) => {
                    let target = msg.pointer("/params/requestId").map(id_key);
                    let entry = target.and_then(|t| http.lock().in_flight.get(&t).cloned());
                    match entry {
                        // Modern HTTP: closing the response stream is the cancellation.
                        Some((abort, true)) => abort.abort(),
                        _ => http.post_one_way(&msg).await?,
                    }
                }
                (None, Some(method)) => {
                    let initialized = method == "notifications/initialized";
                    http.post_one_way(&msg).await?;
                    if initialized {
                        http.open_standalone_stream();
                    }
                }
                // A response to a server request.
                (Some(_), None) => http.post_one_way(&msg).await?,
                (None, None) => {}
            }
        }
        Ok(())
    }
}

/// What a finished POST exchange left to do.
enum Exchange {
    Done,
    /// The response stream broke before the answer; resume from this event id.
    Broken {
        last_event_id: Option<String>,
        retry: Option<Duration>,
    },
}

impl Http {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn mode(&self) -> Mode {
        self.lock().mode.clone().unwrap_or(Mode::Streamable)
    }

    pub(super) async fn deliver(&self, message: Vec<u8>) {
        let _ = self.inbound.send(Ok(message)).await;
    }

    pub(super) async fn deliver_error(&self, error: TransportError) {
        let _ = self.inbound.send(Err(error)).await;
    }

    /// Turns a failure of one request into a JSON-RPC error for it, or ends the
    /// session when the server cannot be reached at all.
    async fn fail(&self, id: &Value, e: RequestFailure) {
        match e {
            RequestFailure::Unreachable(e) => self.deliver_error(e).await,
            RequestFailure::Answered(error) => {
                let msg = json!({"jsonrpc": "2.0", "id": id, "error": error});
                self.deliver(serde_json::to_vec(&msg).unwrap_or_default())
                    .await;
            }
        }
    }

    /// The host's own headers (`--header`, config `headers`), marked sensitive so
    /// their values never show in logs.
    pub(super) fn user_headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in &self.config.headers {
            if let (Ok(n), Ok(mut v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                v.set_sensitive(true);
                h.append(n, v);
            }
        }
        h
    }

    /// Headers every request to the endpoint carries.
    fn base_headers(&self, msg: Option<&Value>) -> HeaderMap {
        let mut h = self.user_headers();
        let st = self.lock();
        if let Some(session) = &st.session_id {
            if let Ok(v) = HeaderValue::from_str(session) {
                h.insert("mcp-session-id", v);
            }
        }
        let modern = msg.and_then(protocol_version_of);
        let version = modern.or(st.negotiated.as_deref());
        if let Some(v) = version.and_then(|v| HeaderValue::from_str(v).ok()) {
            h.insert("mcp-protocol-version", v);
        }
        if let (Some(msg), Some(_)) = (msg, modern) {
            let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
            if let Ok(v) = HeaderValue::from_str(method) {
                h.insert("mcp-method", v);
            }
            let name = match method {
                "tools/call" | "prompts/get" => msg.pointer("/params/name"),
                "resources/read" => msg.pointer("/params/uri"),
                _ => None,
            };
            if let Some(v) = name
                .and_then(Value::as_str)
                .and_then(|n| HeaderValue::from_str(&header_safe(n)).ok())
            {
                h.insert("mcp-name", v);
            }
            if method == "tools/call" {
                let tool = msg
                    .pointer("/params/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some(params) = st.tool_headers.get(tool) {
                    let args = msg.pointer("/params/arguments");
                    for p in params {
                        let value = args
                            .and_then(|a| p.path.iter().try_fold(a, |v, k| v.get(k)))
                            .and_then(header_param_value);
                        if let Some(value) = value {
                            let name = format!("mcp-param-{}", p.header.to_ascii_lowercase());
                            if let (Ok(n), Ok(v)) = (
                                HeaderName::from_bytes(name.as_bytes()),
                                HeaderValue::from_str(&value),
                            ) {
                                h.insert(n, v);
                            }
                        }
                    }
                }
            }
        }
        h
    }

    /// Sends one HTTP request, following redirects by hand (at most 5). A redirect to
    /// another origin drops `Authorization`.
    pub(super) async fn send(
        &self,
        method: HttpMethod,
        url: &Url,
        mut headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut url = url.clone();
        for _ in 0..=5 {
            let mut req = self
                .client
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(body) = &body {
                req = req
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            let resp = req
                .send()
                .await
                .map_err(|e| TransportError::Io(format!("{method} {url}: {}", error_chain(&e))))?;
            let status = resp.status();
            let redirect = matches!(
                status,
                StatusCode::MOVED_PERMANENTLY
                    | StatusCode::FOUND
                    | StatusCode::TEMPORARY_REDIRECT
                    | StatusCode::PERMANENT_REDIRECT
            );
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| url.join(l).ok());
            match (redirect, location) {
                (true, Some(next)) => {
                    if next.origin() != url.origin() {
                        headers.remove(AUTHORIZATION);
                    }
                    url = next;
                }
                _ => return Ok(resp),
            }
        }
        Err(TransportError::Io(format!(
            "{method} {url}: too many redirects"
        )))
    }

    /// POSTs one JSON-RPC message, accepting a JSON or an SSE answer.
    async fn post_message(
        &self,
        url: &Url,
        mut headers: HeaderMap,
        msg: &Value,
    ) -> Result<reqwest::Response, TransportError> {
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let body = serde_json::to_vec(msg).unwrap_or_default();
        self.send(HttpMethod::POST, url, headers, Some(body)).await
    }

    fn post_url(&self) -> Url {
        match self.mode() {
            Mode::LegacySse { endpoint } => endpoint,
            Mode::Streamable => self.config.url.clone(),
        }
    }

    /// POSTs a notification or a response: 202 (or any 2xx, with or without a body)
    /// is success.
    async fn post_one_way(&self, msg: &Value) -> Result<(), TransportError> {
        let url = self.post_url();
        let headers = self.base_headers(Some(msg));
        let resp = self.post_message(&url, headers, msg).await?;
        if !resp.status().is_success() {
            let status = resp.status();
            let text = resp.text().await.unwrap_or_default();
            let what = msg
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("a response");
            tracing::warn!(
                "POST {url} ({what}) answered HTTP {status}: {}",
                excerpt(&text)
            );
        }
        Ok(())
    }

    /// One request, start to answer.
    async fn request(self: Arc<Self>, msg: Value) -> Result<(), RequestFailure> {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let modern = protocol_version_of(&msg).is_some();
        let original_id = msg.get("id").cloned().unwrap_or(Value::Null);
        let mut attempt = msg;
        let mut reissues = 0;
        let mut renewed_session = false;
        let mut refreshed_tools = false;
        loop {
            if let Mode::LegacySse { .. } = self.mode() {
                return self.post_legacy_sse(&attempt).await;
            }
            let url = self.config.url.clone();
            let headers = self.base_headers(Some(&attempt));
            let sent_session = headers.contains_key("mcp-session-id");
            let resp = self
                .post_message(&url, headers, &attempt)
                .await
                .map_err(RequestFailure::Unreachable)?;
            let status = resp.status();
            if status == StatusCode::NOT_FOUND
                && sent_session
                && !modern
                && !renewed_session
                && method != "initialize"
            {
                // The session expired: start a new one, then retry this request once.
                renewed_session = true;
                self.renew_session().await?;
                continue;
            }
            if !status.is_success() {
                let text = read_body(resp, self.config.max_message_size)
                    .await
                    .unwrap_or_default();
                let body: Option<Value> = serde_json::from_slice(&text).ok();
                let modern_error = body.as_ref().is_some_and(is_modern_error);
                if method == "initialize"
                    && !modern_error
                    && matches!(status.as_u16(), 400 | 404 | 405)
                    && self.lock().mode.is_none()
                {
                    // Maybe a 2024-11-05 HTTP+SSE server: try the URL as its SSE endpoint.
                    match legacy_sse::open(&self).await {
                        Ok(()) => return self.post_legacy_sse(&attempt).await,
                        Err(e) => {
                            tracing::info!("the URL is no HTTP+SSE endpoint either: {e}");
                        }
                    }
                }
                let header_mismatch = body.as_ref().and_then(|b| b.pointer("/error/code"))
                    == Some(&json!(capable_core::jsonrpc::codes::HEADER_MISMATCH));
                if header_mismatch && method == "tools/call" && modern && !refreshed_tools {
                    // The tool's `x-mcp-header` annotations changed: re-fetch tools/list,
                    // then retry once with the headers it now asks for.
                    refreshed_tools = true;
                    self.refresh_tool_headers(&attempt).await?;
                    continue;
                }
                return Err(RequestFailure::Answered(http_error(
                    &url, status, body, &text,
                )));
            }
            if method == "initialize" {
                let mut st = self.lock();
                st.mode.get_or_insert(Mode::Streamable);
                if let Some(s) = resp
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                {
                    st.session_id = Some(s.to_owned());
                }
            }
            let attempt_id = attempt.get("id").cloned().unwrap_or(Value::Null);
            match self
                .read_answer(resp, &attempt_id, &original_id, &method)
                .await?
            {
                Exchange::Done => return Ok(()),
                Exchange::Broken {
                    last_event_id,
                    retry,
                } => {
                    if modern && method == "subscriptions/listen" {
                        // A listen stream that closes without its final result ended
                        // unexpectedly; the host decides whether to listen again (a new
                        // id would change the stream's subscriptionId).
                        return Err(RequestFailure::Answered(local_error(format!(
                            "the subscription stream from {url} closed without its final result"
                        ))));
                    }
                    if modern {
                        // 2026-07-28: a broken stream loses the request; re-issue it
                        // with a new id (bounded).
                        if reissues >= self.config.reconnect.reissues {
                            return Err(RequestFailure::Answered(local_error(format!(
                                "the response stream from {url} broke {} times before the answer",
                                reissues + 1
                            ))));
                        }
                        reissues += 1;
                        attempt["id"] = json!(format!("{}~reissue{reissues}", original_id));
                        continue;
                    }
                    return self
                        .resume(&attempt_id, &original_id, &method, last_event_id, retry)
                        .await;
                }
            }
        }
    }

    /// Reads a POST's answer (JSON or SSE), delivering every message. Reports whether
    /// the answer to `attempt_id` came.
    async fn read_answer(
        &self,
        resp: reqwest::Response,
        attempt_id: &Value,
        original_id: &Value,
        method: &str,
    ) -> Result<Exchange, RequestFailure> {
        let is_sse = is_event_stream(&resp);
        if !is_sse {
            let body = read_body(resp, self.config.max_message_size)
                .await
                .map_err(RequestFailure::Unreachable)?;
            if body.iter().all(u8::is_ascii_whitespace) {
                return Err(RequestFailure::Answered(local_error(
                    "the server accepted the request but sent no answer".into(),
                )));
            }
            self.deliver_from_server(body, attempt_id, original_id, method)
                .await;
            return Ok(Exchange::Done);
        }
        let mut reader = SseReader::new(resp, self.config.max_message_size);
        let answered = self
            .deliver_stream(&mut reader, attempt_id, original_id, method)
            .await?;
        Ok(if answered {
            Exchange::Done
        } else {
            Exchange::Broken {
                last_event_id: reader.last_event_id.clone(),
                retry: reader.retry,
            }
        })
    }

    /// Delivers every message of an SSE stream until the answer to `attempt_id`
    /// came (`true`) or the stream ended or broke (`false`); an event over the size
    /// limit is an error.
    async fn deliver_stream(
        &self,
        reader: &mut SseReader,
        attempt_id: &Value,
        original_id: &Value,
        method: &str,
    ) -> Result<bool, TransportError> {
        loop {
            match reader.next().await {
                Ok(Some(SseItem::Message(m))) => {
                    if self
                        .deliver_from_server(m, attempt_id, original_id, method)
                        .await
                    {
                        return Ok(true);
                    }
                }
                Ok(Some(SseItem::Endpoint(_))) => {}
                Ok(None) | Err(TransportError::Io(_)) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
    }

    /// Delivers one message from the server; returns whether it was the answer to
    /// `attempt_id` (whose id is then restored to `original_id`).
    async fn deliver_from_server(
        &self,
        message: Vec<u8>,
        attempt_id: &Value,
        original_id: &Value,
        method: &str,
    ) -> bool {
        let Ok(mut value) = serde_json::from_slice::<Value>(&message) else {
            // Not JSON: let the client skip it with a warning.
            self.deliver(message).await;
            return false;
        };
        let is_answer = value.get("method").is_none()
            && (value.get("result").is_some() || value.get("error").is_some())
            && value.get("id") == Some(attempt_id);
        if !is_answer {
            self.deliver(message).await;
            return false;
        }
        let mut changed = false;
        if attempt_id != original_id {
            value["id"] = original_id.clone();
            changed = true;
        }
        if let Some(result) = value.get_mut("result") {
            match method {
                "initialize" => {
                    if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
                        self.lock().negotiated = Some(v.to_owned());
                    }
                }
                "tools/list" => changed |= self.check_tool_headers(result),
                _ => {}
            }
        }
        // Re-serialise only what was changed; everything else goes out as received.
        let message = if changed {
            serde_json::to_vec(&value).unwrap_or(message)
        } else {
            message
        };
        self.deliver(message).await;
        true
    }

    /// Modern: learns which tool arguments travel as `Mcp-Param-*` headers, and drops
    /// (with a warning) tools whose `x-mcp-header` annotations break the rules.
    /// Returns whether a tool was dropped.
    fn check_tool_headers(&self, result: &mut Value) -> bool {
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return false;
        };
        let before = tools.len();
        let mut st = self.lock();
        tools.retain(|tool| {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            match param_headers(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(headers) => {
                    if headers.is_empty() {
                        st.tool_headers.remove(&name);
                    } else {
                        st.tool_headers.insert(name, headers);
                    }
                    true
                }
                Err(why) => {
                    tracing::warn!(
                        "dropped tool {name:?}: its x-mcp-header annotations are invalid ({why})"
                    );
                    false
                }
            }
        });
        tools.len() != before
    }

    /// Modern: fetches `tools/list` (every page) for the transport alone, to learn the
    /// tools' current `x-mcp-header` annotations. The answers are not delivered.
    async fn refresh_tool_headers(&self, failed: &Value) -> Result<(), RequestFailure> {
        let meta = failed
            .pointer("/params/_meta")
            .cloned()
            .unwrap_or(json!({}));
        let mut cursor: Option<String> = None;
        for page in 0..100 {
            let id = json!(format!("capable-tools-refresh-{page}"));
            let mut params = json!({"_meta": meta});
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
            let url = self.config.url.clone();
            let headers = self.base_headers(Some(&msg));
            let resp = self.post_message(&url, headers, &msg).await?;
            let mut answer = None;
            let is_sse = is_event_stream(&resp);
            if is_sse {
                let mut reader = SseReader::new(resp, self.config.max_message_size);
                while let Ok(Some(item)) = reader.next().await {
                    if let SseItem::Message(m) = item {
                        let v: Value = serde_json::from_slice(&m).unwrap_or(Value::Null);
                        if v.get("id") == Some(&id) {
                            answer = Some(v);
                            break;
                        }
                    }
                }
            } else {
                let body = read_body(resp, self.config.max_message_size).await?;
                answer = serde_json::from_slice(&body).ok();
            }
            let Some(mut result) = answer.and_then(|mut a| a.get_mut("result").map(Value::take))
            else {
                return Ok(());
            };
            self.check_tool_headers(&mut result);
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(()),
            }
        }
        Ok(())
    }

    /// Legacy: resumes a broken response stream by GET with `Last-Event-ID`.
    async fn resume(
        &self,
        attempt_id: &Value,
        original_id: &Value,
        method: &str,
        mut last_event_id: Option<String>,
        mut retry: Option<Duration>,
    ) -> Result<(), RequestFailure> {
        let policy = self.config.reconnect;
        for attempt in 0..policy.attempts {
            tokio::time::sleep(policy.delay(attempt, retry)).await;
            let mut headers = self.base_headers(None);
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            if let Some(id) = last_event_id
                .as_deref()
                .and_then(|i| HeaderValue::from_str(i).ok())
            {
                headers.insert("last-event-id", id);
            }
            let resp = self
                .send(HttpMethod::GET, &self.config.url, headers, None)
                .await
                .map_err(RequestFailure::Unreachable)?;
            if !resp.status().is_success() {
                let status = resp.status();
                let text = read_body(resp, 64 * 1024).await.unwrap_or_default();
                return Err(RequestFailure::Answered(local_error(format!(
                    "the response stream broke and resuming it by GET {} failed: HTTP {status} {}",
                    self.config.url,
                    excerpt(&String::from_utf8_lossy(&text))
                ))));
            }
            let mut reader = SseReader::new(resp, self.config.max_message_size);
            if self
                .deliver_stream(&mut reader, attempt_id, original_id, method)
                .await?
            {
                return Ok(());
            }
            last_event_id = reader.last_event_id.or(last_event_id);
            retry = reader.retry.or(retry);
        }
        Err(RequestFailure::Answered(local_error(format!(
            "the response stream from {} broke and {} attempts to resume it failed",
            self.config.url, policy.attempts
        ))))
    }

    /// Legacy: a new session after a 404 (the old one expired): `initialize` without a
    /// session id, then `notifications/initialized`. The answer is not delivered: the
    /// host's session goes on as negotiated.
    async fn renew_session(&self) -> Result<(), RequestFailure> {
        let init = {
            let mut st = self.lock();
            st.session_id = None;
            st.initialize.clone()
        };
        let Some(init) = init else {
            return Err(RequestFailure::Answered(local_error(
                "the session expired and there is no initialize to start a new one".into(),
            )));
        };
        tracing::info!(
            "the session at {} expired; starting a new one",
            self.config.url
        );
        let mut headers = self.base_headers(None);
        headers.remove("mcp-protocol-version");
        let resp = self
            .post_message(&self.config.url, headers, &init)
            .await
            .map_err(RequestFailure::Unreachable)?;
        if !resp.status().is_success() {
            return Err(RequestFailure::Answered(local_error(format!(
                "the session expired and a new initialize was refused with HTTP {}",
                resp.status()
            ))));
        }
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.lock().session_id = Some(s.to_owned());
        }
        // Read (and drop) the answer: this session's version was negotiated before.
        let _ = read_body(resp, self.config.max_message_size).await;
        self.post_one_way(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .map_err(RequestFailure::Unreachable)?;
        Ok(())
    }

    /// Legacy: the standalone GET stream for server requests and notifications.
    fn open_standalone_stream(self: &Arc<Self>) {
        if self.mode() != Mode::Streamable {
            return;
        }
        let http = self.clone();
        let task = tokio::spawn(async move {
            let policy = http.config.reconnect;
            let mut attempts = 0u32;
            let mut last_event_id: Option<String> = None;
            let mut retry: Option<Duration> = None;
            loop {
                let mut headers = http.base_headers(None);
                headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
                if let Some(id) = last_event_id
                    .as_deref()
                    .and_then(|i| HeaderValue::from_str(i).ok())
                {
                    headers.insert("last-event-id", id);
                }
                match http
                    .send(HttpMethod::GET, &http.config.url, headers, None)
                    .await
                {
                    Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                    Ok(resp) if resp.status().is_success() => {
                        let mut reader = SseReader::new(resp, http.config.max_message_size);
                        while let Ok(Some(item)) = reader.next().await {
                            if let SseItem::Message(m) = item {
                                attempts = 0;
                                http.deliver(m).await;
                            }
                        }
                        last_event_id = reader.last_event_id.or(last_event_id);
                        retry = reader.retry.or(retry);
                    }
                    Ok(resp) => {
                        tracing::debug!("GET {} answered HTTP {}", http.config.url, resp.status());
                    }
                    Err(e) => tracing::debug!("{e}"),
                }
                if http.lock().closed {
                    return;
                }
                attempts += 1;
                if attempts > policy.attempts {
                    tracing::warn!(
                        "gave up the server's event stream at {} after {} attempts",
                        http.config.url,
                        policy.attempts
                    );
                    return;
                }
                tokio::time::sleep(policy.delay(attempts - 1, retry)).await;
            }
        });
        self.lock().background.push(task.abort_handle());
    }

    pub(super) fn set_mode(&self, mode: Mode) {
        self.lock().mode = Some(mode);
    }

    pub(super) fn track(&self, task: AbortHandle) {
        self.lock().background.push(task);
    }

    /// 2024-11-05: POST to the endpoint; the answer comes on the SSE stream.
    async fn post_legacy_sse(&self, msg: &Value) -> Result<(), RequestFailure> {
        let url = self.post_url();
        let mut headers = self.base_headers(None);
        headers.remove("mcp-protocol-version");
        let resp = self
            .post_message(&url, headers, msg)
            .await
            .map_err(RequestFailure::Unreachable)?;
        let status = resp.status();
        if !status.is_success() {
            let text = read_body(resp, 64 * 1024).await.unwrap_or_default();
            let body = serde_json::from_slice(&text).ok();
            return Err(RequestFailure::Answered(http_error(
                &url, status, body, &text,
            )));
        }
        Ok(())
    }
}

/// Why one request got no answer from the server.
enum RequestFailure {
    /// The server cannot be reached: the session ends.
    Unreachable(TransportError),
    /// An error to deliver as this request's JSON-RPC error.
    Answered(Value),
}

impl From<TransportError> for RequestFailure {
    fn from(e: TransportError) -> Self {
        RequestFailure::Unreachable(e)
    }
}

/// Whether an answer is an SSE stream (else a single JSON body).
fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// A recognised 2026-07-28 error in a 400 body: the server is modern.
fn is_modern_error(body: &Value) -> bool {
    use capable_core::jsonrpc::codes;
    let code = body.pointer("/error/code").and_then(Value::as_i64);
    matches!(
        code,
        Some(
            codes::UNSUPPORTED_PROTOCOL_VERSION
                | codes::MISSING_CLIENT_CAPABILITY
                | codes::HEADER_MISMATCH
        )
    )
}

/// The JSON-RPC error for an HTTP failure: the server's own JSON-RPC error when the
/// body has one, else one that names the URL and the status.
fn http_error(url: &Url, status: StatusCode, body: Option<Value>, raw: &[u8]) -> Value {
    if let Some(error) = body
        .as_ref()
        .and_then(|b| b.get("error"))
        .filter(|e| e.get("code").is_some())
    {
        let mut error = error.clone();
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        error["message"] = json!(format!("{message} (HTTP {status} from {url})"));
        return error;
    }
    let hint = match status.as_u16() {
        401 | 403 => " (the server wants authorization; pass it with --header 'Authorization: …')",
        _ => "",
    };
    json!({
        "code": -32000,
        "message": format!("HTTP {status} from {url}{hint}: {}", excerpt(&String::from_utf8_lossy(raw))),
        "data": {"httpStatus": status.as_u16(), "url": url.as_str()},
    })
}

fn local_error(message: String) -> Value {
    json!({"code": -32000, "message": message})
}

fn excerpt(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() > 300 {
        format!("{}…", t.chars().take(300).collect::<String>())
    } else {
        t.to_owned()
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// Reads a whole body, refusing more than `limit` bytes.
pub(super) async fn read_body(
    resp: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, TransportError> {
    use futures_util::StreamExt;
    if resp.content_length().is_some_and(|n| n as usize > limit) {
        return Err(TransportError::MessageTooLarge { limit });
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| TransportError::Io(format!("reading an answer: {}", error_chain(&e))))?;
        if body.len() + chunk.len() > limit {
            return Err(TransportError::MessageTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A header value as sent: as-is when header-safe, else the spec's base64 sentinel
/// `=?base64?…?=` (also for plain values that would read as the sentinel).
pub fn header_safe(value: &str) -> String {
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let plain = !value.is_empty() && printable && !padded && !sentinel;
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

fn header_param_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(header_safe(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The `x-mcp-header` annotations of a tool's input schema, checked: each a non-empty
/// token, case-insensitively unique, on a string, integer or boolean property reached
/// through `properties` only.
fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    fn walk(
        schema: &Value,
        path: &mut Vec<String>,
        out: &mut Vec<ParamHeader>,
        via_properties: bool,
    ) -> Result<(), String> {
        let Some(obj) = schema.as_object() else {
            return Ok(());
        };
        if let Some(h) = obj.get("x-mcp-header") {
            let header = h.as_str().ok_or("x-mcp-header is not a string")?;
            if !is_token(header) {
                return Err(format!("{header:?} is not a header token"));
            }
            if !via_properties || path.is_empty() {
                return Err(format!(
                    "{header:?} is not on a property reached through `properties`"
                ));
            }
            let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
            if !matches!(ty, "string" | "integer" | "boolean") {
                return Err(format!("{header:?} is on a {ty:?} property"));
            }
            if out.iter().any(|p| p.header.eq_ignore_ascii_case(header)) {
                return Err(format!("{header:?} is used twice"));
            }
            out.push(ParamHeader {
                path: path.clone(),
                header: header.to_owned(),
            });
        }
        for (key, sub) in obj {
            match key.as_str() {
                "properties" => {
                    if let Some(props) = sub.as_object() {
                        for (name, prop) in props {
                            path.push(name.clone());
                            walk(prop, path, out, via_properties)?;
                            path.pop();
                        }
                    }
                }
                "x-mcp-header" | "type" | "description" | "title" | "default" | "enum"
                | "required" => {}
                _ => {
                    // Anything reached another way may not carry a header.
                    if contains_header(sub) {
                        return Err(format!("x-mcp-header under `{key}`"));
                    }
                }
            }
        }
        Ok(())
    }
    fn contains_header(v: &Value) -> bool {
        match v {
            Value::Object(o) => o.contains_key("x-mcp-header") || o.values().any(contains_header),
            Value::Array(a) => a.iter().any(contains_header),
            _ => false,
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out, true)?;
    Ok(out)
}

struct HttpPeer {
    http: Arc<Http>,
}

impl Peer for HttpPeer {
    fn exit_status(&self, _grace: Duration) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    fn shutdown(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let (session, tasks) = {
                let mut st = self.http.lock();
                st.closed = true;
                let mut tasks: Vec<AbortHandle> = st.background.drain(..).collect();
                tasks.extend(st.in_flight.drain().map(|(_, (t, _))| t));
                (st.session_id.clone(), tasks)
            };
            for t in tasks {
                t.abort();
            }
            if session.is_some() && self.http.mode() == Mode::Streamable {
                // End the session (bounded; 405 means the server does not allow it).
                let headers = self.http.base_headers(None);
                let delete =
                    self.http
                        .send(HttpMethod::DELETE, &self.http.config.url, headers, None);
                match tokio::time::timeout(self.http.config.close_timeout, delete).await {
                    Ok(Ok(r)) => tracing::debug!("DELETE session: HTTP {}", r.status()),
                    Ok(Err(e)) => tracing::debug!("DELETE session: {e}"),
                    Err(_) => tracing::debug!("DELETE session: no answer in time"),
                }
            }
            None
        })
    }

    fn stderr_tail(&self) -> String {
        String::new()
    }

    fn describe(&self) -> String {
        self.http.config.url.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_sent_plain_or_as_the_base64_sentinel() {
        assert_eq!(
            header_safe("docs://manual/current"),
            "docs://manual/current"
        );
        assert_eq!(header_safe("naïve"), "=?base64?bmHDr3Zl?=");
        assert_eq!(header_safe(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(header_safe("line\nbreak"), "=?base64?bGluZQpicmVhaw==?=");
        // A plain value that reads as the sentinel is encoded too.
        assert!(header_safe("=?base64?abc?=").starts_with("=?base64?PT9"));
    }

    #[test]
    fn x_mcp_header_annotations_are_collected_and_checked() {
        let ok = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}},
            "n": {"type": "integer"}
        }});
        let headers = param_headers(&ok).unwrap();
        assert_eq!(headers.len(), 2);
        assert!(headers.contains(&ParamHeader {
            path: vec!["region".into()],
            header: "Region".into()
        }));
        assert!(headers.contains(&ParamHeader {
            path: vec!["opts".into(), "dry".into()],
            header: "Dry-Run".into()
        }));
        for bad in [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Header"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}}}),
        ] {
            assert!(param_headers(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reconnect_delays_follow_retry_or_a_capped_doubling() {
        let r = Reconnect::default();
        assert_eq!(
            r.delay(0, Some(Duration::from_millis(500))),
            Duration::from_millis(500)
        );
        assert_eq!(r.delay(0, None), Duration::from_millis(500));
        assert_eq!(r.delay(2, None), Duration::from_millis(2000));
        assert_eq!(r.delay(10, None), r.max);
        assert_eq!(
            r.delay(0, Some(Duration::from_secs(3600))),
            Reconnect::MAX_SERVER_RETRY
        );
    }
}
