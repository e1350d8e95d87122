//! `capable bridge`: capable between a host and a server — the [`capable_bridge`]
//! library behind the flags. The host (a desktop app, an editor, an agent) starts
//! `capable bridge` as its stdio server, or reaches it over Streamable HTTP
//! (`--listen`); behind it is the server the flags name — `--url URL` (Streamable HTTP
//! or HTTP+SSE, either era, OAuth from the token store), `--server NAME` from a config,
//! a stdio command after `--` — or, with none of them, every server of the config,
//! read anew when its file changes or on SIGHUP (`--no-watch`: on SIGHUP only).

use std::sync::Arc;

use capable::config::{ConfigFile, GatewayPolicy, ServerPolicy, ServerTarget};
use capable::host::{PinPolicy, PinStore};
use capable_bridge::{
    BridgeConfig, BridgeError, ConfigPolicy, Connector, IntrospectionClient, ListenAuth,
    ListenConfig, Loaded, Reload, Stop, Unavailable, Upstream,
};

use crate::commands::bridge_store::Shared;
use crate::commands::Context;
use crate::exit::CliError;
use crate::flags::{BridgeArgs, LoginFlag};

/// The config's policies, by server name.
type Policies = std::collections::BTreeMap<String, ServerPolicy>;

/// Runs the bridge until the host leaves or a signal comes.
pub async fn run(ctx: &Context, args: &BridgeArgs) -> Result<(), CliError> {
    if ctx.global.auth.login == LoginFlag::Paste {
        return Err(CliError::Usage(
            "--login paste reads the browser's address from stdin, which is the host's here: \
             use --login browser or headless, or log in first with `capable auth login`"
                .into(),
        ));
    }
    // Checked now: a bad key stops the bridge before it serves.
    let seal_ring = crate::commands::bridge_seal::ring(args)?;
    let user_tokens = match (&args.user_tokens, &seal_ring) {
        (Some(path), Some(ring)) => Some((path.clone(), ring.clone())),
        (Some(_), None) => {
            return Err(CliError::Usage(
                "--user-tokens keeps the callers' tokens sealed: give a seal key \
                 (--seal-key-file, or CAPABLE_SEAL_KEY)"
                    .into(),
            ))
        }
        (None, _) => None,
    };
    let replicated = seal_ring.is_some() && args.listen.is_some();
    let (upstream, policies, gateway) = upstream(ctx, args, replicated)?;
    let pins = pins(args, &upstream)?;
    let shared = crate::commands::bridge_store::open(&gateway)?;
    crate::commands::bridge_store::say_at_start(&gateway, seal_ring.is_some(), &shared).await;
    let first = policy_of(policies, &gateway, &shared).map(Arc::new);
    let store = shared.as_ref().map(|(store, _)| store.clone());
    let when_down = shared.as_ref().map(|(_, when_down)| *when_down);
    let reload = reload(ctx, args, &upstream, first.clone(), shared, replicated);
    let mut config = BridgeConfig::new(upstream);
    config.store = store;
    config.store_when_down = when_down.unwrap_or_default();
    config.pins = pins;
    config.user_tokens = user_tokens;
    config.policy = first.map(|p| p as Arc<dyn capable_bridge::Policy>);
    config.reload = reload;
    config.client = ctx.options();
    config.oauth = Some(ctx.host_oauth());
    config.connect_timeout = ctx.global.timeout;
    config.pass_notifications = args.pass_notifications.clone();
    config.name_separator = args.name_separator.clone();
    config.audit_log = args.audit_log.clone();
    for secret in [&args.listen_token, &args.auth_client_secret]
        .into_iter()
        .flatten()
    {
        crate::secrets::keep(|s| s.add(secret));
    }
    config.traces = capable_bridge::Traces::from_env(args.otlp).map_err(CliError::Usage)?;
    if config.traces.is_some() {
        // The exporter's headers may carry a collector's token.
        let var = |name: &str| std::env::var(name).ok();
        for value in capable_bridge::Traces::header_values(var) {
            crate::secrets::keep(|s| s.add(&value));
        }
    }
    config.secrets = crate::secrets::kept();
    config.hints = Some(Arc::new(|e: &capable::Error| {
        CliError::Client(e.clone()).hint()
    }));
    let stop = stop_on_signal(ctx, config.reload.is_some());
    let served = match args.listen {
        Some(addr) => {
            let mut listen = listen(args, addr, &gateway);
            listen.seal = seal_ring;
            capable_bridge::serve_listen(config, listen, stop).await
        }
        None => capable_bridge::serve_stdio(config, stop).await,
    };
    served.map_err(|e| match e {
        BridgeError::Stopped(signal) => CliError::Interrupted(signal),
        BridgeError::Host(why) => CliError::Host(why),
        BridgeError::AuditLog { path, error } => {
            CliError::Usage(format!("--audit-log {}: {error}", path.display()))
        }
        other => CliError::Usage(other.to_string()),
    })
}

/// The server or servers behind, as the flags name them, their policies in the config
/// (`--server NAME`: that entry's; many: every entry's), and its `gateway` section. On
/// one of many replicas, a `--server` that must not run per replica is refused.
fn upstream(
    ctx: &Context,
    args: &BridgeArgs,
    replicated: bool,
) -> Result<(Upstream, Policies, GatewayPolicy), CliError> {
    let g = &ctx.global;
    if g.server.is_some() || g.url.is_some() || !args.server.command.is_empty() {
        // The server's name in the audit: its config name, else its URL (credentials
        // left out) or its program.
        let name = match (&g.server, ctx.target(&args.server)?) {
            (Some(name), _) => name.clone(),
            (None, ServerTarget::Http { url, .. }) => {
                capable::internal::http::redact::redact_unparsed(&url)
            }
            (None, ServerTarget::Stdio(command)) => command.program,
        };
        let ctx = Arc::new(Context {
            global: ctx.global.clone(),
            signals: ctx.signals.clone(),
        });
        let mut policies = Policies::new();
        let mut gateway = GatewayPolicy::default();
        if let Some(entry) = &g.server {
            let mut file = ConfigFile::load(g.config.as_deref())?;
            // One of many replicas does not run a server that must not run per replica.
            if replicated && capable_bridge::hold_to_replicas(&mut file).contains(entry) {
                let held = file.servers.iter().find(|e| &e.name == entry);
                let why = held.and_then(|e| e.target.as_ref().err());
                return Err(CliError::Usage(
                    why.map_or_else(String::new, |e| e.to_string()),
                ));
            }
            policies.extend(file.policies.into_iter().filter(|(name, _)| name == entry));
            gateway = file.gateway;
        }
        let server = args.server.clone();
        let connect = Connector::new(move |options| {
            let (ctx, server) = (ctx.clone(), server.clone());
            Box::pin(async move {
                // A signal meanwhile is the bridge's to act on (its `Stop`), not this
                // connection's: the connection alone.
                ctx.connect_target(&server, options)
                    .await
                    .map_err(unavailable)
            })
        });
        return Ok((Upstream::One { name, connect }, policies, gateway));
    }
    let config = many(
        ConfigFile::load(g.config.as_deref())?,
        g.inherit_env,
        replicated,
    );
    if let Some(unknown) = args
        .only
        .iter()
        .find(|o| !config.servers.iter().any(|e| &e.name == *o))
    {
        return Err(CliError::Usage(format!(
            "--only {unknown}: {} has no such server",
            config.path
        )));
    }
    let policies = config.policies.clone();
    let gateway = config.gateway.clone();
    let only = args.only.clone();
    Ok((Upstream::Many { config, only }, policies, gateway))
}

/// A config of many servers as the bridge serves it: its stdio servers' environment
/// as `--inherit-env` says, its HTTP servers' secrets kept for scrubbing, and — on a
/// gateway that is one of many replicas (a seal key given) — those that must not run per
/// replica left out, saying why.
fn many(mut config: ConfigFile, inherit_env: bool, replicated: bool) -> ConfigFile {
    if replicated {
        capable_bridge::hold_to_replicas(&mut config);
    }
    for entry in &mut config.servers {
        match &mut entry.target {
            Ok(ServerTarget::Stdio(command)) => command.inherit_env = inherit_env,
            Ok(target) => crate::secrets::keep_target(target),
            Err(_) => {}
        }
    }
    config
}

/// The policy of a config's servers and its `gateway` section (none when it sets none),
/// its limits counted in the store the replicas share when the config names one.
fn policy_of(policies: Policies, gateway: &GatewayPolicy, shared: &Shared) -> Option<ConfigPolicy> {
    if policies.is_empty() && gateway.rate_limit.is_none() {
        return None;
    }
    let policy = ConfigPolicy::new(policies).with_gateway(gateway);
    Some(match shared {
        Some((store, when_down)) => policy.with_store(store.clone(), *when_down),
        None => policy,
    })
}

/// Many servers: their config read anew on SIGHUP and, unless `--no-watch`, when its
/// file changes — with the bounds it was first read with, as the bridge serves it.
/// Each policy read keeps the counts of the last one's limits that stay as they were,
/// and the store opened at start (a changed `gateway.store` needs a restart).
fn reload(
    ctx: &Context,
    args: &BridgeArgs,
    upstream: &Upstream,
    first: Option<Arc<ConfigPolicy>>,
    shared: Shared,
    replicated: bool,
) -> Option<Reload> {
    let Upstream::Many { config, .. } = upstream else {
        return None;
    };
    let path = std::path::PathBuf::from(&config.path);
    let inherit_env = ctx.global.inherit_env;
    let file = path.clone();
    let last = std::sync::Mutex::new(first);
    let mut reload = Reload::new(Arc::new(move || {
        let config = ConfigFile::load(Some(&file)).map_err(|e| e.to_string())?;
        let config = many(config, inherit_env, replicated);
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        let policy = policy_of(config.policies.clone(), &config.gateway, &shared).map(|p| {
            Arc::new(match last.as_deref() {
                Some(before) => p.keeping_counts(before),
                None => p,
            })
        });
        last.clone_from(&policy);
        let policy = policy.map(|p| p as Arc<dyn capable_bridge::Policy>);
        let mut loaded = Loaded::new(config, policy);
        loaded.secrets = crate::secrets::kept();
        Ok(loaded)
    }));
    reload.watch = (!args.no_watch).then_some(path);
    reload.hangups = Some(ctx.signals.hangups());
    Some(reload)
}

/// The pinned definitions of many servers (none for one, nor with `--no-pins`): a
/// lock file that cannot be read stops the start, saying why.
fn pins(args: &BridgeArgs, upstream: &Upstream) -> Result<Option<PinStore>, CliError> {
    let Upstream::Many { config, .. } = upstream else {
        return Ok(None);
    };
    if args.no_pins {
        return Ok(None);
    }
    let path = match &args.pins {
        Some(path) => path.clone(),
        None => PinStore::beside(std::path::Path::new(&config.path)),
    };
    let mut policy = PinPolicy::default();
    if args.pass_changed {
        policy = policy.passing_changes();
    }
    if args.hold_new {
        policy = policy.holding_new();
    }
    PinStore::open(path, policy)
        .map(Some)
        .map_err(|e| CliError::Usage(format!("pinned definitions: {e}")))
}

/// Why the server behind cannot be had, as the bridge tells its host: the client
/// library's error as it is; the CLI's own failures in its words, with its hint.
fn unavailable(e: CliError) -> Unavailable {
    match e {
        CliError::Client(e) => Unavailable::Client(e),
        other => Unavailable::Other {
            kind: other.error_kind(),
            name: other.kind(),
            message: crate::secrets::scrub(&other.to_string()).into_owned(),
            hint: other.hint(),
        },
    }
}

/// The listener's bounds, from the flags (and the config's `gateway.groupsClaim`).
fn listen(args: &BridgeArgs, addr: std::net::SocketAddr, gateway: &GatewayPolicy) -> ListenConfig {
    let mut listen = ListenConfig::new(addr);
    listen.token = args.listen_token.clone();
    listen.allow_remote = args.allow_remote;
    listen.allow_origins = args.allow_origin.clone();
    listen.max_sessions = args.max_sessions;
    listen.session_idle = args.session_idle;
    listen.max_connections = args.max_connections;
    listen.header_timeout = args.header_timeout;
    listen.body_timeout = args.body_timeout;
    listen.max_body_total = args.max_body_total;
    listen.stream_buffer = args.stream_buffer;
    listen.max_batch = args.max_batch;
    listen.metrics = args.metrics;
    if let (Some(issuer), Some(public_url)) = (&args.auth_issuer, &args.public_url) {
        let mut auth = ListenAuth::new(issuer, public_url);
        auth.scopes = args.auth_scope.clone();
        if let (Some(id), Some(secret)) = (&args.auth_client_id, &args.auth_client_secret) {
            auth.introspection = Some(IntrospectionClient::new(id, secret));
        }
        if let Some(claim) = &gateway.groups_claim {
            auth.groups_claim = claim.clone();
        }
        listen.auth = Some(auth);
    }
    listen
}

/// A [`Stop`] that SIGINT, SIGTERM or SIGHUP signals — or, for a bridge that reloads
/// its config (`reloads`), SIGINT or SIGTERM only (its SIGHUP reads the config anew).
fn stop_on_signal(ctx: &Context, reloads: bool) -> Stop {
    let (handle, stop) = Stop::new();
    let received: std::pin::Pin<Box<dyn std::future::Future<Output = i32> + Send>> = if reloads {
        Box::pin(ctx.signals.stopping())
    } else {
        Box::pin(ctx.signals.received())
    };
    tokio::spawn(async move { handle.stop(received.await) });
    stop
}
