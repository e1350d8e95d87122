//! Many servers as one: `capable bridge --config FILE [--only a,b]` serves the library's
//! [`Host`] — every server of the config, started, kept alive and restarted by it — as
//! one server.
//!
//! | the host asks | the bridge |
//! |---|---|
//! | `tools/list`, `prompts/list` | the merged list, each under a name every host accepts (`names.rs`: two servers' `echo` are `a__echo` and `b__echo`, the original in `_meta`), less the tools a server's `allowTools`/`denyTools` keep back and those whose input schema is no schema (each dropped with a notice); no tool says it runs as a task (`execution.taskSupport`): the bridge declares no tasks, and runs a task a tool requires itself |
//! | `resources/list` | every server's resources, URIs as they are (a URI two servers list is the first's, with a notice) |
//! | `resources/templates/list` | every ready server's templates, asked of each |
//! | `tools/call`, `prompts/get` | the owning server, under the name it knows; a tool result over the server's `outputBudget` is cut, with a note; a tool that requires a task runs as one, waited for within `--progress-cap` (`run_task.rs`): the host gets its result |
//! | `resources/read`, `completion/complete` | the server that listed the URI (or whose template it fits), or the prompt's |
//! | `resources/subscribe`, `resources/unsubscribe`; a 2026-07-28 host's `subscriptions/listen` with `resourceSubscriptions` | the server that owns each URI, in its era; refused with the server and why when it did not declare `resources.subscribe` (`relay/fanout.rs`) |
//! | `logging/setLevel` | every server |
//!
//! What the bridge declares is what the servers behind can do together (the core's
//! [`merged`]): a list when one of them has it, always with `listChanged` (servers
//! come, go and change their lists, and the host is told), and `resources.subscribe`
//! when one of them takes subscriptions. It follows the servers: those ready, and those
//! on their way back as they last declared (a 2026-07-28 host reads it anew; a legacy
//! host keeps what `initialize` said). Each server's `timeout` is its own request
//! timeout; `disabled: true` servers are not started.
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the servers started, their declaration, their lists merged, requests on their way |
//! | `names.rs` | the merged names every host accepts (`^[a-zA-Z0-9_-]{1,64}$`) |
//! | `judged.rs` | what the pins judged while the servers started, written to the audit |
//! | `reload.rs` | the servers following the config in force, one reload after the other |
//! | `route.rs` | where a request goes: by merged name, by URI, by a completion's reference |

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::config::ConfigFile;
use capable::host::{Host, HostError, HostEvent, HostOptions};
use capable::internal::jsonrpc::{codes, Payload};
use capable::internal::model::ResourceTemplate;
use capable::internal::server::merge::merged;
use capable::internal::Method;
use capable::internal::ServerCapabilities;
use capable::{Error, RequestOptions, Session};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use futures_util::FutureExt;
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, watch};

use super::audit::Audit;
use super::forward::answer_error;
use super::run_task::call_without_tasks;
use super::upstream;
use crate::credentials::UserServers;
use crate::policy::{self, Policy};
use crate::relay::{Event, Queue};
use crate::reload::Generation;
use capable::ClientOptions;

mod judged;
mod names;
mod reload;
mod route;
mod users;

pub use names::valid_separator;

/// The longest a host's first request waits for the servers' first starts.
const START_WAIT: Duration = Duration::from_secs(5);

/// When no server is ready after [`START_WAIT`] but some are still in their first
/// start, the longest the host waits more for them: a host answered with nothing ready
/// would be offered no tools at all, and a legacy host never learns of a capability
/// declared later. 5 s + 7 s stays inside the 15 s hosts give a server to start.
const NONE_READY_WAIT: Duration = Duration::from_secs(7);

/// The servers of a config, as one (see the module documentation).
pub struct Many {
    host: Arc<Host>,
    /// The host's events, until the relay follows them ([`Many::follow`]).
    events: Option<broadcast::Receiver<HostEvent>>,
    /// What every list, request and result of theirs passes.
    policy: Option<Arc<dyn Policy>>,
    audit: Arc<Audit>,
    /// Template prefixes, by server, as last listed (to route reads of URIs made from
    /// them).
    templates: Arc<Mutex<Vec<(String, String)>>>,
    /// Whether they were learnt yet (a read by template may come before any list).
    templates_learnt: Arc<std::sync::atomic::AtomicBool>,
    /// What each server declared when it was last ready, by name.
    declared: Mutex<BTreeMap<String, (ServerCapabilities, Option<String>)>>,
    /// What was already said to be dropped (a notice once per tool or URI).
    noticed: Mutex<HashSet<String>>,
    /// How long the bridge waits for a task a tool requires (`--progress-cap`).
    task_bound: Duration,
    /// What joins a server's name and an entry's (`names.rs`).
    separator: String,
    /// The tools' names as last listed: each to its server and its own name there.
    tool_names: Mutex<HashMap<String, (String, String)>>,
    /// The same of the prompts.
    prompt_names: Mutex<HashMap<String, (String, String)>>,
    /// The config in force, when it is reloaded: followed from [`Many::follow`] on.
    generation: Option<watch::Receiver<Arc<Generation>>>,
    /// The servers of the config served (`--only`; none: all).
    only: Vec<String>,
    /// The client options every server starts with (before its own timeout).
    client: ClientOptions,
    /// Each server's own request timeout as it was started, until a reload follows them.
    timeouts: Mutex<BTreeMap<String, Option<Duration>>>,
    /// The servers of the caller's own login (`user` credentials), and its logins.
    users: Option<Arc<UserServers>>,
}

impl Many {
    /// Starts the servers of `file` (those of `only`, when given) with `options` (each
    /// with its own timeout), waits until they settled, and serves them.
    pub async fn start(
        file: &ConfigFile,
        only: &[String],
        options: HostOptions,
        policy: Option<Arc<dyn Policy>>,
        audit: Arc<Audit>,
        separator: &str,
    ) -> Many {
        let host = Host::new(options.clone());
        let mut timeouts = BTreeMap::new();
        // What the pins judged as the servers started is evidence, kept for the audit.
        let mut starting = host.events();
        for entry in &file.servers {
            if !only.is_empty() && !only.contains(&entry.name) {
                continue;
            }
            let disabled = file.policies.get(&entry.name).is_some_and(|p| p.disabled);
            if disabled {
                // Disabled by the config, or by the gateway with why (`replicas.rs`).
                let why = entry.target.as_ref().err().map(|e| e.to_string());
                let detail = why.map_or_else(|| json!({}), |why| json!({"error": why}));
                audit.state(&entry.name, "disabled", detail);
                continue;
            }
            let timeout = policy.as_ref().and_then(|p| p.request_timeout(&entry.name));
            timeouts.insert(entry.name.clone(), timeout);
            let added = match (&entry.target, timeout) {
                (Ok(target), timeout) => {
                    // Its questions name it; its own timeout, when it has one.
                    let mut client = upstream::for_server(&options.client, &entry.name);
                    if let Some(timeout) = timeout {
                        client = client.with_request_timeout(timeout);
                    }
                    match host.add_with(&entry.name, target.clone(), client) {
                        // Listed as refused, with why, as any entry it cannot take.
                        Err(HostError::InvalidName { .. }) => host.add_entry(entry),
                        added => added,
                    }
                }
                (Err(_), _) => host.add_entry(entry),
            };
            if let Err(e) = added {
                audit.state(&entry.name, "refused", json!({"error": e.to_string()}));
            }
        }
        // The host is answered once every server has come out of its first start (or
        // after START_WAIT): a server that keeps crashing, or one slow to start, joins
        // later, its lists announced with `list_changed`, its restarts in the audit.
        let _ = tokio::time::timeout(START_WAIT, host.started()).await;
        if !host.servers().iter().any(|s| s.state.is_ready()) {
            let _ = tokio::time::timeout(NONE_READY_WAIT, host.started()).await;
        }
        // What happened while they started is the state the host is offered; only what
        // comes after is news.
        let events = host.events();
        judged::audit_pins_judged(&host, &mut starting, &audit);
        drop(starting);
        for status in host.servers() {
            let more = match status.state.error() {
                Some(e) => json!({"error": e.to_string()}),
                None => json!({}),
            };
            audit.state(&status.name, status.state.name(), more);
        }
        Many {
            task_bound: options.client.config.timeouts.progress_cap,
            host: Arc::new(host),
            events: Some(events),
            policy,
            audit,
            templates: Arc::new(Mutex::new(Vec::new())),
            templates_learnt: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            declared: Mutex::new(BTreeMap::new()),
            noticed: Mutex::new(HashSet::new()),
            separator: separator.to_owned(),
            tool_names: Mutex::default(),
            prompt_names: Mutex::default(),
            generation: None,
            only: only.to_vec(),
            client: options.client,
            timeouts: Mutex::new(timeouts),
            users: None,
        }
    }

    /// The servers of the caller's own login, whose calls without a token ask the
    /// caller to log in (`user.rs`).
    pub fn users(&mut self, users: Option<UserServers>) {
        self.users = users.map(Arc::new);
    }

    /// Follows the config in force from now on (a reload): each new one is applied to
    /// these servers as it comes (`reload.rs`), and the host told of the lists its
    /// policy changed ([`Many::follow`]).
    pub fn reloading(&mut self, generation: watch::Receiver<Arc<Generation>>) {
        let timeouts =
            std::mem::take(&mut *self.timeouts.lock().unwrap_or_else(|e| e.into_inner()));
        let applier = reload::Applier {
            host: Arc::downgrade(&self.host),
            policy: self.policy.clone(),
            client: self.client.clone(),
            only: self.only.clone(),
            timeouts,
        };
        tokio::spawn(applier.run(generation.clone()));
        self.generation = Some(generation);
    }

    /// What the servers can do together ([`merged`]), and their instructions, each
    /// under its server's name: of the servers ready, and of those on their way back
    /// (as they last declared); not of those stopped or given up.
    pub fn declaration(&self) -> (ServerCapabilities, Option<String>) {
        let mut known = self.declared.lock().unwrap_or_else(|e| e.into_inner());
        let servers = self.host.servers();
        for status in &servers {
            match self.host.session(&status.name) {
                Ok(session) => {
                    let text = session.instructions().map(str::to_owned);
                    let declared = (session.capabilities().clone(), text);
                    known.insert(status.name.clone(), declared);
                }
                Err(_) if status.state.is_settled() => {
                    known.remove(&status.name);
                }
                Err(_) => {}
            }
        }
        known.retain(|name, _| servers.iter().any(|s| s.name == *name));
        let capabilities = merged(known.values().map(|(caps, _)| caps));
        let instructions: Vec<String> = servers
            .iter()
            .filter_map(|s| Some(format!("{}: {}", s.name, known.get(&s.name)?.1.as_ref()?)))
            .collect();
        let instructions = (!instructions.is_empty()).then(|| instructions.join("\n"));
        (capabilities, instructions)
    }

    /// Follows the servers' events on `queue` (from their first start on; once).
    pub fn follow(&mut self, queue: &mut Queue) {
        let Some(events) = self.events.take() else {
            return;
        };
        // Their end (the host is gone) ends the stream.
        let events = stream::unfold(events, |mut events| async move {
            match events.recv().await {
                Err(broadcast::error::RecvError::Closed) => None,
                event => Some((Event::Many(event), events)),
            }
        });
        queue.follow(events.boxed());
        if let Some(generation) = self.generation.take() {
            // Each config in force, as it comes (the bridge stopping ends it).
            let reloads = stream::unfold(generation, |mut generation| async move {
                generation.changed().await.ok()?;
                let now = generation.borrow_and_update().clone();
                Some((Event::Reloaded(now), generation))
            });
            queue.follow(reloads.boxed());
        }
    }

    /// Every ready server's session.
    pub fn sessions(&self) -> Vec<Arc<Session>> {
        self.host
            .servers()
            .iter()
            .filter_map(|s| self.host.session(&s.name).ok())
            .collect()
    }

    /// One host request on its way (see the module documentation): its answer, as a
    /// legacy result (the relay adds what a 2026-07-28 host must get), and the server
    /// it went to (`None`: the bridge answers it, or it went to every server).
    pub fn exchange(
        &self,
        method: Method,
        mut params: Map<String, Value>,
        mut options: RequestOptions,
    ) -> (BoxFuture<'static, Result<Payload, Error>>, Option<String>) {
        let answered = |result: Value| {
            let payload = Payload::from_json(result.to_string().into_bytes());
            (futures_util::future::ready(Ok(payload)).boxed(), None)
        };
        match method {
            Method::ListTools => return answered(self.tools()),
            Method::ListResources => return answered(self.resources()),
            Method::ListPrompts => return answered(self.prompts()),
            Method::ListResourceTemplates => return (self.all_templates(), None),
            Method::SetLoggingLevel => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info")
                    .to_owned();
                let sessions = self.sessions();
                let every = async move {
                    for session in sessions {
                        if session.check(Method::SetLoggingLevel).is_ok() {
                            let _ = session.set_logging_level(&level).await;
                        }
                    }
                    Ok(Payload::from_json(b"{}".to_vec()))
                };
                return (every.boxed(), None);
            }
            _ => {}
        }
        let routed = match method {
            Method::CallTool | Method::GetPrompt => self.by_name(method, &mut params, "name"),
            Method::Complete => self.completion(&mut params),
            _ => params
                .get("uri")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .map_or_else(
                    || Err(not_offered(method, "no uri")),
                    |uri| self.by_uri(method, &uri),
                ),
        };
        let (server, session) = match routed {
            Ok(routed) => routed,
            // A read by template before the host listed any: the templates are learnt
            // first, then the read is routed.
            Err(_) if method == Method::ReadResource && !self.templates_learnt() => {
                return (self.read_after_learning(params, options), None);
            }
            Err(e) => {
                if let Some(login) = self.needs_login(method, &mut params, options) {
                    return login;
                }
                return (futures_util::future::ready(Err(e)).boxed(), None);
            }
        };
        let audit = &self.audit;
        let policy =
            match policy::through(self.policy.as_ref(), &server, method, &mut params, audit) {
                Ok(policy) => policy,
                // Refused by the policy: the bridge answers it, the server never hears of it.
                Err(e) => return (futures_util::future::ready(Err(e)).boxed(), None),
            };
        let bound = self.task_bound;
        let at = Some(server.clone());
        // A `user` server refusing the caller's own token asks the caller again.
        let (users, host) = (self.users.clone(), self.host.clone());
        // What the call needs to be made again after a login anew (a user server's).
        let again = users
            .as_ref()
            .filter(|u| u.servers.contains_key(&server))
            .and_then(|_| users::Again::of(method, &params, &mut options, bound));
        let answer = async move {
            let answer = match method {
                Method::CallTool => call_without_tasks(&session, params, options, bound).await,
                _ => session.request_payload(method, &params, options).await,
            };
            users::unless_refused(answer, users, &host, method, &server, again).await
        };
        (policy::after(policy, method, answer.boxed()), at)
    }

    /// Whether `item` of `server`'s list of `method` is offered (the policy's word).
    fn listed(&self, server: &str, method: Method, item: &Value) -> bool {
        policy::listed(self.policy.as_ref(), server, method, || item.clone())
    }

    /// A notice, once for each `key`.
    pub(crate) fn notice_once(&self, key: String, server: &str, notice: &str) {
        if self
            .noticed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key)
        {
            self.notice(server, notice);
        }
    }

    /// A notice about `server`, in the audit.
    pub(crate) fn notice(&self, server: &str, notice: &str) {
        self.audit.record(
            "notice",
            json!({"side": "server", "server": server, "level": "warning", "notice": notice}),
        );
    }

    fn tools(&self) -> Value {
        let mut tools = Vec::new();
        for t in self.host.tools() {
            let listed = serde_json::to_value(&t.tool).unwrap_or(Value::Null);
            // Named among every tool, offered to this caller or not: a name is the
            // same for every caller, and a call of one it may not make is refused
            // by its rule, not as unknown.
            let offered = self.listed(&t.server, Method::ListTools, &listed);
            let schema = t.tool.input_schema_value();
            let usable = schema.get("type").and_then(Value::as_str) == Some("object")
                && capable::compile_schema(&schema).is_ok();
            if !usable {
                let notice = format!(
                    "dropped tool {:?}: its inputSchema is not a usable JSON Schema of an object",
                    t.tool.name
                );
                self.notice_once(format!("tool {}", t.name), &t.server, &notice);
                continue;
            }
            let mut tool = listed;
            without_task_support(&mut tool);
            tools.push((t.server, t.tool.name, tool, offered));
        }
        self.tools_to_log_in(&mut tools);
        json!({"tools": self.named(tools, &self.tool_names)})
    }

    /// `entries` (server, name, the entry, whether it is offered to the caller) under
    /// the names every host accepts (`names.rs`), their originals in `_meta`; `routes`
    /// learns them all, the list holds those offered.
    fn named(
        &self,
        entries: Vec<(String, String, Value, bool)>,
        routes: &Mutex<HashMap<String, (String, String)>>,
    ) -> Vec<Value> {
        let pairs: Vec<(&str, &str)> = entries
            .iter()
            .map(|(server, name, _, _)| (server.as_str(), name.as_str()))
            .collect();
        let named = names::assign(&pairs, &self.separator);
        for said in &named.said {
            self.notice_once(said.clone(), "bridge", said);
        }
        let mut learnt = HashMap::with_capacity(entries.len());
        let mut listed = Vec::with_capacity(entries.len());
        for ((server, name, mut entry, offered), given) in entries.into_iter().zip(named.names) {
            let Some(given) = given else { continue };
            if !offered {
                learnt.insert(given, (server, name));
                continue;
            }
            entry["name"] = json!(given);
            let origin = json!({"server": server, "name": name});
            match entry.get_mut("_meta").and_then(Value::as_object_mut) {
                Some(meta) => {
                    meta.insert(names::ORIGIN.into(), origin);
                }
                None => entry["_meta"] = json!({ names::ORIGIN: origin }),
            }
            learnt.insert(given, (server, name));
            listed.push(entry);
        }
        *routes.lock().unwrap_or_else(|e| e.into_inner()) = learnt;
        listed
    }

    fn resources(&self) -> Value {
        let mut seen = HashSet::new();
        let mut resources = Vec::new();
        for r in self.host.resources() {
            if !seen.insert(r.resource.uri.clone()) {
                let notice = format!(
                    "dropped resource {:?}: another server lists it first",
                    r.resource.uri
                );
                self.notice_once(format!("resource {}", r.name), &r.server, &notice);
                continue;
            }
            let mut resource = serde_json::to_value(&r.resource).unwrap_or(Value::Null);
            if !self.listed(&r.server, Method::ListResources, &resource) {
                continue;
            }
            resource["name"] = json!(capable::host::qualify(&r.server, &r.resource.name));
            resources.push(resource);
        }
        json!({"resources": resources})
    }

    fn prompts(&self) -> Value {
        let prompts: Vec<(String, String, Value, bool)> = self
            .host
            .prompts()
            .into_iter()
            .map(|p| {
                let prompt = serde_json::to_value(&p.prompt).unwrap_or(Value::Null);
                let offered = self.listed(&p.server, Method::ListPrompts, &prompt);
                (p.server, p.prompt.name, prompt, offered)
            })
            .collect();
        json!({"prompts": self.named(prompts, &self.prompt_names)})
    }

    /// Every ready server's templates, asked of each; their prefixes kept to route
    /// reads.
    fn all_templates(&self) -> BoxFuture<'static, Result<Payload, Error>> {
        let servers: Vec<(String, Arc<Session>)> = self
            .host
            .servers()
            .into_iter()
            .filter_map(|s| Some((s.name.clone(), self.host.session(&s.name).ok()?)))
            .collect();
        let kept = self.templates.clone();
        let learnt = self.templates_learnt.clone();
        let policy = self.policy.clone();
        let host = self.host.clone();
        async move {
            let mut all: Vec<ResourceTemplate> = Vec::new();
            let mut prefixes = Vec::new();
            for (name, session) in servers {
                if session.check(Method::ListResourceTemplates).is_err() {
                    continue;
                }
                if let Ok(templates) = session.list_resource_templates().await {
                    // A template changed since it was pinned is left out (evidence in
                    // the audit): no read is routed by it either.
                    for t in host.pinned_templates(&name, templates) {
                        let method = Method::ListResourceTemplates;
                        let item = || serde_json::to_value(&t).unwrap_or(Value::Null);
                        if !policy::listed(policy.as_ref(), &name, method, item) {
                            continue;
                        }
                        let prefix = t.uri_template.split('{').next().unwrap_or("").to_owned();
                        prefixes.push((prefix, name.clone()));
                        all.push(t);
                    }
                }
            }
            *kept.lock().unwrap_or_else(|e| e.into_inner()) = prefixes;
            learnt.store(true, std::sync::atomic::Ordering::Release);
            let result = json!({"resourceTemplates": all});
            Ok(Payload::from_json(result.to_string().into_bytes()))
        }
        .boxed()
    }

    /// Whether the servers' templates were learnt (a `resources/templates/list`).
    fn templates_learnt(&self) -> bool {
        self.templates_learnt
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// A read routed once the servers' templates are learnt.
    fn read_after_learning(
        &self,
        params: Map<String, Value>,
        options: RequestOptions,
    ) -> BoxFuture<'static, Result<Payload, Error>> {
        let learn = self.all_templates();
        let (host, templates) = (self.host.clone(), self.templates.clone());
        let policy = self.policy.clone();
        let audit = self.audit.clone();
        let method = Method::ReadResource;
        let mut params = params;
        async move {
            let _ = learn.await;
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
            let (server, session) = route::by_uri_learnt(&host, &templates, method, uri)?;
            let after = policy::through(policy.as_ref(), &server, method, &mut params, &audit)?;
            let answer = session.request_payload(method, &params, options).await;
            let answer = futures_util::future::ready(answer).boxed();
            policy::after(after, method, answer).await
        }
        .boxed()
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        self.host.shutdown().await;
    }
}

/// A request for something no server of the bridge offers.
pub(super) fn not_offered(method: Method, why: &str) -> Error {
    answer_error(method, codes::INVALID_PARAMS, why.to_owned(), None)
}

/// A tool as many servers as one list it: its `execution.taskSupport` left out (the
/// bridge declares no tasks and runs a task the tool requires itself), and `execution`
/// with it when nothing else is in it.
fn without_task_support(tool: &mut Value) {
    let Some(fields) = tool.as_object_mut() else {
        return;
    };
    let empty = match fields.get_mut("execution").and_then(Value::as_object_mut) {
        Some(execution) => {
            execution.remove("taskSupport");
            execution.is_empty()
        }
        None => return,
    };
    if empty {
        fields.remove("execution");
    }
}
