//! What a bridge serves and how: [`BridgeConfig`], the server or servers behind
//! ([`Upstream`], [`Connector`]) and, for Streamable HTTP, [`ListenConfig`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use capable::config::ConfigFile;
use capable::host::{OAuthProvider, PinStore};
use capable::internal::secrets::Secrets;
use capable::{ClientOptions, Session};
use futures_util::future::BoxFuture;

use crate::{Policy, Reload, Unavailable};

/// Connects the one server behind with the client options the bridge made for a host
/// (its declaration, version and name in them): at the host's first word, and again
/// after every crash the restart rule retries. The embedding application decides what
/// the server is (a command, a URL with its credentials).
#[derive(Clone)]
pub struct Connector(
    Arc<dyn Fn(ClientOptions) -> BoxFuture<'static, Result<Session, Unavailable>> + Send + Sync>,
);

impl Connector {
    /// A connector from a function (see [`capable::connect`] and its siblings).
    pub fn new(
        connect: impl Fn(ClientOptions) -> BoxFuture<'static, Result<Session, Unavailable>>
            + Send
            + Sync
            + 'static,
    ) -> Connector {
        Connector(Arc::new(connect))
    }

    /// Connects with `options`.
    pub fn connect(
        &self,
        options: ClientOptions,
    ) -> BoxFuture<'static, Result<Session, Unavailable>> {
        (self.0)(options)
    }
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector")
    }
}

/// The server or servers behind the bridge.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Upstream {
    /// One server, `name` in the audit.
    One {
        /// Its name in the audit (a config name, a URL without credentials, a program).
        name: String,
        /// How it is connected.
        connect: Connector,
    },
    /// The servers of a config, as one (tools, prompts and resources of each under its
    /// name).
    Many {
        /// The config.
        config: ConfigFile,
        /// The servers of it to serve (none: all).
        only: Vec<String>,
    },
}

/// Says what the embedding application would have its user do about an error of the
/// client library (`capable auth login …`), added to the host's error after its words.
pub type Hints = Arc<dyn Fn(&capable::Error) -> Option<String> + Send + Sync>;

/// What a bridge serves and how.
#[derive(Clone)]
#[non_exhaustive]
pub struct BridgeConfig {
    /// The server or servers behind.
    pub upstream: Upstream,
    /// The client options of every server behind (timeouts, limits, tap, gating
    /// policy). The bridge puts each host's declaration, version and name in its copy;
    /// with [`ProtocolChoice::Auto`](capable::ProtocolChoice::Auto) the host's version
    /// is proposed first. `max_message_size` bounds the host's messages too.
    pub client: ClientOptions,
    /// How servers of many over HTTP are authorized.
    pub oauth: Option<OAuthProvider>,
    /// The most connecting a server of many may take.
    pub connect_timeout: Duration,
    /// Notifications of no protocol method that pass to the host: a method, or a
    /// prefix ending in `*` (`x/*`). None by default.
    pub pass_notifications: Vec<String>,
    /// Every audit line goes to stderr; with a path, appended there too.
    pub audit_log: Option<PathBuf>,
    /// Where the tokens of the callers' own logins (`user` credentials) are kept
    /// across restarts, each sealed with the key ring's current key (AES-256-GCM-SIV);
    /// without it, in memory only.
    pub user_tokens: Option<(PathBuf, capable::internal::seal::KeyRing)>,
    /// Secrets cut out of every audit line and every error a host gets (`***`).
    pub secrets: Secrets,
    /// Hints added to the errors hosts get (none by default).
    pub hints: Option<Hints>,
    /// What every list, request and result passes, for one server and many alike
    /// (none by default: everything as the servers have it).
    pub policy: Option<Arc<dyn Policy>>,
    /// Many servers' tools and prompts judged against pinned definitions as their
    /// lists arrive (a changed one withheld, with evidence in the audit). None by
    /// default.
    pub pins: Option<PinStore>,
    /// Many servers: what joins a server's name and a tool's or prompt's in the merged
    /// lists (`__` by default: `docs__search`). 1 to 8 characters of `[a-zA-Z0-9_-]`,
    /// so every merged name keeps to `^[a-zA-Z0-9_-]{1,64}$`.
    pub name_separator: String,
    /// Many servers: the config read anew while the bridge runs (its file watched,
    /// or when told), applied to every host's servers and to the policy in force
    /// (see [`Reload`]). None by default.
    pub reload: Option<Reload>,
    /// Where every request's span goes ([`Traces::from_env`](crate::Traces::from_env)):
    /// none by default (no spans, and no cost but one branch).
    pub traces: Option<crate::Traces>,
    /// The store the gateway's replicas share ([`crate::store`]): a 2026-07-28 round's
    /// `requestState` is spent there once, whichever replica it reaches. None by
    /// default (spent in this process alone).
    pub store: Option<Arc<dyn crate::store::Store>>,
    /// What holds while the store cannot be reached, for what the listener keeps there
    /// (a sealed session's subscriptions): as without a store (`Open`, the default), or
    /// refused.
    pub store_when_down: capable::config::WhenDown,
}

impl BridgeConfig {
    /// A bridge to `upstream`, every other setting at its default.
    pub fn new(upstream: Upstream) -> BridgeConfig {
        BridgeConfig {
            upstream,
            client: ClientOptions::default(),
            oauth: None,
            connect_timeout: Duration::from_secs(30),
            pass_notifications: Vec::new(),
            audit_log: None,
            user_tokens: None,
            secrets: Secrets::default(),
            hints: None,
            policy: None,
            pins: None,
            name_separator: "__".into(),
            reload: None,
            traces: None,
            store: None,
            store_when_down: capable::config::WhenDown::Open,
        }
    }
}

impl std::fmt::Debug for BridgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeConfig")
            .field("upstream", &self.upstream)
            .field("connect_timeout", &self.connect_timeout)
            .field("pass_notifications", &self.pass_notifications)
            .field("audit_log", &self.audit_log)
            .field("policy", &self.policy.is_some())
            .field("pins", &self.pins.as_ref().map(PinStore::path))
            .field("reload", &self.reload)
            .field("traces", &self.traces.is_some())
            .finish_non_exhaustive()
    }
}

/// The bridge as a Streamable HTTP server for its hosts (both eras at `/mcp`).
#[derive(Clone)]
#[non_exhaustive]
pub struct ListenConfig {
    /// Where to listen. Loopback unless [`allow_remote`](Self::allow_remote).
    pub addr: SocketAddr,
    /// The bearer token every request must carry.
    pub token: Option<String>,
    /// Accept an address that is not loopback (a token is then required).
    pub allow_remote: bool,
    /// Web origins (`scheme://host[:port]`) whose pages may call the bridge, besides
    /// the listener's own.
    pub allow_origins: Vec<String>,
    /// The most sessions at once (legacy sessions, and as many 2026-07-28
    /// declarations); past it the least recently used idle one is ended, else `503`.
    pub max_sessions: usize,
    /// A session with nothing in flight for this long is ended, its server shut down.
    pub session_idle: Duration,
    /// The most connections open at once.
    pub max_connections: usize,
    /// How long a request's headers may take to arrive.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive (`408` past it).
    pub body_timeout: Duration,
    /// The most bytes of request bodies read at once, all connections together (one
    /// that does not fit: `503`).
    pub max_body_total: usize,
    /// The most bytes a host may leave unread on one stream behind a message.
    pub stream_buffer: usize,
    /// The most messages of a 2025-03-26 batch (past it the batch is refused, `400`).
    pub max_batch: usize,
    /// The listener as an OAuth protected resource: every request carries an access
    /// token of this issuer, for this resource (instead of [`token`](Self::token)).
    pub auth: Option<ListenAuth>,
    /// Serve `/metrics` on this address instead of the listener's (loopback unless
    /// [`allow_remote`](Self::allow_remote); no token there: `Host` and `Origin` are
    /// checked as on the listener). `/healthz` and `/readyz` are served there too.
    pub metrics: Option<SocketAddr>,
    /// The key ring the replicas share: legacy sessions are sealed into their
    /// `Mcp-Session-Id`, so any replica holding the ring continues them (`docs/bridge.md`,
    /// "Scaling the gateway"). Without it, sessions live in this process only.
    pub seal: Option<capable::internal::seal::KeyRing>,
}

/// The listener as an OAuth 2.1 protected resource (the MCP authorization
/// specification, server side): tokens of one issuer, for one resource.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ListenAuth {
    /// The issuer identifier; its metadata (RFC 8414 / OpenID Connect) is read at
    /// start, and its keys (`jwks_uri`) verify the tokens.
    pub issuer: String,
    /// The gateway's own identifier as its callers reach it (`https://…/mcp`): the
    /// audience its tokens must name, and the `resource` of its metadata.
    pub public_url: String,
    /// The scopes every request needs (`403 insufficient_scope` without them).
    pub scopes: Vec<String>,
    /// How long a fetch from the issuer (metadata, keys) may take.
    pub fetch_timeout: Duration,
    /// How many verified tokens are remembered (until each expires).
    pub max_tokens: usize,
    /// The gateway's own client at the issuer, for introspecting opaque tokens
    /// (RFC 7662). Without it, only JWT access tokens are taken.
    pub introspection: Option<IntrospectionClient>,
    /// The claim that names a caller's groups or roles, for a policy's rules (dotted
    /// for a nested claim: `roles`, `realm_access.roles`); read once per token, when
    /// it is verified. Default `groups`.
    pub groups_claim: String,
}

/// The gateway's own client registration at its issuer, with which it asks what an
/// opaque token means (HTTP Basic at the issuer's `introspection_endpoint`). The
/// secret never shows in a `Debug` output.
#[derive(Clone)]
#[non_exhaustive]
pub struct IntrospectionClient {
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: String,
}

impl IntrospectionClient {
    /// The client `client_id` with `client_secret`.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        IntrospectionClient {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        }
    }
}

impl std::fmt::Debug for IntrospectionClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &"[redacted]")
            .finish()
    }
}

impl ListenAuth {
    /// Tokens of `issuer` for `public_url`; no scope required, 5 s per fetch, 10,000
    /// tokens remembered, groups in the claim `groups`.
    pub fn new(issuer: impl Into<String>, public_url: impl Into<String>) -> ListenAuth {
        ListenAuth {
            issuer: issuer.into(),
            public_url: public_url.into(),
            scopes: Vec::new(),
            fetch_timeout: Duration::from_secs(5),
            max_tokens: 10_000,
            introspection: None,
            groups_claim: "groups".into(),
        }
    }
}

impl ListenConfig {
    /// Listening on `addr`, every bound at its default (64 sessions idle for at most
    /// 30 min, 512 connections, 10 s for headers, 30 s for a body, 256 MiB of bodies
    /// at once, 8 MiB unread per stream, 256 messages per batch).
    pub fn new(addr: SocketAddr) -> ListenConfig {
        ListenConfig {
            addr,
            token: None,
            allow_remote: false,
            allow_origins: Vec::new(),
            max_sessions: 64,
            session_idle: Duration::from_secs(30 * 60),
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_body_total: 256 << 20,
            stream_buffer: 8 << 20,
            max_batch: 256,
            auth: None,
            metrics: None,
            seal: None,
        }
    }
}

impl std::fmt::Debug for ListenConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenConfig")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("allow_remote", &self.allow_remote)
            .field("allow_origins", &self.allow_origins)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle", &self.session_idle)
            .field("max_connections", &self.max_connections)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_body_total", &self.max_body_total)
            .field("stream_buffer", &self.stream_buffer)
            .field("max_batch", &self.max_batch)
            .field("auth", &self.auth)
            .field("metrics", &self.metrics)
            .field("seal", &self.seal.as_ref().map(|r| r.current().id()))
            .finish()
    }
}
