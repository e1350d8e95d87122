//! Streamable HTTP in both eras, and the 2024-11-05 HTTP+SSE transport it falls back
//! to: the bytes only. Every decision — which headers a message carries, what a 404 or
//! a broken stream means, when to retry, whether an endpoint may be trusted — is the
//! core's [`HttpSession`]; this transport performs the
//! requests it is told to and feeds back what came.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | configuration, the sink (each message to the policy), the source, closing |
//! | `client.rs` | the HTTP client: hyper's pool driven directly, a proxy's URLs by reqwest |
//! | `exchange.rs` | one HTTP exchange: the request (redirects by hand), its body or stream |
//! | `header_cache.rs` | MCP's repeating headers as header values, made once |
//! | `sse.rs` | reading an event stream as MCP events |
//! | `sse_decoder.rs` | the event-stream format, decoded in one pass, bounded |
//!
//! The host's own headers (`--header`, a config's `headers`) are marked sensitive, so
//! their values never show in logs, and go only where the policy allows (never across
//! origins).

mod client;
mod exchange;
mod header_cache;
pub mod sse;
pub mod sse_decoder;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable_core::internal::http::HttpSession;
pub use capable_core::internal::http::Reconnect;
use capable_core::{Negotiated, Outbox, Outgoing};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
pub use reqwest::Url;
use tokio::sync::mpsc;

use crate::auth::OAuthClient;

use super::shortcut::{Bypass, Inlet, Sealed, Work};
use super::{BoxFuture, Inbound, MessageSink, MessageSource, Peer, Transport, TransportError};
use exchange::Exchanges;

/// How an HTTP server is reached.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The MCP endpoint.
    pub url: Url,
    /// Extra headers for every request (`Authorization`, API keys, …). Their values
    /// are never logged, and never sent to another origin.
    pub headers: Vec<(String, String)>,
    /// How broken streams are retried.
    pub reconnect: Reconnect,
    /// How long closing waits for the session's DELETE.
    pub close_timeout: Duration,
    /// OAuth for this server: its token on every request to the server's origin, and
    /// a 401 or 403 `insufficient_scope` answered by authorizing (see
    /// [`crate::auth`]). Without it, those refusals are [`Error::Http`] failures.
    ///
    /// [`Error::Http`]: crate::Error::Http
    pub oauth: Option<Arc<OAuthClient>>,
}

impl HttpConfig {
    /// A configuration for `url` with default limits.
    pub fn new(url: Url) -> Self {
        HttpConfig {
            url,
            headers: Vec::new(),
            reconnect: Reconnect::default(),
            close_timeout: Duration::from_secs(2),
            oauth: None,
        }
    }

    /// Whether [`headers`](HttpConfig::headers) carry an `Authorization` of their own:
    /// a host that passes one manages it itself, and OAuth stays off.
    pub fn has_own_authorization(&self) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
    }
}

pub(super) type Received = Result<Inbound, TransportError>;

/// What every exchange of one connection shares.
pub(super) struct Http {
    client: client::Client,
    config: HttpConfig,
    /// The host's headers, ready to send (values marked sensitive).
    user_headers: HeaderMap,
    /// The largest message or body read.
    limit: usize,
    policy: Mutex<HttpSession>,
    /// Boxed: the channel's first block of slots is then a few hundred bytes, not
    /// kilobytes, in every idle session.
    inbound: mpsc::Sender<Box<Received>>,
    /// How what the exchanges receive reaches the session (see [`Http::hand_at_once`]).
    handing: Mutex<Handing>,
    exchanges: Exchanges,
    headers: header_cache::HeaderCache,
    /// The token generation each exchange's last request carried.
    sent: Mutex<std::collections::HashMap<capable_core::internal::http::ExchangeId, u64>>,
    /// The host's header values and the URL's credentials, cut out of what a server
    /// says back in an error.
    secrets: capable_core::internal::secrets::Secrets,
}

/// How what the exchanges receive reaches the session.
enum Handing {
    /// Through the channel that [`HttpSource::recv`] reads (during the handshake,
    /// which reads it itself).
    Queue,
    /// Straight in through the session's inlet, from the exchange's task: no hop to
    /// the session's reader task.
    Inlet(Arc<dyn Inlet>),
    /// The session has ended (or its reader is gone): nothing more is wanted.
    Ended,
}

impl Http {
    /// Hands `received` to the session, waiting only when the channel is full.
    async fn hand(&self, received: Received) {
        if let Some(queued) = self.hand_at_once(received) {
            self.queue(queued).await;
        }
    }

    /// Hands `received` to the session at once: straight in, once the session gave
    /// its inlet ([`HttpSource::attach`]), else into the channel. Decided under
    /// the lock that the switch takes, so one exchange's messages keep their order.
    /// `Some` when the channel is full: the caller then waits to [`Http::queue`] it.
    /// (Without a future of its own: an exchange hands over every answer this way.)
    fn hand_at_once(&self, received: Received) -> Option<Box<Received>> {
        let mut handing = self.handing();
        match &*handing {
            Handing::Inlet(inlet) => {
                if !inlet.deliver(received) {
                    *handing = Handing::Ended;
                }
                None
            }
            Handing::Ended => None,
            Handing::Queue => match self.inbound.try_send(Box::new(received)) {
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => None,
                Err(mpsc::error::TrySendError::Full(queued)) => Some(queued),
            },
        }
    }

    /// Waits for room in the full channel (boxed: rare, and every exchange's task
    /// would otherwise hold room for it).
    async fn queue(&self, queued: Box<Received>) {
        let _ = Box::pin(self.inbound.send(queued)).await;
    }

    fn handing(&self) -> std::sync::MutexGuard<'_, Handing> {
        self.handing.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn policy(&self) -> std::sync::MutexGuard<'_, HttpSession> {
        self.policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sent_lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<capable_core::internal::http::ExchangeId, u64>,
    > {
        self.sent.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An HTTP connection to one MCP endpoint, ready to be split.
pub struct HttpTransport {
    http: Arc<Http>,
    inbound: mpsc::Receiver<Box<Received>>,
}

impl HttpTransport {
    /// Prepares a connection (one HTTP client with keep-alive for its whole life) that
    /// reads no message or body over `max_message_size` bytes.
    pub fn new(
        config: HttpConfig,
        max_message_size: usize,
    ) -> Result<HttpTransport, TransportError> {
        let client = client::Client::new()?;
        let mut user_headers = HeaderMap::new();
        for (name, value) in &config.headers {
            // A header that cannot be sent is refused here, never dropped on the way:
            // a request without its credential is worse than no request.
            capable_core::internal::http::redact::check_header(name, value)
                .map_err(TransportError::Broken)?;
            let (Ok(n), Ok(mut v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                return Err(TransportError::Broken(format!(
                    "header {name} cannot be sent as given"
                )));
            };
            v.set_sensitive(true);
            user_headers.append(n, v);
        }
        let mut policy = HttpSession::new(config.url.clone(), config.reconnect, max_message_size);
        if config.oauth.is_some() {
            policy = policy.with_authorization();
        }
        let (tx, rx) = mpsc::channel(1024);
        Ok(HttpTransport {
            http: Arc::new(Http {
                client,
                secrets: {
                    let mut s = capable_core::internal::secrets::Secrets::default();
                    s.add_url(&config.url);
                    for (_, value) in &config.headers {
                        s.add_header_value(value);
                    }
                    s
                },
                config,
                user_headers,
                limit: max_message_size,
                policy: Mutex::new(policy),
                inbound: tx,
                handing: Mutex::new(Handing::Queue),
                exchanges: Exchanges::default(),
                headers: Default::default(),
                sent: Mutex::default(),
            }),
            inbound: rx,
        })
    }
}

impl HttpTransport {
    /// The session is held by other clients too (gateway replicas continuing one
    /// session): its standalone stream opens only while [`Peer::standalone`] asks for
    /// it (see the core's `HttpSession::standalone_on_demand`). Before anything is sent.
    pub(crate) fn standalone_on_demand(&self) {
        self.http.policy().standalone_on_demand();
    }

    /// Takes up legacy session `session_id` (see [`crate::Resumption`]) before the
    /// transport is split: the policy resumed, the standalone stream opened.
    pub(crate) async fn resume(
        &self,
        session_id: &str,
        negotiated: &Negotiated,
        initialize: &Outbox,
    ) -> Result<(), TransportError> {
        let actions = self
            .http
            .policy()
            .resume_session(session_id, negotiated, initialize)
            .map_err(|e| TransportError::Broken(e.to_string()))?;
        exchange::execute(&self.http, actions).await
    }
}

/// The TLS configuration of every connection: what reqwest builds by default (the
/// platform's verifier, TLS 1.2 and 1.3, ALPN `h2` then `http/1.1`), built once per
/// process. Built per connection it held about 100 KiB of each session's memory.
fn tls_config() -> Result<rustls::ClientConfig, TransportError> {
    static TLS: std::sync::OnceLock<Result<rustls::ClientConfig, String>> =
        std::sync::OnceLock::new();
    let built = TLS.get_or_init(|| {
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
        let verifier =
            rustls_platform_verifier::Verifier::new(provider.clone()).map_err(|e| e.to_string())?;
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(tls)
    });
    built
        .clone()
        .map_err(|e| TransportError::Broken(format!("building the TLS configuration: {e}")))
}

impl Transport for HttpTransport {
    type Sink = HttpSink;
    type Source = HttpSource;

    fn split(self) -> (HttpSink, HttpSource, Box<dyn Peer>) {
        (
            HttpSink {
                http: self.http.clone(),
            },
            HttpSource {
                rx: self.inbound,
                http: self.http.clone(),
            },
            Box::new(HttpPeer { http: self.http }),
        )
    }
}

/// Hands each message, with what the connection noted of it, to the policy and
/// performs what it says: one POST per request (concurrently), notifications and
/// responses in order.
pub struct HttpSink {
    http: Arc<Http>,
}

impl MessageSink for HttpSink {
    async fn send(&mut self, batch: &Outbox) -> Result<(), TransportError> {
        for (what, line) in batch.messages() {
            let actions = self.http.policy().send(what, line);
            exchange::execute(&self.http, actions).await?;
        }
        Ok(())
    }

    /// A request's POST started from its caller's task, without the hop to the writer
    /// task; anything but a single request is left to the writer.
    fn bypass(&self, _: Sealed) -> Option<Box<dyn Bypass>> {
        Some(Box::new(HttpBypass {
            http: self.http.clone(),
            started: None,
        }))
    }

    fn negotiated(&mut self, negotiated: &Negotiated) {
        self.http.policy().negotiated(negotiated);
    }

    fn know_tools(&mut self, tools: &[capable_core::model::Tool]) -> Vec<capable_core::Notice> {
        let tools: Vec<serde_json::Value> = tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        self.http.policy().know_tools(&tools)
    }
}

/// The bypass for a request, from its caller: the policy makes its POST, and the
/// exchange is handed back ([`Bypass::take_work`]) for the caller to carry out in its
/// own task while it waits for its answer: no task per request, no hop to the writer
/// task or back. A caller that does not wait for the answer itself has the exchange
/// run as a task ([`Bypass::detach`]). Only a single request is taken (its POST is
/// independent of every other message); anything else — a notification, a response,
/// several messages — is refused with `Ok(0)`, untouched, and the writer sends it in
/// order as usual.
struct HttpBypass {
    http: Arc<Http>,
    /// The exchange the last write started, until its caller takes it or lets go.
    started: Option<(
        capable_core::internal::http::ExchangeId,
        capable_core::internal::http::Request,
    )>,
}

impl Bypass for HttpBypass {
    fn write(&mut self, batch: &Outbox) -> std::io::Result<usize> {
        if batch.count() != 1 {
            return Ok(0);
        }
        let Some((what @ Outgoing::Request(_), line)) = batch.messages().next() else {
            return Ok(0);
        };
        let Some(actions) = self.http.policy().send_request(what, line) else {
            return Ok(0);
        };
        self.detach();
        for action in actions {
            match action {
                capable_core::internal::http::Action::Send {
                    exchange,
                    request,
                    blocking: false,
                } if self.started.is_none() => self.started = Some((exchange, request)),
                // Not what a request asks for; carried out as the writer would, a
                // failure that ends the connection reported like an exchange's.
                other => {
                    let http = self.http.clone();
                    tokio::spawn(async move {
                        if let Err(e) = exchange::execute(&http, vec![other]).await {
                            http.hand(Err(e)).await;
                        }
                    });
                }
            }
        }
        Ok(batch.len())
    }

    fn take_work(&mut self) -> Option<Work> {
        let (ex, request) = self.started.take()?;
        Some(Box::pin(exchange::carried(self.http.clone(), ex, request)))
    }

    fn detach(&mut self) {
        if let Some((ex, request)) = self.started.take() {
            self.http.exchanges.spawn(&self.http, ex, request);
        }
    }

    /// Every request is a POST of its own: requests in flight together are each
    /// taken here, from their callers.
    fn coalesces(&self) -> bool {
        false
    }
}

/// Messages from response bodies and event streams, in arrival order: through the
/// channel during the handshake, then straight from each exchange's task.
pub struct HttpSource {
    rx: mpsc::Receiver<Box<Received>>,
    http: Arc<Http>,
}

impl MessageSource for HttpSource {
    async fn recv(&mut self) -> Result<Option<Inbound>, TransportError> {
        self.rx.recv().await.map(|r| *r).transpose()
    }

    fn attach(&mut self, inlet: Arc<dyn Inlet>, _: Sealed) {
        let mut handing = self.http.handing();
        // What was queued before, first and in order, under the lock every exchange
        // takes to hand over: nothing overtakes it.
        while let Ok(queued) = self.rx.try_recv() {
            if !inlet.deliver(*queued) {
                *handing = Handing::Ended;
                return;
            }
        }
        *handing = Handing::Inlet(inlet);
    }
}

impl Drop for HttpSource {
    /// The session's reader is gone: so is its way in (and with it the session's
    /// notification stream).
    fn drop(&mut self) {
        *self.http.handing() = Handing::Ended;
    }
}

struct HttpPeer {
    http: Arc<Http>,
}

impl Peer for HttpPeer {
    fn exit_status(&self, _grace: Duration) -> BoxFuture<'_, Option<std::process::ExitStatus>> {
        Box::pin(async { None })
    }

    fn shutdown(&self) -> BoxFuture<'_, Option<std::process::ExitStatus>> {
        Box::pin(async move {
            let delete = self.http.policy().close();
            self.http.exchanges.abort_all();
            if let Some((ex, request)) = delete {
                // End the session (bounded; 405 means the server does not allow it).
                let timeout = self.http.config.close_timeout;
                let run = exchange::run(self.http.clone(), ex, request);
                if tokio::time::timeout(timeout, run).await.is_err() {
                    tracing::debug!("DELETE session: no answer in time");
                }
            }
            None
        })
    }

    fn stderr_tail(&self) -> String {
        String::new()
    }

    fn session_id(&self) -> Option<String> {
        self.http.policy().session_id().map(str::to_owned)
    }

    fn standalone(&self, open: bool) {
        let actions = self.http.policy().want_standalone(open);
        if actions.is_empty() {
            return;
        }
        // Opening and aborting are carried out at once (neither waits).
        let http = self.http.clone();
        tokio::spawn(async move {
            let _ = exchange::execute(&http, actions).await;
        });
    }
}

#[cfg(test)]
mod tls_tests {
    #[test]
    fn every_connection_gets_the_tls_configuration_reqwest_would_build() {
        let tls = super::tls_config().expect("a TLS configuration");
        assert_eq!(tls.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
        assert!(tls.enable_sni);
        // Built once: a second connection shares the verifier rather than a copy.
        let again = super::tls_config().expect("a TLS configuration");
        assert!(std::sync::Arc::ptr_eq(
            &tls.crypto_provider().clone(),
            &again.crypto_provider().clone()
        ));
    }
}
