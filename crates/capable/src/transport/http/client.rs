//! The HTTP client of one connection: hyper's pooled client, driven directly.
//!
//! Everything a general-purpose client does per request on top of hyper — parsing
//! the URL into a URI again, a redirect layer that parses it once more (capable
//! follows redirects by hand, as the policy rewrites them), a retry layer, the proxy
//! rules consulted for every request — costs more than the MCP work of a small
//! request does. Here the request goes to hyper's connection pool as it is:
//!
//! - the endpoint's URI is parsed once and shared; a request to another URL (a
//!   redirect, the legacy transport's message endpoint) is parsed when its URL
//!   changes;
//! - the proxy rules (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, read once
//!   per process) are asked once per URL; a URL that goes through a proxy is sent by
//!   a `reqwest` client built for it, which speaks to proxies (tunnels, credentials),
//!   on its first use;
//! - answers compressed with gzip or deflate are inflated as they are read (both are
//!   offered), so the size limit holds for what the answer inflates to;
//! - TLS is the process's one configuration (see `tls_config`), HTTP/2 where the
//!   server offers it by ALPN, `TCP_NODELAY`, idle connections kept 90 s.

use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::HeaderMap;
use reqwest::{Method, Url};
use tower_http::decompression::{Decompression, DecompressionBody};
use tower_service::Service;

use crate::transport::TransportError;

/// An answer's body, from whichever client sent the request.
pub(super) type AnswerBody = Either<DecompressionBody<Incoming>, reqwest::Body>;

/// An answer's head and body.
pub(super) type Answer = http::Response<AnswerBody>;

type Direct =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One connection's client (see the module's documentation).
pub(super) struct Client {
    direct: Direct,
    /// Built on the first request that goes through a proxy.
    proxied: OnceLock<Result<reqwest::Client, String>>,
    /// The last URL sent to, its URI and whether it goes through a proxy.
    last: Mutex<Option<Target>>,
}

struct Target {
    url: Url,
    uri: http::Uri,
    proxied: bool,
}

impl Client {
    pub(super) fn new() -> Result<Client, TransportError> {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        // The TLS connector wraps it: it must take `https` URIs too.
        http.enforce_http(false);
        // The connector offers `h2` and `http/1.1` by ALPN itself.
        let mut config = super::tls_config()?;
        config.alpn_protocols.clear();
        let tls = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let direct = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_timer(TokioTimer::new())
            .build(tls);
        Ok(Client {
            direct,
            proxied: OnceLock::new(),
            last: Mutex::new(None),
        })
    }

    /// Sends `method url` with `headers` and `body`; the answer once its head came.
    /// `context` names the request in an error (its URL redacted by the caller).
    pub(super) async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Bytes>,
        context: impl FnOnce() -> String,
    ) -> Result<Answer, TransportError> {
        let Some(uri) = self.direct_uri(url) else {
            return self.send_proxied(method, url, headers, body, context).await;
        };
        let mut request = http::Request::new(Full::new(body.unwrap_or_default()));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let mut send = Decompression::new(Sender(&self.direct));
        match send.call(request).await {
            Ok(answer) => Ok(answer.map(Either::Left)),
            Err(e) => Err(TransportError::http(context(), e)),
        }
    }

    /// The URI to send to `url` with, or `None` when a proxy is in the way.
    fn direct_uri(&self, url: &Url) -> Option<http::Uri> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(target) = last.as_ref().filter(|t| t.url == *url) {
            return (!target.proxied).then(|| target.uri.clone());
        }
        // A URL the `url` crate accepts that `http` does not (rare: some non-ASCII
        // forms) goes through the general client, which knows both.
        let uri = http::Uri::try_from(url.as_str()).ok()?;
        let proxied = proxies().intercept(&uri).is_some();
        *last = Some(Target {
            url: url.clone(),
            uri: uri.clone(),
            proxied,
        });
        (!proxied).then_some(uri)
    }

    async fn send_proxied(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Bytes>,
        context: impl FnOnce() -> String,
    ) -> Result<Answer, TransportError> {
        let client = self
            .proxied
            .get_or_init(|| {
                let tls = super::tls_config().map_err(|e| e.to_string())?;
                reqwest::Client::builder()
                    .tls_backend_preconfigured(tls)
                    .redirect(reqwest::redirect::Policy::none())
                    .pool_idle_timeout(Duration::from_secs(90))
                    .tcp_nodelay(true)
                    .build()
                    .map_err(|e| crate::transport::chain_of(&e))
            })
            .as_ref()
            .map_err(|e| TransportError::Broken(format!("building the HTTP client: {e}")))?;
        let mut request = client.request(method, url.clone()).headers(headers);
        if let Some(body) = body {
            request = request.body(body);
        }
        match request.send().await {
            Ok(answer) => Ok(http::Response::from(answer).map(Either::Right)),
            Err(e) => Err(TransportError::request(context(), e)),
        }
    }
}

/// The proxy rules of the environment, read once per process.
fn proxies() -> &'static Matcher {
    static PROXIES: OnceLock<Matcher> = OnceLock::new();
    PROXIES.get_or_init(Matcher::from_system)
}

/// Hands a request to hyper's pool, for the decompression layer to wrap.
struct Sender<'a>(&'a Direct);

impl Service<http::Request<Full<Bytes>>> for Sender<'_> {
    type Response = http::Response<Incoming>;
    type Error = hyper_util::client::legacy::Error;
    type Future = hyper_util::client::legacy::ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The pool takes every request; it waits for a connection in the future.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Full<Bytes>>) -> Self::Future {
        self.0.request(request)
    }
}
