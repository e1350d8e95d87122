//! The servers the inspector shows: exactly those of the config or the command line
//! given at start (no endpoint can add one, so no request can start a process), each
//! connected through its own one-server [`Host`] so it has the host's states with
//! their reasons, its lists and its events, and can be disconnected and connected
//! again on its own.
//!
//! Every message of every connection goes through a [`Tap`] onto the event bus (the
//! page's message log), scrubbed of the secrets capable was given. A server is never
//! restarted behind the user's back: a crash shows as `failed` with its reason and
//! the user reconnects.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::config::{ConfigEntry, ServerTarget};
use capable::core::model::ResourceTemplate;
use capable::core::restart::RestartPolicy;
use capable::host::{Host, HostEvent, HostOptions, ListKind, OAuthProvider, ServerState};
use capable::{Capability, ClientOptions, Direction, Flag, Method, Session, Tap};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::elicitations::Elicitations;
use super::events::Bus;

/// One server of the inspector.
pub struct Entry {
    /// Its name (the config's, or made from the command line).
    pub entry: ConfigEntry,
    /// Held by connect and disconnect, so they run one at a time.
    op: tokio::sync::Mutex<()>,
    /// Held only to look or to swap.
    conn: tokio::sync::Mutex<Option<Conn>>,
    /// Its resource templates, read once per connection (the host keeps no list of
    /// them).
    templates: Arc<Mutex<Option<Value>>>,
}

/// A live connection: the host that runs it and the task that forwards its events.
struct Conn {
    host: Arc<Host>,
    forward: JoinHandle<()>,
}

/// Every server, and how to connect them.
pub struct Servers {
    entries: Vec<Arc<Entry>>,
    bus: Bus,
    /// Requests for input, answered in the page.
    pub elicitations: Elicitations,
    options: ClientOptions,
    timeout: Duration,
    oauth: Option<OAuthProvider>,
}

/// Why a server command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerLookup {
    /// No server of that name was given at start.
    #[error("no server named {0:?} was given to capable ui")]
    Unknown(String),
    /// The server is not connected (its state says why).
    #[error("{name} is not ready: {state}")]
    NotReady {
        /// The server.
        name: String,
        /// Its state in words.
        state: String,
    },
}

impl Servers {
    /// The inspector's servers, not yet connected.
    pub fn new(
        entries: Vec<ConfigEntry>,
        bus: Bus,
        options: ClientOptions,
        timeout: Duration,
        oauth: Option<OAuthProvider>,
    ) -> Servers {
        let entries = entries
            .into_iter()
            .map(|entry| {
                Arc::new(Entry {
                    entry,
                    op: tokio::sync::Mutex::new(()),
                    conn: tokio::sync::Mutex::new(None),
                    templates: Arc::new(Mutex::new(None)),
                })
            })
            .collect();
        Servers {
            entries,
            elicitations: Elicitations::new(bus.clone()),
            bus,
            // The page follows tasks (their statuses, cancel): it says so.
            options: options.with_tasks(),
            timeout,
            oauth,
        }
    }

    /// How HTTP servers are authorized: with the tokens `capable auth login` stored.
    pub fn oauth(&self) -> Option<&OAuthProvider> {
        self.oauth.as_ref()
    }

    /// The server named `name`.
    pub fn get(&self, name: &str) -> Result<Arc<Entry>, ServerLookup> {
        self.entries
            .iter()
            .find(|e| e.entry.name == name)
            .cloned()
            .ok_or_else(|| ServerLookup::Unknown(name.to_owned()))
    }

    /// Every server, in the order given.
    pub fn all(&self) -> &[Arc<Entry>] {
        &self.entries
    }

    /// The target of a server, to connect a session of its own (the audit does).
    pub fn target(&self, name: &str) -> Result<ServerTarget, String> {
        let entry = self.get(name).map_err(|e| e.to_string())?;
        entry.entry.target.clone().map_err(|e| e.to_string())
    }

    /// Client options for one connection of `server`: the run's, with the message-log
    /// tap (messages tagged `tag`, e.g. `audit` for the audit's own session), and
    /// requests for input answered in the page (never on the terminal).
    pub fn options_for(&self, server: &str, tag: Option<&'static str>) -> ClientOptions {
        let mut options = self.options.clone();
        options.tap = Some(log_tap(self.bus.clone(), server.to_owned(), tag));
        options.handlers.elicitation = Some(self.elicitations.handler(server.to_owned()));
        options.handlers.elicitation_url = false;
        options
    }

    /// The request timeout of the run (`--timeout`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// (Re)connects `entry`: a connection it has is shut down first. Commands on one
    /// server run one at a time; the page's reads of its state are never held up by
    /// a shutdown in progress.
    pub async fn connect(&self, entry: &Arc<Entry>) {
        let _one_at_a_time = entry.op.lock().await;
        let old = entry.conn.lock().await.take();
        if let Some(old) = old {
            old.stop().await;
        }
        *entry.templates.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let host = Arc::new(Host::new(HostOptions {
            client: self.options.clone(),
            restart: RestartPolicy::never(),
            connect_timeout: Some(self.timeout),
            oauth: self.oauth.clone(),
            ..HostOptions::default()
        }));
        // Subscribed before the server is added: its `starting` is not missed.
        let events = host.events();
        let added = match &entry.entry.target {
            Ok(target) => host.add_with(
                &entry.entry.name,
                target.clone(),
                self.options_for(&entry.entry.name, None),
            ),
            Err(_) => host.add_entry(&entry.entry),
        };
        if let Err(e) = added {
            self.bus.publish(
                "state",
                json!({"server": entry.entry.name, "state": "refused", "reason": e.to_string()}),
            );
        }
        let forward = tokio::spawn(forward(
            events,
            self.bus.clone(),
            host.clone(),
            entry.templates.clone(),
        ));
        *entry.conn.lock().await = Some(Conn { host, forward });
    }

    /// Disconnects `entry` (its session closed, its process group with it).
    pub async fn disconnect(&self, entry: &Arc<Entry>) {
        let _one_at_a_time = entry.op.lock().await;
        let old = entry.conn.lock().await.take();
        if let Some(old) = old {
            old.stop().await;
        }
        self.bus.publish(
            "state",
            json!({"server": entry.entry.name, "state": "disconnected"}),
        );
    }

    /// Disconnects every server.
    pub async fn shutdown(&self) {
        let stops = self.entries.iter().map(|e| async move {
            let _one_at_a_time = e.op.lock().await;
            let old = e.conn.lock().await.take();
            if let Some(old) = old {
                old.stop().await;
            }
        });
        futures_util::future::join_all(stops).await;
    }

    /// The ready session of server `name`.
    pub async fn session(&self, name: &str) -> Result<Arc<Session>, ServerLookup> {
        let entry = self.get(name)?;
        let conn = entry.conn.lock().await;
        let not_ready = |state: String| ServerLookup::NotReady {
            name: name.to_owned(),
            state,
        };
        let Some(conn) = conn.as_ref() else {
            return Err(not_ready("disconnected".into()));
        };
        conn.host.session(name).map_err(|e| match e {
            capable::host::HostError::NotReady { state, .. } => not_ready(state.to_string()),
            other => not_ready(other.to_string()),
        })
    }

    /// The tools server `name` listed (none when it is not connected).
    pub async fn tools(&self, name: &str) -> Vec<capable::core::model::Tool> {
        let Ok(entry) = self.get(name) else {
            return Vec::new();
        };
        let conn = entry.conn.lock().await;
        conn.as_ref()
            .map(|c| c.host.tools().into_iter().map(|t| t.tool).collect())
            .unwrap_or_default()
    }

    /// Everything the page shows of every server (`GET /api/servers`).
    pub async fn snapshot(&self) -> Value {
        let mut out = Vec::new();
        for entry in &self.entries {
            out.push(entry.snapshot().await);
        }
        Value::Array(out)
    }
}

impl Conn {
    async fn stop(self) {
        self.host.shutdown().await;
        drop(self.host);
        // The forwarder ends once the host's last sender is gone; its `stopped` is
        // published before anything of a new connection.
        let mut forward = self.forward;
        if tokio::time::timeout(Duration::from_secs(2), &mut forward)
            .await
            .is_err()
        {
            forward.abort();
        }
    }
}

impl Entry {
    /// This server for the page: its target in words, its state with the reason, and
    /// once connected the `capable inspect --json` report, the capability matrix, its
    /// lists and its stderr.
    async fn snapshot(&self) -> Value {
        let name = &self.entry.name;
        let mut v =
            json!({ "name": name, "target": describe(&self.entry), "state": "disconnected" });
        let conn = self.conn.lock().await;
        let Some(conn) = conn.as_ref() else {
            return v;
        };
        let Some(status) = conn.host.server(name) else {
            return v;
        };
        v["state"] = json!(status.state.name());
        if let Some(e) = status.state.error() {
            v["reason"] = json!(e.to_string());
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
        let Ok(session) = conn.host.session(name) else {
            return v;
        };
        v["inspect"] = session.description();
        v["matrix"] = matrix(session.capabilities());
        let tools: Vec<_> = conn.host.tools().into_iter().map(|t| t.tool).collect();
        let resources: Vec<_> = conn
            .host
            .resources()
            .into_iter()
            .map(|r| r.resource)
            .collect();
        let prompts: Vec<_> = conn.host.prompts().into_iter().map(|p| p.prompt).collect();
        v["tools"] = json!(tools);
        v["resources"] = json!(resources);
        v["prompts"] = json!(prompts);
        v["templates"] = self
            .templates
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or(json!([]));
        v["violations"] = session
            .violations()
            .iter()
            .map(crate::output::violation)
            .collect();
        v["notices"] = session
            .notices()
            .iter()
            .map(|n| json!(n.to_string()))
            .collect();
        v["stderr"] = json!(session.stderr_tail());
        v
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

/// A server's target in words, without its secrets (the page shows it).
fn describe(entry: &ConfigEntry) -> String {
    let text = match &entry.target {
        Ok(ServerTarget::Stdio(c)) => {
            let mut words = vec![c.program.clone()];
            words.extend(c.args.iter().cloned());
            format!("stdio: {}", words.join(" "))
        }
        Ok(ServerTarget::Http { url, .. }) => {
            format!(
                "http: {}",
                capable::core::http::redact::redact_unparsed(url)
            )
        }
        Err(e) => format!("unusable config entry: {e}"),
    };
    crate::secrets::scrub(&text).into_owned()
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

/// Forwards one connection's host events to the bus until the host is gone; reads the
/// resource templates when the server becomes ready.
async fn forward(
    mut events: tokio::sync::broadcast::Receiver<HostEvent>,
    bus: Bus,
    host: Arc<Host>,
    templates: Arc<Mutex<Option<Value>>>,
) {
    // Only a weak hold: the connection's owner decides when the host goes.
    let weak = Arc::downgrade(&host);
    drop(host);
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let server = event.server().to_owned();
        match event {
            HostEvent::State { state, .. } => {
                if matches!(state, ServerState::Ready) {
                    if let Some(session) = weak.upgrade().and_then(|h| h.session(&server).ok()) {
                        let read = read_templates(&session).await;
                        *templates.lock().unwrap_or_else(|e| e.into_inner()) = Some(read);
                    }
                }
                let reason = state.error().map(|e| e.to_string());
                bus.publish(
                    "state",
                    json!({"server": server, "state": state.name(), "reason": reason}),
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
                    json!({"server": server, "violation": crate::output::violation(&violation)}),
                );
            }
            HostEvent::Notice { notice, .. } => {
                bus.publish(
                    "notice",
                    json!({"server": server, "text": notice.to_string()}),
                );
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

/// The templates, when the server's gating table allows listing them.
async fn read_templates(session: &Session) -> Value {
    if session.check(Method::ListResourceTemplates).is_err() {
        return json!([]);
    }
    match session.list_resource_templates().await {
        Ok(list) => json!(list.into_iter().collect::<Vec<ResourceTemplate>>()),
        Err(_) => json!([]),
    }
}
