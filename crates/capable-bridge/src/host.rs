//! One host's side of the bridge, whatever carries its messages (stdio, or one session
//! of the HTTP listener): a greeter until the host says who it is, then the relay to
//! the server behind.
//!
//! Until the host says who it is (`initialize`, or a 2026-07-28 request's envelope)
//! there is no server behind yet: the greeter — the engine with nothing declared —
//! answers a `ping` and refuses anything else. The first word of the host's connects
//! the server behind, declaring what the host declared; should that fail (the server
//! does not start, authorization is needed and cannot be had here), that request is
//! answered with an error that says why and what to do, and the next one tries again.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use capable::internal::jsonrpc::{split_batch, FramingError, Incoming};
use capable::internal::model::Implementation;
use capable::internal::server::{Hello, ServerConfig, ServerConnection};
use capable::internal::Outbox;

use super::audit::Audit;
use super::forward::unavailable;
use capable::host::HostOptions;

use super::behind::Behind;
use super::many::Many;
use super::metrics::Metrics;
use super::relay::{Event, Inbox, Queue, Relay, Servers};
use super::reload::Generation;
use super::upstream;
use crate::{BridgeConfig, BridgeError, Stop, Unavailable, Upstream};

/// The server behind, as every host of the bridge reaches it.
pub struct Target {
    /// What the bridge serves.
    pub config: BridgeConfig,
    /// Where violations and notices go (and what is scrubbed out of them).
    pub audit: Arc<Audit>,
    /// What stops the bridge.
    pub stop: Stop,
    /// What token exchanges got, per caller (servers of `exchange` credentials).
    pub exchanges: Arc<crate::credentials::Exchanges>,
    /// The logins of servers of `user` credentials, and what they got, per caller.
    pub users: Arc<crate::credentials::Users>,
    /// Whether a server's credentials are exchanged per caller: then each caller's
    /// token is kept. A reload sets it anew (a config that adds an `exchange` server
    /// turns it on, one that takes the last away turns it off).
    pub exchanging: Arc<AtomicBool>,
    /// Many servers reloaded: the config in force, which every host's servers follow.
    pub generation: Option<tokio::sync::watch::Receiver<Arc<Generation>>>,
}

impl Target {
    /// The target of `config`, its audit open; `token`, the listener's, is a secret
    /// too; `known`: the hosts are verified callers (a reloaded policy may then name
    /// who may call).
    pub fn open(
        mut config: BridgeConfig,
        stop: Stop,
        token: Option<&str>,
        known: bool,
    ) -> Result<Arc<Target>, BridgeError> {
        if let Some(token) = token {
            config.secrets.add(token);
        }
        // The exporter's headers may carry a collector's token.
        if config.traces.is_some() {
            for value in crate::Traces::header_values(|name| std::env::var(name).ok()) {
                config.secrets.add(&value);
            }
        }
        if !super::many::valid_separator(&config.name_separator) {
            return Err(BridgeError::Config(format!(
                "the name separator {:?} would make names hosts refuse: give 1 to 8 characters of [a-zA-Z0-9_-]",
                config.name_separator
            )));
        }
        let mut metrics = Metrics::new(servers_of(&config.upstream));
        if let Some(traces) = &config.traces {
            metrics.count_dropped_spans(traces.clone());
        }
        let audit = Audit::open(
            config.audit_log.as_deref(),
            config.secrets.clone(),
            config.hints.clone(),
            Arc::new(metrics),
        )?
        .with_traces(config.traces.clone());
        let audit = Arc::new(audit);
        // What a flood held back is said once its window has passed.
        let flushing = Arc::downgrade(&audit);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(crate::audit_limit::WINDOW).await;
                match flushing.upgrade() {
                    Some(audit) => audit.flush(false),
                    None => return,
                }
            }
        });
        // Callers' tokens are kept only while some server exchanges them (a reload
        // says so anew).
        let exchanging = Arc::new(AtomicBool::new(match &config.upstream {
            Upstream::Many { config, .. } => crate::credentials::any_exchange(config),
            Upstream::One { .. } => false,
        }));
        let generation = match config.reload.take() {
            Some(reload) => {
                let following = super::reload::Following {
                    audit: audit.clone(),
                    stop: stop.clone(),
                    known,
                    exchanging: exchanging.clone(),
                };
                Some(super::reload::start(reload, &mut config, following)?)
            }
            None => None,
        };
        let users = Arc::new(crate::credentials::Users::new());
        if let Some((path, ring)) = config.user_tokens.clone() {
            let shown = path.display().to_string();
            let kept = crate::credentials::Kept::new(path, ring);
            let (read, skipped) = users
                .keep_in(kept)
                .map_err(|e| BridgeError::Config(format!("--user-tokens {e}")))?;
            let kept = serde_json::json!({"file": shown, "tokens": read, "unreadable": skipped});
            audit.always("user_tokens", kept);
        } else if user_servers(&config.upstream) {
            let notice = "the callers' own logins (credentials: user) are kept in memory only: \
                          a restart asks every caller to log in again (--user-tokens FILE with \
                          a seal key keeps them, sealed)";
            audit.record(
                "notice",
                serde_json::json!({"side": "bridge", "level": "warning", "notice": notice}),
            );
        }
        Ok(Arc::new(Target {
            config,
            audit,
            stop,
            exchanges: Arc::new(crate::credentials::Exchanges::new(MAX_EXCHANGE_CALLERS)),
            users,
            exchanging,
            generation,
        }))
    }

    /// The server's name in the audit ("bridge" for many).
    pub fn name(&self) -> &str {
        match &self.config.upstream {
            Upstream::One { name, .. } => name,
            Upstream::Many { .. } => "bridge",
        }
    }

    /// The most bytes of one message from the host.
    pub fn max_message(&self) -> usize {
        self.config.client.max_message_size
    }

    /// The spans still waiting sent to the collector, for at most two seconds (a
    /// collector that is down does not hold the exit up longer).
    pub async fn flush_traces(&self) {
        if let Some(traces) = self.audit.traces() {
            traces.shutdown(std::time::Duration::from_secs(2)).await;
        }
    }

    /// The bridge stopped (`signal`: by one): the audit says so, and the exit follows.
    pub fn stopped(&self, signal: Option<i32>) -> Result<(), BridgeError> {
        self.audit.flush(true);
        let stopped = serde_json::json!({"server": self.name(), "state": "stopped"});
        self.audit.always("state", stopped);
        match signal {
            Some(signal) => Err(BridgeError::Stopped(signal)),
            None => Ok(()),
        }
    }
}

/// The servers behind `upstream`, by name, and whether the bridge needs each (not
/// `disabled`, not left out by `--only`): the `server` labels of its metrics.
fn servers_of(upstream: &Upstream) -> Vec<(String, bool)> {
    match upstream {
        Upstream::One { name, .. } => vec![(name.clone(), true)],
        Upstream::Many { config, only } => config_servers(config, only),
    }
}

/// Whether a server of `upstream` has `user` credentials.
fn user_servers(upstream: &Upstream) -> bool {
    let Upstream::Many { config, .. } = upstream else {
        return false;
    };
    config
        .policies
        .values()
        .any(|p| matches!(p.credentials, Some(capable::config::Credentials::User)))
}

/// The servers of `config`, by name, and whether the bridge needs each (not
/// `disabled`, not left out by `only`).
pub(crate) fn config_servers(
    config: &capable::config::ConfigFile,
    only: &[String],
) -> Vec<(String, bool)> {
    config
        .servers
        .iter()
        .map(|entry| {
            let disabled = config.policies.get(&entry.name).is_some_and(|p| p.disabled);
            let chosen = only.is_empty() || only.contains(&entry.name);
            (entry.name.clone(), chosen && !disabled)
        })
        .collect()
}

/// The most callers whose exchanged tokens are kept at once.
const MAX_EXCHANGE_CALLERS: usize = 10_000;

/// One host: the greeter, then the relay (see the module documentation).
pub struct Host {
    target: Arc<Target>,
    greeter: ServerConnection<()>,
    out: Outbox,
    relay: Option<Relay>,
    /// Its messages may be several hosts' that cannot be told apart (2026-07-28 over
    /// HTTP, which has no session).
    shared: bool,
    /// The replicas' key ring: the host's input rounds are sealed under it (see
    /// [`Host::seal_rounds`]).
    seal_rounds: Option<capable::internal::seal::KeyRing>,
    /// The one server's HTTP session to re-attach to rather than open (a sealed session
    /// continued on another replica), taken by the first connection only.
    resume: Option<capable::Resumption>,
    /// The session is sealed: other replicas continue it too (see
    /// [`Host::share_with_replicas`]).
    replicated: bool,
    /// The host's standalone `GET` is open (replicated sessions: the server's follows).
    listens: bool,
    /// The replicas' key ring: the task ids the host is handed are sealed under it (see
    /// [`Host::seal_tasks`]).
    seal_tasks: Option<capable::internal::seal::KeyRing>,
    /// The session's sealed id, once it has one: its tasks listed in the store under it
    /// (see [`Host::sealed`]).
    sealed_id: Option<String>,
}

impl Host {
    /// A host that has not spoken yet; `shared`: its messages may be several hosts'
    /// that cannot be told apart.
    pub fn new(target: Arc<Target>, shared: bool) -> Host {
        let greeter = ServerConfig::new(
            Implementation::new("capable-bridge", env!("CARGO_PKG_VERSION")),
            serde_json::json!({}),
        );
        Host {
            target,
            greeter: ServerConnection::new(greeter),
            out: Outbox::new(),
            relay: None,
            shared,
            seal_rounds: None,
            resume: None,
            replicated: false,
            listens: false,
            seal_tasks: None,
            sealed_id: None,
        }
    }

    /// The session is known by sealed id `id` from now on: with a store, the tasks a
    /// legacy host starts are listed there for every replica (`relay/task_list.rs`).
    pub fn sealed(&mut self, id: &str) {
        self.sealed_id = Some(id.to_owned());
        if let Some(relay) = &mut self.relay {
            relay.list_tasks_of(id);
        }
    }

    /// The task ids the host is handed are sealed under `ring` (the replicas' key), so
    /// that any replica continues a task and no other caller can use it
    /// (`relay/task_ids.rs`; one server behind only: many declare no tasks).
    pub fn seal_tasks(&mut self, ring: capable::internal::seal::KeyRing) {
        self.seal_tasks = Some(ring);
    }

    /// The host's session is sealed, continued by any replica its requests reach: the
    /// one server's HTTP session is held by every such replica at once
    /// (`ClientOptions::with_shared_session`), its standalone stream open only on the
    /// replica holding the host's `GET` ([`Host::host_listens`]), and the server's
    /// record of the host's subscriptions and log level the one that counts (see
    /// `Relay::share_with_replicas`).
    pub fn share_with_replicas(&mut self) {
        self.replicated = true;
    }

    /// The host's standalone `GET` opened here (`true`) or ended (`false`); for a
    /// replicated session, the server's standalone stream follows it.
    pub fn host_listens(&mut self, listens: bool) {
        self.listens = listens;
        if let (true, Some(relay)) = (self.replicated, &mut self.relay) {
            relay.host_listens(listens);
        }
    }

    /// Whether the host's standalone `GET` is open (as last told by
    /// [`Host::host_listens`]).
    pub fn listens(&self) -> bool {
        self.listens
    }

    /// Whether the host's subscriptions are kept by the one server behind, in a session
    /// every replica re-attaches to (a legacy HTTP server, `--url`): nothing of them is
    /// kept elsewhere.
    pub fn keeps_state_upstream(&self) -> bool {
        self.relay.as_ref().is_some_and(Relay::keeps_state_upstream)
    }

    /// One line from the host.
    pub async fn line(&mut self, line: bytes::Bytes) {
        match Incoming::parse(line.clone()) {
            Ok(msg) => self.message(msg).await,
            // A 2025-03-26 host may send a batch: each of its messages in turn (a
            // batch in it is unreadable). Each is answered on a line of its own.
            Err(FramingError::Batch) if self.accepts_batches() => {
                let Some(items) = split_batch(&line) else {
                    return self.unreadable(&line, &FramingError::Batch);
                };
                for item in items {
                    match Incoming::parse(item.clone()) {
                        Ok(msg) => self.message(msg).await,
                        Err(e) => self.unreadable(&item, &e),
                    }
                }
            }
            Err(e) => self.unreadable(&line, &e),
        }
    }

    /// The version the host speaks, once it said.
    pub fn version(&self) -> Option<capable::internal::ProtocolVersion> {
        self.relay.as_ref().and_then(Relay::host_version)
    }

    /// Whether the host may send batches: its session is a 2025-03-26 one.
    pub fn accepts_batches(&self) -> bool {
        self.relay.as_ref().is_some_and(Relay::accepts_batches)
    }

    fn unreadable(&mut self, line: &[u8], error: &FramingError) {
        match &mut self.relay {
            Some(relay) => relay.unreadable(line, error),
            None => {
                let _ = self.greeter.handle_unreadable(line, error, &mut self.out);
                self.audit_greeter();
            }
        }
    }

    /// The one server behind is to be re-attached to `session` (its HTTP session kept
    /// by another replica) when the host's `initialize` connects it, not opened anew.
    pub fn resume(&mut self, session: capable::Resumption) {
        self.resume = Some(session);
    }

    /// What another replica needs to re-attach to the one server's HTTP session, once
    /// connected.
    pub fn resumption(&self) -> Option<capable::Resumption> {
        self.relay.as_ref()?.resumption()
    }

    /// One message from the host.
    pub async fn message(&mut self, msg: Incoming) {
        if self.relay.is_none() {
            match Hello::read(&msg) {
                Some(hello) => self.connect(&hello, &msg).await,
                None => {
                    let _ = self.greeter.handle(msg, &mut self.out);
                    self.audit_greeter();
                    return;
                }
            }
        }
        if let Some(relay) = &mut self.relay {
            relay.receive(msg);
        }
    }

    /// Connects the server behind for a host that said `hello` in `msg`; on failure
    /// `msg` is answered with why.
    async fn connect(&mut self, hello: &Hello, msg: &Incoming) {
        let t = &self.target;
        // The server's questions come to the relay's inbox.
        let (inbox, queue) = super::relay::queue();
        let options = upstream::options(&t.config.client, hello, &inbox);
        let ask_timeout = t.config.client.config.timeouts.progress_cap;
        let connect = match &t.config.upstream {
            Upstream::Many { config, only } => {
                // A host that takes URL-mode elicitations is asked to log in to a `user`
                // server by one (a 2026-07-28 host in a round), its call waiting for the
                // login; a legacy one is told when it landed.
                let modern = hello.version.map(|v| v.era()) == Some(capable::internal::Era::Modern);
                let elicit = match hello.capabilities.elicitation_url {
                    true => options.handlers.elicitation.clone(),
                    false => None,
                };
                let host = HostOptions {
                    client: options,
                    oauth: crate::credentials::counted(
                        crate::credentials::provider(
                            config,
                            t.config.oauth.clone(),
                            &t.exchanges,
                            &t.users,
                        ),
                        config,
                        t.audit.metrics().clone(),
                    ),
                    connect_timeout: Some(t.config.connect_timeout),
                    pins: t.config.pins.clone(),
                    ..HostOptions::default()
                };
                let policy = t.config.policy.clone();
                // The config in force now (a reload may have followed the first).
                let mut generation = t.generation.clone();
                let now = generation.as_mut().map(|g| g.borrow_and_update().clone());
                let config = now.as_ref().map_or(config, |g| &g.config);
                let mut many = Many::start(
                    config,
                    only,
                    host,
                    policy,
                    t.audit.clone(),
                    &t.config.name_separator,
                )
                .await;
                if let Some(generation) = generation {
                    many.reloading(generation);
                }
                let users = crate::credentials::UserServers::of(config, &t.users, modern);
                many.users(users.map(|u| u.elicited_by(elicit, Some(inbox.clone()))));
                let servers = Servers::Many(Box::new(many));
                self.relay = Some(self.relay_to(servers, hello, (inbox, queue), ask_timeout));
                return;
            }
            Upstream::One { connect, .. } => connect.clone(),
        };
        let name = t.name();
        let timeout = t
            .config
            .policy
            .as_ref()
            .and_then(|p| p.request_timeout(name));
        let options = match timeout {
            Some(timeout) => options.with_request_timeout(timeout),
            None => options,
        };
        let options = match self.replicated {
            true => options.with_shared_session(),
            false => options,
        };
        // Re-attached to a session another replica opened, the first time only: a
        // restart opens a new one.
        let first = match self.resume.take() {
            Some(session) => options.clone().with_resume(session),
            None => options.clone(),
        };
        let resumed = first.resume.is_some();
        t.audit
            .state(name, "starting", serde_json::json!({"resumed": resumed}));
        let connected = tokio::select! {
            connected = connect.connect(first) => connected,
            signal = t.stop.stopped() => Err(Unavailable::Other {
                kind: capable::ErrorKind::Unexpected,
                name: "interrupted",
                message: format!("stopped by signal {signal}"),
                hint: None,
            }),
        };
        // A session that cannot be taken up is opened anew, as without one.
        let connected = match connected {
            Err(e) if resumed => {
                let why = format!("the sealed session could not be taken up: {e}");
                t.audit.record(
                    "sealed",
                    serde_json::json!({"server": name, "upstream": "replayed", "why": why}),
                );
                connect.connect(options.clone()).await
            }
            connected => connected,
        };
        match connected {
            Ok(session) => {
                let again = upstream::connector(&connect, options);
                let behind = Behind::new(name, session, again, t.audit.clone());
                let servers = Servers::One(behind);
                let mut relay = self.relay_to(servers, hello, (inbox, queue), ask_timeout);
                if self.replicated {
                    relay.share_with_replicas(hello.version.map(|v| v.era()));
                    relay.host_listens(self.listens);
                }
                self.relay = Some(relay);
            }
            Err(e) => {
                t.audit.state(
                    name,
                    "failed",
                    serde_json::json!({"kind": e.name(), "error": e.to_string()}),
                );
                if let Incoming::Request { id, .. } = msg {
                    self.out.write_error(id, &unavailable(&e, &t.audit));
                }
            }
        }
    }

    /// The `requestState` of each input round the host is handed (a 2026-07-28 host) is
    /// sealed under `ring` (the replicas' key), so that any replica carries its retry on
    /// and no other caller can use it (the core's `sealed_rounds`).
    pub fn seal_rounds(&mut self, ring: capable::internal::seal::KeyRing) {
        self.seal_rounds = Some(ring);
    }

    /// The relay to `servers` for a host that said `hello`: offered what they declare,
    /// tasks carried across as the host's version and theirs allow.
    fn relay_to(
        &self,
        servers: Servers,
        hello: &Hello,
        queue: (Inbox, Queue),
        ask_timeout: std::time::Duration,
    ) -> Relay {
        let tasks = servers.task_bridge(hello.version);
        let config = servers.declaration(tasks);
        let audit = self.target.audit.clone();
        let shared = self.shared;
        let one = matches!(servers, Servers::One(_));
        let mut relay = Relay::new(servers, config, tasks, queue, ask_timeout, audit, shared);
        if let (true, Some(ring)) = (one, &self.seal_tasks) {
            relay.seal_tasks(ring.clone());
            // The bridge's own tasks kept for every replica (`relay/kept_tasks.rs`).
            if let Some(store) = &self.target.config.store {
                relay.keep_tasks(store.clone(), self.target.config.store_when_down);
                // And the tasks the host starts listed for every replica
                // (`relay/task_list.rs`), once the session is sealed.
                if let Some(id) = &self.sealed_id {
                    relay.list_tasks_of(id);
                }
            }
        }
        if let Some(policy) = &self.target.config.policy {
            relay.set_policy(policy.clone());
        }
        if let Some(ring) = &self.seal_rounds {
            relay.seal_rounds(ring.clone());
        }
        if let Some(store) = &self.target.config.store {
            // A state is good while its round is open: remembered twice as long.
            relay.set_store(store.clone(), ask_timeout.saturating_mul(2));
        }
        // The notifications of no protocol method that pass to the host: a method, or
        // a prefix ending in `*`.
        let passed: Arc<[String]> = self.target.config.pass_notifications.clone().into();
        if !passed.is_empty() {
            relay.pass_notifications(Box::new(move |method: &str| {
                passed.iter().any(|p| match p.strip_suffix('*') {
                    Some(prefix) => method.starts_with(prefix),
                    None => method == p,
                })
            }));
        }
        relay
    }

    fn audit_greeter(&mut self) {
        for notice in self.greeter.take_notices() {
            self.target.audit.host_notice(&notice);
        }
    }

    /// The relay's next event; pending for ever before there is a relay.
    pub async fn next(&mut self) -> Event {
        match &mut self.relay {
            Some(relay) => relay.next().await,
            None => std::future::pending().await,
        }
    }

    /// Acts on `event`.
    pub fn on(&mut self, event: Event) {
        if let Some(relay) = &mut self.relay {
            relay.on(event);
        }
    }

    /// Appends what was written for the host since the last call to `bytes`, in order;
    /// what held it is emptied and keeps its room for the next.
    pub fn drain_output(&mut self, bytes: &mut Vec<u8>) {
        let relay = self.relay.as_mut().map(Relay::output);
        for out in std::iter::once(&mut self.out).chain(relay) {
            bytes.extend_from_slice(out.bytes());
            out.clear();
        }
    }

    /// What was written for the host since the last call, in order.
    pub fn take_output(&mut self) -> [Outbox; 2] {
        let relay = match &mut self.relay {
            Some(relay) => relay.take_output(),
            None => Outbox::new(),
        };
        [std::mem::take(&mut self.out), relay]
    }

    /// Ends the host's side: the relay closes, the server behind is shut down.
    pub async fn close(mut self) {
        if let Some(relay) = self.relay.take() {
            relay.close().await;
        }
    }
}
