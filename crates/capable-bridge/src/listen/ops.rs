//! What operators and load balancers ask of the listener, besides `/mcp`:
//!
//! | path | answer | who may ask |
//! |---|---|---|
//! | `/healthz` | `200`: the process is up and serving | anyone the `Host` rule lets through (no token: a load balancer probes it) |
//! | `/readyz` | `200` when no server the bridge needs is down, else `503` naming each with its latest state (JSON either way) | the same |
//! | `/metrics` | every metric, Prometheus text format (`metrics/`) | on the listener, whoever may call `/mcp` (`Host`, `Origin`, the token or an access token); with `--metrics ADDR`, on that port instead, `Host` and `Origin` checked, no token |
//!
//! A server not started yet is not down (it starts at a host's first word), nor is
//! one on its way up; one restarting, refused, given up or failed is. Servers left
//! out by `--only` or `disabled` are not needed.
//!
//! A scrape reads atomics and writes text: it takes no lock a request waits for. One
//! scrape is written at a time; another that comes meanwhile is told `429` (try
//! later), so a scraper that hammers `/metrics` costs at most one core's share.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::sync::Semaphore;

use super::gate::Gate;
use super::identity::{self, Identity};
use crate::audit::Audit;
use crate::metrics::{Exposition, Metrics, Refusal};

/// The operators' side of one listener.
pub struct Ops {
    metrics: Arc<Metrics>,
    exposition: Exposition,
    /// One scrape at a time.
    scraping: Semaphore,
}

impl Ops {
    /// The operators' side of the bridge whose counts are `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Ops {
        Ops {
            exposition: Exposition::new(metrics.clone()),
            metrics,
            scraping: Semaphore::new(1),
        }
    }

    /// The metrics as text, or `429` while another scrape is being written.
    fn scrape(&self) -> Response {
        let Ok(_one) = self.scraping.try_acquire() else {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, "1")],
                "another scrape is being written: try again",
            )
                .into_response();
        };
        let text = self.exposition.text();
        let kind = [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)];
        (StatusCode::OK, kind, text).into_response()
    }

    /// `/readyz`'s answer.
    fn ready(&self) -> Response {
        let down = self.metrics.down();
        let json = [(header::CONTENT_TYPE, "application/json")];
        if down.is_empty() {
            return (StatusCode::OK, json, r#"{"ready":true}"#).into_response();
        }
        let down: Vec<_> = down
            .iter()
            .map(|(server, state)| serde_json::json!({"server": server, "state": state}))
            .collect();
        let body = serde_json::json!({"ready": false, "down": down});
        (StatusCode::SERVICE_UNAVAILABLE, json, body.to_string()).into_response()
    }
}

/// What a request to the operators' paths must pass.
#[derive(Clone)]
pub struct Checks {
    /// The listener's gate, or the metrics port's.
    pub gate: Gate,
    /// Whether `/metrics` is served here.
    pub metrics: bool,
    /// The listener's callers, when `/metrics` wants an access token.
    pub identity: Option<Arc<Identity>>,
    pub audit: Arc<Audit>,
}

/// `/healthz`, `/readyz` and (when `checks.metrics`) `/metrics`, added to `router`.
pub fn routes<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    ops: &Arc<Ops>,
    checks: Checks,
) -> Router<S> {
    let probe = |ready: bool| {
        let (ops, gate) = (ops.clone(), checks.gate.clone());
        move |headers: HeaderMap| async move {
            if let Err(refused) = gate.check_host(&headers) {
                ops.metrics.refusal(Refusal::Host);
                return refused.into_response();
            }
            match ready {
                true => ops.ready(),
                false => (StatusCode::OK, "ok").into_response(),
            }
        }
    };
    let mut router = router
        .route("/healthz", get(probe(false)))
        .route("/readyz", get(probe(true)));
    if checks.metrics {
        let ops = ops.clone();
        let scrape = move |headers: HeaderMap| {
            let (ops, checks) = (ops.clone(), checks.clone());
            async move { scrape(&ops, &checks, &headers).await }
        };
        router = router.route("/metrics", get(scrape));
    }
    router
}

/// `/metrics`, past the checks.
async fn scrape(ops: &Ops, checks: &Checks, headers: &HeaderMap) -> Response {
    if let Err((status, words)) = checks.gate.check(&Method::GET, headers) {
        ops.metrics.refusal(refusal_of(status));
        return (status, words).into_response();
    }
    if let Some(identity) = &checks.identity {
        if let Err(refused) = identity::caller(identity, headers, &checks.audit).await {
            ops.metrics.refusal(Refusal::AccessToken);
            return refused;
        }
    }
    ops.scrape()
}

/// The refusal a gate's status stands for.
pub fn refusal_of(status: StatusCode) -> Refusal {
    match status {
        StatusCode::MISDIRECTED_REQUEST => Refusal::Host,
        StatusCode::FORBIDDEN => Refusal::Origin,
        StatusCode::UNAUTHORIZED => Refusal::Token,
        _ => Refusal::MediaType,
    }
}

/// The metrics port of `--metrics ADDR`: bound now (so a port taken stops the start),
/// served by [`serve_port`].
pub struct Port {
    pub socket: tokio::net::TcpListener,
    pub router: Router,
}

impl Port {
    /// The port `args.metrics` names, bound; none without it. An address that is not
    /// loopback needs `args.allow_remote`.
    pub async fn of(
        args: &crate::ListenConfig,
        ops: &Arc<Ops>,
        audit: &Arc<Audit>,
    ) -> Result<Option<Port>, crate::BridgeError> {
        match args.metrics {
            Some(at) if !at.ip().is_loopback() && !args.allow_remote => {
                Err(crate::BridgeError::Config(format!(
                    "--metrics {at} is not a loopback address: pass --allow-remote to serve \
                     the metrics (which need no token there) to other machines"
                )))
            }
            Some(at) => Ok(Some(Port::bind(at, ops, audit).await?)),
            None => Ok(None),
        }
    }

    /// Binds `addr` and makes its routes: every path through the `Host` rule of a
    /// loopback address (its own port) and the `Origin` rule; no token.
    pub async fn bind(
        addr: SocketAddr,
        ops: &Arc<Ops>,
        audit: &Arc<Audit>,
    ) -> Result<Port, crate::BridgeError> {
        let socket = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|error| crate::BridgeError::Bind { addr, error })?;
        let bound = socket
            .local_addr()
            .map_err(|error| crate::BridgeError::Bind { addr, error })?;
        let gate = Gate {
            loopback_port: addr.ip().is_loopback().then_some(bound.port()),
            token: None,
            origins: Vec::new(),
            public_host: None,
        };
        let checks = Checks {
            gate,
            metrics: true,
            identity: None,
            audit: audit.clone(),
        };
        let router = routes(Router::new(), ops, checks);
        let url = match bound {
            SocketAddr::V6(a) => format!("http://[{}]:{}/metrics", a.ip(), a.port()),
            SocketAddr::V4(a) => format!("http://{a}/metrics"),
        };
        audit.record("metrics", serde_json::json!({"url": url}));
        Ok(Port { socket, router })
    }
}

/// Serves `port`'s routes (16 connections at most, 10 s for headers), for ever; with
/// no port, waits for ever.
pub async fn serve(port: Option<Port>) {
    match port {
        Some(port) => {
            let bounds = super::connections::Bounds {
                max_connections: 16,
                header_timeout: std::time::Duration::from_secs(10),
            };
            super::connections::serve(port.socket, port.router, bounds).await;
        }
        None => std::future::pending().await,
    }
}
