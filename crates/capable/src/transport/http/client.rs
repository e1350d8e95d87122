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
//!   per process, when its first HTTP connection is made) are asked once per URL; a
//!   URL that goes through a proxy, or that carries credentials of its own
//!   (`https://user:pass@host/…`, sent as Basic authorization), is sent by a
//!   `reqwest` client built on its first use, which knows both;
//! - a request that an HTTP/2 server provably did not process — refused
//!   (`REFUSED_STREAM`), or cut off by the server's graceful shutdown of its
//!   connection (`GOAWAY` with `NO_ERROR`) — is sent again, at most twice (RFC 9113
//!   §8.7: safe even for a POST);
//! - answers compressed with gzip or deflate are inflated as they are read (both are
//!   offered), so the size limit holds for what the answer inflates to;
//! - TLS is the process's one configuration (see `tls_config`), HTTP/2 where the
//!   server offers it by ALPN, idle connections kept 90 s; the sockets as a general
//!   client sets them: `TCP_NODELAY`, keepalive probes after 15 s idle (every 15 s,
//!   3 of them), and on Linux `TCP_USER_TIMEOUT` of 30 s, so that a connection the
//!   network lost silently (a NAT that forgot it, a laptop that slept) fails rather
//!   than waits forever.

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

type Pool =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One connection's client (see the module's documentation).
pub(super) struct Client {
    pool: Pool,
    /// Built on the first request that goes through a proxy.
    proxied: OnceLock<Result<reqwest::Client, String>>,
    /// The last URL sent to, and its URI when hyper's pool sends to it.
    last: Mutex<Option<Target>>,
    /// The proxy rules asked.
    proxies: &'static Matcher,
}

struct Target {
    url: Url,
    /// `None`: the general client sends to it (see [`Client::pool_uri`]).
    uri: Option<http::Uri>,
}

/// How many times a request an HTTP/2 server did not process is sent again.
pub(super) const RESENDS: usize = 2;

/// Why a request has no answer.
pub(super) struct NoAnswer {
    pub(super) error: TransportError,
    /// The server provably did not process it (see [`not_processed`]): it may be sent
    /// again, as it stands, at most [`RESENDS`] times. A resend is made afresh by the
    /// caller, so that what must differ per request (a DPoP proof) does.
    pub(super) resendable: bool,
}

impl Client {
    pub(super) fn new() -> Result<Client, TransportError> {
        Client::with_proxies(proxies())
    }

    fn with_proxies(proxies: &'static Matcher) -> Result<Client, TransportError> {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.set_keepalive(Some(Duration::from_secs(15)));
        http.set_keepalive_interval(Some(Duration::from_secs(15)));
        http.set_keepalive_retries(Some(3));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        http.set_tcp_user_timeout(Some(Duration::from_secs(30)));
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
        let pool = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_timer(TokioTimer::new())
            .build(tls);
        Ok(Client {
            pool,
            proxied: OnceLock::new(),
            last: Mutex::new(None),
            proxies,
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
    ) -> Result<Answer, NoAnswer> {
        let Some(uri) = self.pool_uri(url) else {
            return self.send_proxied(method, url, headers, body, context).await;
        };
        let mut request = http::Request::new(Full::new(body.unwrap_or_default()));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let mut send = Decompression::new(Sender(&self.pool));
        send.call(request)
            .await
            .map(|a| a.map(Either::Left))
            .map_err(|e| NoAnswer {
                resendable: not_processed(&e),
                error: TransportError::http(context(), e),
            })
    }

    /// The URI to send to `url` with, or `None` when the general client sends to it:
    /// a proxy is in the way, or the URL carries credentials (which go as a header, not
    /// in the URI).
    fn pool_uri(&self, url: &Url) -> Option<http::Uri> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(target) = last.as_ref().filter(|t| t.url == *url) {
            return target.uri.clone();
        }
        let uri = match (url.username(), url.password()) {
            ("", None) => http::Uri::try_from(url.as_str())
                .ok()
                .filter(|uri| self.proxies.intercept(uri).is_none()),
            _ => None,
        };
        *last = Some(Target {
            url: url.clone(),
            uri: uri.clone(),
        });
        uri
    }

    async fn send_proxied(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Option<Bytes>,
        context: impl FnOnce() -> String,
    ) -> Result<Answer, NoAnswer> {
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
            .map_err(|e| NoAnswer {
                error: TransportError::Broken(format!("building the HTTP client: {e}")),
                resendable: false,
            })?;
        let mut request = client.request(method, url.clone()).headers(headers);
        if let Some(body) = body {
            request = request.body(body);
        }
        // reqwest sends again what an HTTP/2 server did not process itself.
        match request.send().await {
            Ok(answer) => Ok(http::Response::from(answer).map(Either::Right)),
            Err(e) => Err(NoAnswer {
                error: TransportError::request(context(), e),
                resendable: false,
            }),
        }
    }
}

/// Whether `e` says the server did not process the request, so that sending it again
/// is safe: an HTTP/2 stream the server refused, or one its graceful shutdown of the
/// connection left out.
fn not_processed(e: &hyper_util::client::legacy::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        if let Some(h2) = inner.downcast_ref::<h2::Error>() {
            let refused = h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM);
            let shut_down = h2.is_go_away() && h2.reason() == Some(h2::Reason::NO_ERROR);
            return h2.is_remote() && (refused || shut_down);
        }
        source = inner.source();
    }
    false
}

/// The proxy rules of the environment, read once per process.
fn proxies() -> &'static Matcher {
    static PROXIES: OnceLock<Matcher> = OnceLock::new();
    PROXIES.get_or_init(Matcher::from_system)
}

/// Hands a request to hyper's pool, for the decompression layer to wrap.
struct Sender<'a>(&'a Pool);

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The way each URL goes, under rules that send `http` through a proxy except for
    /// 127.0.0.1.
    #[test]
    fn a_url_goes_to_the_pool_unless_a_proxy_or_its_own_credentials_say_otherwise() {
        let rules = Matcher::builder()
            .http("http://127.0.0.9:3128")
            .no("127.0.0.1")
            .build();
        let client = Client::with_proxies(Box::leak(Box::new(rules))).expect("a client");
        let pool = |url: &str| client.pool_uri(&url.parse().expect("a URL"));
        let uri = pool("http://127.0.0.1:3001/mcp?x=1").expect("exempt from the proxy");
        assert_eq!(uri, "http://127.0.0.1:3001/mcp?x=1");
        // Asked twice, the same answer (the second time from what the first kept).
        assert_eq!(pool("http://127.0.0.1:3001/mcp?x=1"), Some(uri));
        assert_eq!(pool("http://mcp.example/mcp"), None, "through the proxy");
        // No rule for https.
        assert!(pool("https://mcp.example/mcp").is_some());
        // Credentials of its own: sent as a header by the general client.
        assert_eq!(pool("http://u:p@127.0.0.1:3001/mcp"), None);
        assert_eq!(pool("http://u@127.0.0.1:3001/mcp"), None);
        assert!(pool("http://127.0.0.1:3001/mcp").is_some());
    }
}
