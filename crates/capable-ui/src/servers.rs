//! The servers the inspector shows: exactly those given at start, or by the config read
//! anew (`reload.rs`; no request can add one, so no request can start a process), in
//! one [`Host`] — each with the host's
//! states and their reasons, its lists and its events, disconnected and connected
//! again on its own ([`Host::disconnect`], [`Host::reconnect`]).
//!
//! Every message of every connection goes through a [`Tap`] onto the bus (the page's
//! message log); every host event becomes a bus event. A server is never restarted
//! behind the user's back: a crash shows as `failed` with its reason and the user
//! reconnects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use capable::config::{ConfigEntry, ServerTarget};
use capable::host::{
    Host, HostError, HostEvent, HostOptions, ListKind, OAuthProvider, Reloaded, ServerError,
    ServerState,
};
use capable::internal::restart::RestartPolicy;
use capable::{Capability, ClientOptions, Direction, ErrorKind, Flag, Method, Roots, Session, Tap};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::asks::{Asks, Kind};
use crate::bus::Bus;
use crate::error::ApiError;
use crate::options::UiOptions;

/// Every server, in one host.
pub struct Servers {
    host: Host,
    /// The entries given at start (or by the last reload), in their order.
    entries: Mutex<Vec<ConfigEntry>>,
    bus: Bus,
    asks: Asks,
    /// The options of every connection (before the page's tap and handler).
    client: ClientOptions,
    oauth: Option<OAuthProvider>,
    /// The roots each server starts with.
    given: Vec<capable::Root>,
    /// Each server's roots, which the page may change (its sessions are told).
    roots: Mutex<HashMap<String, Roots>>,
    /// Each ready server's resource templates, read once it is ready (the host keeps
    /// no list of them).
    templates: Mutex<HashMap<String, Value>>,
    forward: Mutex<Option<JoinHandle<()>>>,
}

impl Servers {
    /// Every server of `options`, connecting.
    pub fn start(options: &UiOptions, bus: Bus, asks: Asks) -> Arc<Servers> {
        // The page follows tasks (their statuses, cancel): it says so.
        let client = options.client.clone().with_tasks();
        let host = Host::new(HostOptions {
            client: client.clone(),
            restart: RestartPolicy::never(),
            connect_timeout: Some(options.timeout),
            oauth: options.oauth.clone(),
            pins: options.pins.clone(),
            ..HostOptions::default()
        });
        // Subscribed before any server is added: no `starting` is missed.
        let events = host.events();
        // Each server starts with the roots the run was given (none: an empty list,
        // declared all the same so that the page can give some later).
        let given = options
            .client
            .handlers
            .roots
            .as_ref()
            .map(Roots::get)
            .unwrap_or_default();
        let roots = options
            .servers
            .iter()
            .map(|e| (e.name.clone(), Roots::new(given.clone())))
            .collect();
        let servers = Arc::new(Servers {
            host,
            entries: Mutex::new(options.servers.clone()),
            bus,
            asks,
            client,
            oauth: options.oauth.clone(),
            given,
            roots: Mutex::new(roots),
            templates: Mutex::new(HashMap::new()),
            forward: Mutex::new(None),
        });
        let forward = tokio::spawn(forward(events, Arc::downgrade(&servers)));
        *servers.forward.lock().unwrap_or_else(|e| e.into_inner()) = Some(forward);
        for entry in &options.servers {
            let added = match &entry.target {
                Ok(target) => servers
                    .host
                    .add_with(
                        &entry.name,
                        target.clone(),
                        servers.options_for(&entry.name, None),
                    )
                    .is_ok(),
                Err(_) => false,
            };
            // A broken entry, or a name the host refuses: shown refused, with why.
            if !added {
                let _ = servers.host.add_entry(entry);
            }
        }
        servers
    }

    /// The entries in force, in their order.
    pub fn entries(&self) -> Vec<ConfigEntry> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The entry of server `name`, given at start (or by the last reload).
    pub fn entry(&self, name: &str) -> Result<ConfigEntry, ApiError> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let found = entries.iter().find(|e| e.name == name).cloned();
        found.ok_or_else(|| {
            ApiError::from(HostError::UnknownServer {
                name: name.to_owned(),
                known: entries.iter().map(|e| e.name.clone()).collect(),
            })
        })
    }

    /// Applies `entries`, a config read anew, to the host (`Host::reload_with`): the
    /// servers added started (with the roots the run was given), those removed stopped
    /// and forgotten, those changed restarted; the others keep their sessions.
    pub async fn reload(&self, entries: Vec<ConfigEntry>) -> Result<Reloaded, HostError> {
        {
            let mut roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
            for entry in &entries {
                roots
                    .entry(entry.name.clone())
                    .or_insert_with(|| Roots::new(self.given.clone()));
            }
        }
        let done = self
            .host
            .reload_with(&entries, &[], &|name| self.options_for(name, None))
            .await?;
        let mut roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
        let mut templates = self.templates.lock().unwrap_or_else(|e| e.into_inner());
        for name in &done.removed {
            roots.remove(name);
            templates.remove(name);
        }
        *self.entries.lock().unwrap_or_else(|e| e.into_inner()) = entries;
        Ok(done)
    }

    /// The target of server `name`, to connect a session of its own (the audit does).
    pub fn target(&self, name: &str) -> Result<ServerTarget, ApiError> {
        let entry = self.entry(name)?;
        entry
            .target
            .clone()
            .map_err(|e| ApiError::not_offered(e.to_string()))
    }

    /// How HTTP servers are authorized.
    pub fn oauth(&self) -> Option<&OAuthProvider> {
        self.oauth.as_ref()
    }

    /// Client options for one connection of `server`: the run's, with the message-log
    /// tap (messages tagged `tag`, e.g. `audit` for the audit's own session), what
    /// the server asks of the person answered in the page (forms, sampling; never on a
    /// terminal), and the server's roots, which the page may change.
    pub fn options_for(&self, server: &str, tag: Option<&'static str>) -> ClientOptions {
        let mut options = self.client.clone();
        options.tap = Some(log_tap(self.bus.clone(), server.to_owned(), tag));
        options.handlers.elicitation = Some(self.asks.handler(Kind::Elicit, server.to_owned()));
        options.handlers.elicitation_url = false;
        options.handlers.sampling = Some(self.asks.handler(Kind::Sample, server.to_owned()));
        options.handlers.roots = Some(
            self.roots
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(server)
                .cloned()
                .unwrap_or_else(|| Roots::new(Vec::new())),
        );
        options
    }

    /// Server `name`'s roots.
    pub fn roots(&self, name: &str) -> Result<Roots, ApiError> {
        self.entry(name)?;
        self.roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::usage(format!("{name} has no roots")))
    }

    /// Connects server `name` again (its session, if any, closed first).
    pub async fn reconnect(&self, name: &str) -> Result<(), ApiError> {
        self.entry(name)?;
        Ok(self.host.reconnect(name).await?)
    }

    /// Disconnects server `name` (its session closed, its process group with it).
    pub async fn disconnect(&self, name: &str) -> Result<(), ApiError> {
        self.entry(name)?;
        Ok(self.host.disconnect(name).await?)
    }

    /// Disconnects every server.
    pub async fn shutdown(&self) {
        self.host.shutdown().await;
        if let Some(forward) = self
            .forward
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            forward.abort();
        }
    }

    /// The ready session of server `name`, or why there is none (nothing sent).
    pub fn session(&self, name: &str) -> Result<Arc<Session>, ApiError> {
        self.entry(name)?;
        self.host.session(name).map_err(|e| match e {
            HostError::NotReady { state, .. } => {
                ApiError::not_offered(format!("{name} is not ready: {}", shown(&state)))
            }
            other => ApiError::from(other),
        })
    }

    /// The tools server `name` listed (none when it is not ready).
    pub fn tools(&self, name: &str) -> Vec<capable::internal::model::Tool> {
        self.host
            .tools()
            .into_iter()
            .filter(|t| t.server == name)
            .map(|t| t.tool)
            .collect()
    }

    /// Refused when the host's pins withhold `name` of `list` on server `server` (its
    /// definition changed since it was pinned, or it is new and held): nothing is sent.
    pub fn not_withheld(&self, list: ListKind, server: &str, name: &str) -> Result<(), ApiError> {
        if !self
            .host
            .withheld(list, &capable::host::qualify(server, name))
        {
            return Ok(());
        }
        Err(ApiError::not_offered(format!(
            "{name} is withheld: its definition differs from the one pinned (or is new and held); \
             accept it in the Overview first — nothing was sent"
        )))
    }

    /// Accepts the definition `name` of server `server` that waits in the pins, and
    /// reads its list again: it is offered from now on.
    pub async fn accept_pin(self: &Arc<Self>, server: &str, name: &str) -> Result<Value, ApiError> {
        self.entry(server)?;
        let accepted = self
            .host
            .accept_pins(|s, n| s == server && n == name)
            .await?;
        if accepted.is_empty() {
            return Err(ApiError::usage(format!(
                "nothing of {server} named {name:?} waits to be accepted"
            )));
        }
        // The host reads tools and prompts again; the templates are the page's to read.
        tokio::spawn(read_templates(Arc::downgrade(self), server.to_owned()));
        Ok(json!({"accepted": accepted}))
    }

    /// What the page shows of server `name` (its entry of `GET /api/servers`).
    pub fn one_named(&self, name: &str) -> Result<Value, ApiError> {
        Ok(self.one(&self.entry(name)?))
    }

    /// Everything the page shows of every server (`GET /api/servers`).
    pub fn snapshot(&self) -> Value {
        self.entries().iter().map(|e| self.one(e)).collect()
    }

    /// One server for the page: its target in words, its state with the reason, and
    /// once it is ready the `capable inspect --json` report, the capability matrix,
    /// its lists and its stderr.
    fn one(&self, entry: &ConfigEntry) -> Value {
        let name = &entry.name;
        let mut v = json!({ "name": name, "target": describe(entry), "state": "disconnected" });
        let Some(status) = self.host.server(name) else {
            return v;
        };
        v["state"] = json!(state_name(&status.state));
        if let Some(e) = status.state.error() {
            v["reason"] = json!(e.to_string());
            // A server that exited: what it wrote to stderr (first lines and last) for
            // the Stderr tab, and the line that names its error.
            if let ServerError::Session(exited @ capable::Error::ServerExited { stderr, .. }) = e {
                v["stderr"] = json!(stderr);
                v["cause"] = json!(exited.stderr_cause().map(str::trim));
            }
            // An HTTP server that wants a login the page can start.
            let http = matches!(entry.target, Ok(ServerTarget::Http { .. }));
            v["login"] = json!(http && self.oauth.is_some() && e.kind() == ErrorKind::AuthRequired);
        }
        // What the pins hold back: changed or new definitions, each with both sides.
        if let Some(pins) = self.host.pins() {
            let pending: Vec<_> = pins
                .pending()
                .into_iter()
                .filter(|p| p.key().0 == name)
                .collect();
            v["pins"] = json!(pending);
        }
        v["restarts"] = json!(status.restarts);
        if let Some(h) = status.handshake {
            v["handshakeMs"] = json!(h.as_millis() as u64);
        }
        v["listErrors"] = status
            .list_errors
            .iter()
            .map(|(list, e)| json!({"list": list, "error": e.to_string()}))
            .collect();
        let Ok(session) = self.host.session(name) else {
            return v;
        };
        v["inspect"] = session.description();
        v["matrix"] = matrix(session.capabilities());
        let resources: Vec<_> = self
            .host
            .resources()
            .into_iter()
            .filter(|r| r.server == *name)
            .map(|r| r.resource)
            .collect();
        let prompts: Vec<_> = self
            .host
            .prompts()
            .into_iter()
            .filter(|p| p.server == *name)
            .map(|p| p.prompt)
            .collect();
        // MCP Apps: a tool visible only to apps stays out of the list (its view calls
        // it); the page names it apart.
        let (app_only, tools): (Vec<_>, Vec<_>) =
            self.tools(name).into_iter().partition(|t| t.is_app_only());
        v["tools"] = json!(tools);
        v["appOnlyTools"] = app_only.iter().map(|t| json!(t.name)).collect();
        v["resources"] = json!(resources);
        v["prompts"] = json!(prompts);
        v["templates"] = self
            .templates
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .unwrap_or(json!([]));
        v["violations"] = json!(session.violations());
        // How the connection was made (a fallback the protocol expects) is said beside
        // the era; only what went wrong is a notice.
        let (how, notices): (Vec<_>, Vec<_>) = session
            .notices()
            .into_iter()
            .partition(|n| n.is_informational());
        v["connection"] = how.iter().map(|n| json!(n.to_string())).collect();
        v["notices"] = notices.iter().map(|n| json!(n.to_string())).collect();
        v["stderr"] = json!(session.stderr_tail());
        v
    }
}

/// A state's name on the page: a server the host stopped was disconnected (by the
/// page, or as the inspector stops).
fn state_name(state: &ServerState) -> &'static str {
    match state {
        ServerState::Stopped => "disconnected",
        other => other.name(),
    }
}

/// A state in words, as the page names it.
fn shown(state: &ServerState) -> String {
    match state {
        ServerState::Stopped => "disconnected".into(),
        other => other.to_string(),
    }
}

/// The capability matrix exactly as declared: per capability, present, and each of
/// its flags (`null` where the flag does not exist for that capability).
pub fn matrix(caps: &capable::ServerCapabilities) -> Value {
    Capability::ALL
        .iter()
        .map(|c| {
            let d = caps.get(*c);
            let flag = |f: Flag| {
                if c.flags().contains(&f) {
                    json!(d.present && d.flag(f))
                } else {
                    Value::Null
                }
            };
            json!({
                "capability": c.key(),
                "present": d.present,
                "subscribe": flag(Flag::Subscribe),
                "listChanged": flag(Flag::ListChanged),
            })
        })
        .collect()
}

/// A server's target in words, for the page (whose answers have the run's secrets cut
/// out).
fn describe(entry: &ConfigEntry) -> String {
    match &entry.target {
        Ok(ServerTarget::Stdio(c)) => {
            let mut words = vec![c.program.clone()];
            words.extend(c.args.iter().cloned());
            format!("stdio: {}", words.join(" "))
        }
        Ok(ServerTarget::Http { url, .. }) => {
            format!(
                "http: {}",
                capable::internal::http::redact::redact_unparsed(url)
            )
        }
        Err(e) => format!("unusable config entry: {e}"),
    }
}

/// The largest message the log shows whole (bytes).
const MAX_LOGGED: usize = 256 * 1024;
/// How much of a larger one it shows.
const SHOWN_OF_HUGE: usize = 4096;

/// The tap of one connection: each message onto the bus as a `msg` event.
fn log_tap(bus: Bus, server: String, tag: Option<&'static str>) -> Tap {
    Tap::new(move |direction, line| {
        let dir = match direction {
            Direction::Sent => "sent",
            Direction::Received => "received",
        };
        let message = if line.len() > MAX_LOGGED {
            // A huge answer is shown by its start: the log is for reading, and the
            // ring keeps thousands of events.
            let start = String::from_utf8_lossy(&line[..SHOWN_OF_HUGE]);
            json!({"capable": "message too large to log", "bytes": line.len(), "start": start})
        } else {
            serde_json::from_slice::<Value>(line)
                .unwrap_or_else(|_| json!(String::from_utf8_lossy(line)))
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        bus.publish(
            "msg",
            json!({"server": server, "dir": dir, "method": method, "tag": tag, "message": message}),
        );
    })
}

/// Forwards the host's events to the bus until the host is gone; reads a server's
/// resource templates when it becomes ready.
async fn forward(mut events: tokio::sync::broadcast::Receiver<HostEvent>, servers: Weak<Servers>) {
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let Some(servers) = servers.upgrade() else {
            return;
        };
        servers.publish(event);
    }
}

impl Servers {
    /// One host event onto the bus.
    fn publish(self: &Arc<Self>, event: HostEvent) {
        let server = event.server().to_owned();
        let bus = &self.bus;
        match event {
            HostEvent::State { state, .. } => {
                self.templates
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&server);
                if state.is_ready() {
                    // In a task of its own: a slow server never holds up the others'
                    // events.
                    tokio::spawn(read_templates(Arc::downgrade(self), server.clone()));
                }
                let reason = state.error().map(|e| e.to_string());
                bus.publish(
                    "state",
                    json!({"server": server, "state": state_name(&state), "reason": reason}),
                );
            }
            HostEvent::ListChanged { list, .. } => {
                bus.publish("lists", json!({"server": server, "list": list}));
            }
            HostEvent::ListFailed { list, error, .. } => {
                let text = format!("{} could not be listed: {error}", list_name(list));
                bus.publish("notice", json!({"server": server, "text": text}));
            }
            HostEvent::Violation { violation, .. } => {
                bus.publish(
                    "violation",
                    json!({"server": server, "violation": violation}),
                );
            }
            HostEvent::Notice { notice, .. } => {
                bus.publish(
                    "notice",
                    json!({"server": server, "text": notice.to_string()}),
                );
            }
            HostEvent::DefinitionChanged { .. }
            | HostEvent::DefinitionHeld { .. }
            | HostEvent::PinsUnsaved { .. } => {
                bus.publish("pins", json!({"server": server}));
            }
            HostEvent::Stderr { line, .. } => {
                bus.publish("stderr", json!({"server": server, "line": &*line}));
            }
            _ => {}
        }
    }
}

fn list_name(list: ListKind) -> &'static str {
    match list {
        ListKind::Tools => "tools",
        ListKind::Resources => "resources",
        ListKind::Prompts => "prompts",
        _ => "a list",
    }
}

/// Reads server `name`'s templates, when its gating table allows listing them, and
/// keeps them while the same session is up; the page hears of them as a list change.
async fn read_templates(servers: Weak<Servers>, name: String) {
    let Some(session) = servers.upgrade().and_then(|s| s.host.session(&name).ok()) else {
        return;
    };
    let read = if session.check(Method::ListResourceTemplates).is_err() {
        json!([])
    } else {
        match session.list_resource_templates().await {
            // Judged by the pins as tools are: a changed one is held back.
            Ok(list) => match servers.upgrade() {
                Some(s) => json!(s.host.pinned_templates(&name, list)),
                None => return,
            },
            Err(_) => json!([]),
        }
    };
    let Some(servers) = servers.upgrade() else {
        return;
    };
    let current = servers.host.session(&name).ok();
    if current.is_some_and(|c| Arc::ptr_eq(&c, &session)) {
        servers
            .templates
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.clone(), read);
        servers
            .bus
            .publish("lists", json!({"server": name, "list": "templates"}));
    }
}
