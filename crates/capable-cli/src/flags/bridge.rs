//! `capable bridge`'s flags: how to face the host, and the listener's bounds.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{parse_duration, ServerArgs};

/// `capable bridge`: how to face the host.
#[derive(Debug, Args, Clone)]
pub struct BridgeArgs {
    /// Serve Streamable HTTP on this address (both eras) instead of stdio.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<std::net::SocketAddr>,
    /// With --listen: the bearer token every request must carry (`Authorization:
    /// Bearer TOKEN`); from the environment is better than a flag others see in `ps`.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CAPABLE_BRIDGE_TOKEN",
        hide_env_values = true
    )]
    pub listen_token: Option<String>,
    /// With --listen: accept an address that is not loopback (then give a
    /// --listen-token or --auth-issuer too).
    #[arg(long)]
    pub allow_remote: bool,
    /// With --listen: the gateway is an OAuth protected resource of this issuer (its
    /// metadata read at start, RFC 8414 / OpenID Connect): every request carries an
    /// access token it issued for --public-url (JWT, RFC 9068); clients find it
    /// through the gateway's protected resource metadata (RFC 9728).
    #[arg(
        long,
        value_name = "URL",
        requires = "public_url",
        conflicts_with = "listen_token"
    )]
    pub auth_issuer: Option<String>,
    /// With --auth-issuer: the gateway's URL as its callers reach it (e.g.
    /// `https://mcp.example.com/mcp`), the audience its tokens must name.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub public_url: Option<String>,
    /// With --auth-issuer: a scope every request's token must hold (else 403
    /// insufficient_scope naming it); repeat for more.
    #[arg(long, value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scope: Vec<String>,
    /// With --auth-issuer: the gateway's own client at the issuer, with which it asks
    /// what an opaque (non-JWT) access token means (introspection, RFC 7662); its
    /// secret from --auth-client-secret.
    #[arg(
        long,
        value_name = "ID",
        requires = "auth_issuer",
        requires = "auth_client_secret"
    )]
    pub auth_client_id: Option<String>,
    /// With --auth-client-id: its secret at the issuer; from the environment is better
    /// than a flag others see in `ps`.
    #[arg(
        long,
        value_name = "SECRET",
        env = "CAPABLE_AUTH_CLIENT_SECRET",
        hide_env_values = true,
        requires = "auth_client_id"
    )]
    pub auth_client_secret: Option<String>,
    /// With --listen: the key the gateway seals with — legacy sessions, so that any
    /// replica continues a session another began, and the callers' tokens of
    /// --user-tokens: a file holding 32 bytes as 64 hex digits or base64. The
    /// environment's CAPABLE_SEAL_KEY may hold the key
    /// itself instead.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub seal_key_file: Option<PathBuf>,
    /// The current seal key itself; from the environment (CAPABLE_SEAL_KEY), never a flag
    /// others see in `ps`.
    #[arg(
        long,
        value_name = "KEY",
        env = "CAPABLE_SEAL_KEY",
        hide_env_values = true,
        hide = true
    )]
    pub seal_key: Option<String>,
    /// With --seal-key-file: a previous key (a file), whose seals still open while a
    /// rotation rolls out; repeat for more (at most 4).
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub seal_key_previous: Vec<PathBuf>,
    /// With --listen and a seal key: keep the tokens of the callers' own logins
    /// (`"credentials": {"mode": "user"}`) in FILE across restarts, each sealed with the
    /// seal key. Without it, they are kept in memory only.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub user_tokens: Option<PathBuf>,
    /// With --listen: serve `/metrics` (Prometheus) on ADDR instead of the listener's
    /// port, with `/healthz` and `/readyz` (e.g. `127.0.0.1:9464`). Loopback unless
    /// --allow-remote; no token there (on the listener, `/metrics` wants what `/mcp`
    /// wants).
    #[arg(long, value_name = "ADDR", requires = "listen")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Trace every request (and its call to the server behind) over OTLP to the
    /// collector the standard variables name (`OTEL_EXPORTER_OTLP_ENDPOINT`, default
    /// `http://localhost:4318`; `OTEL_EXPORTER_OTLP_PROTOCOL` `http/protobuf` or
    /// `grpc`; `OTEL_EXPORTER_OTLP_HEADERS`). Without it, traces are on when an
    /// endpoint variable is set.
    #[arg(long)]
    pub otlp: bool,
    /// With --listen: a web page of this origin may call the bridge (its `Origin`
    /// accepted, its CORS preflight granted), e.g. `http://localhost:6274`; repeat for
    /// more. Without it, only pages of the listener's own origin.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// With --listen: the most sessions at once (legacy sessions, and as many
    /// 2026-07-28 declarations), each with its server behind; past it, the one used
    /// least recently with nothing in flight is ended to make room (else `503`).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_sessions: usize,
    /// With --listen: a session with nothing in flight for this long is ended, and its
    /// server shut down (a host that vanished holds nothing for ever).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30m")]
    pub session_idle: Duration,
    /// With --listen: the most connections open at once (one past it is closed as it is
    /// accepted; those open stay served).
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_connections: usize,
    /// With --listen: how long a request's headers may take to arrive (a client that
    /// sends them a byte at a time, or never, is cut off).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub header_timeout: Duration,
    /// With --listen: how long a request's body may take to arrive (`408` past it).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub body_timeout: Duration,
    /// With --listen: the most bytes of request bodies read at once, all connections
    /// together (a body that does not fit is refused, `503`: hundreds of large bodies
    /// at once hold no more than this).
    #[arg(long, value_name = "SIZE", value_parser = capable::internal::text::parse_size, default_value = "256MiB")]
    pub max_body_total: usize,
    /// With --listen: the most bytes a host may leave unread on one stream (its `GET`, a
    /// request's SSE answer) behind a message; past it the stream is closed (a legacy
    /// host resumes it with Last-Event-ID).
    #[arg(long, value_name = "SIZE", value_parser = capable::internal::text::parse_size, default_value = "8MiB")]
    pub stream_buffer: usize,
    /// With --listen: the most messages a 2025-03-26 host's batch may hold (past it the
    /// batch is refused whole, `400`).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_batch: usize,
    /// Pass the server's notifications of this method to the host although the protocol
    /// defines no such method (a server's own, `x/progress`); `x/*` for every method
    /// that starts with `x/`. Repeat for more. Without it none reaches the host.
    #[arg(long = "pass-notification", value_name = "METHOD")]
    pub pass_notifications: Vec<String>,
    /// Many servers (a config): what joins a server's name and a tool's or prompt's in
    /// the merged lists (`docs__search`); 1 to 8 characters of `[a-zA-Z0-9_-]`, so every
    /// merged name keeps to the `^[a-zA-Z0-9_-]{1,64}$` rule hosts apply.
    #[arg(long, value_name = "SEP", default_value = "__")]
    pub name_separator: String,
    /// Many servers (a config): only these (comma-separated names).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Many servers: where their tools' and prompts' definitions are pinned (default:
    /// `NAME.pins.json` beside the config). A definition that later differs from its
    /// pin is withheld from hosts, with both definitions in the audit.
    #[arg(long, value_name = "FILE", conflicts_with = "no_pins")]
    pub pins: Option<PathBuf>,
    /// Many servers: no pinned definitions (nothing judged, nothing written).
    #[arg(long)]
    pub no_pins: bool,
    /// Many servers: do not watch the config file for changes. SIGHUP still reads it
    /// anew (servers added, removed or changed, the policies in force from the next
    /// request on; an invalid file changes nothing and the audit says why).
    #[arg(long)]
    pub no_watch: bool,
    /// Many servers: a definition that differs from its pin is passed to hosts (the
    /// evidence still in the audit) instead of withheld.
    #[arg(long, conflicts_with = "no_pins")]
    pub pass_changed: bool,
    /// Many servers: a definition never seen is held from hosts until accepted, instead
    /// of pinned on first sight.
    #[arg(long, conflicts_with = "no_pins")]
    pub hold_new: bool,
    /// Append every violation and notice to FILE too, as JSON lines (they always go
    /// to stderr).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerArgs,
}
