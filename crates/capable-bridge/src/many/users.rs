//! The servers of the caller's own login (`user` credentials) as a session of many
//! sees them: while the caller has no token of one, its tools are listed as needing
//! authorization (`_meta["capable/authorization"]`, as the server last listed them to
//! someone who had logged in), and a call of one asks the caller to log in: by a
//! URL-mode elicitation, the call waiting for the login, when the host takes them;
//! else answered with the URL (`-32042`, `credentials/`). Once the caller logged in, the next call
//! connects the server again and goes through; a token the server refuses later asks
//! the caller again the same way (a host that takes URL-mode elicitations by one, the
//! call made anew once the login landed), once per call — refused again, the caller
//! gets the URL, never another elicitation.

use std::sync::Arc;
use std::time::Duration;

use capable::host::Host;
use capable::internal::jsonrpc::Payload;
use capable::internal::Method;
use capable::{Error, ErrorKind, ProgressCallback, RequestOptions};
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Map, Value};

use super::Many;
use crate::credentials::{UserServers, AUTHORIZATION_META};
use crate::policy;
use crate::run_task::call_without_tasks;

/// A request's answer on its way, and the server it went to.
type Routed = (BoxFuture<'static, Result<Payload, Error>>, Option<String>);

/// How long a call waits for its server to connect again after the caller logged in.
const RECONNECT_WAIT: Duration = Duration::from_secs(10);

/// How long a call waits for the login a URL-mode elicitation asked for.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// The answer of a call whose host declined to log in to `server` (or did not in
/// [`LOGIN_WAIT`]).
fn declined(method: Method, server: &str) -> Error {
    crate::forward::answer_error(
        method,
        crate::forward::code::AUTHORIZATION_REQUIRED,
        format!("{server} needs you to log in to it, and the login was declined or did not finish"),
        Some(json!({"server": server})),
    )
}

/// Whether `e` is the server refusing the caller's token (or the gateway having none).
pub(super) fn refused(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::AuthRequired | ErrorKind::AuthFailed)
}

/// The caller's token of `server` dropped, and the caller asked to log in again.
pub(super) async fn ask_again(users: &UserServers, method: Method, server: &str) -> Error {
    if let Some((url, _)) = users.servers.get(server) {
        // A file that cannot be written keeps the refused token until the next write:
        // after a restart it is refused once more, and dropped then.
        let _ = users.users.forget(&users.caller, url);
    }
    users.ask(method, server).await
}

/// The server refused the caller's token mid-session: it is disconnected from this
/// session (later calls ask nothing of it until the caller logged in again), the
/// token dropped, and the caller asked to log in again.
pub(super) async fn refused_now(
    host: &Host,
    users: &UserServers,
    method: Method,
    server: &str,
) -> Error {
    let _ = host.disconnect(server).await;
    ask_again(users, method, server).await
}

/// What a call refused mid-way needs to be made again once the caller logged in anew.
pub(super) struct Again {
    /// The call's params, as they went to the server.
    params: Map<String, Value>,
    /// Its options (a retry's: the first try's timeout, cache policy and progress).
    options: RequestOptions,
    /// How long a task the call runs as may take.
    bound: Duration,
}

impl Again {
    /// What `params`, sent with `options`, needs to be made again (`None`: not a call).
    /// The host's progress callback is shared by both tries (`options`' own is
    /// replaced by one that forwards to it), so the call made anew tells the host its
    /// progress as the first try would have.
    pub(super) fn of(
        method: Method,
        params: &Map<String, Value>,
        options: &mut RequestOptions,
        bound: Duration,
    ) -> Option<Again> {
        if method != Method::CallTool {
            return None;
        }
        let progress = options
            .on_progress
            .take()
            .map(|f| Arc::new(std::sync::Mutex::new(f)));
        options.on_progress = progress.clone().map(forward_progress);
        let options = RequestOptions {
            timeout: options.timeout,
            cache: options.cache,
            pass_input_required: options.pass_input_required,
            on_progress: progress.map(forward_progress),
            tag: options.tag,
        };
        Some(Again {
            params: params.clone(),
            options,
            bound,
        })
    }
}

/// A progress callback that tells `shared`, which more than one try of a call holds.
fn forward_progress(shared: Arc<std::sync::Mutex<ProgressCallback>>) -> ProgressCallback {
    Box::new(move |progress| {
        let mut tell = shared.lock().unwrap_or_else(|e| e.into_inner());
        tell(progress)
    })
}

/// `answer` of `server`, unless it is the server refusing the caller's own token (no
/// refresh helped): then the token is dropped and the caller asked to log in again —
/// a host that takes URL-mode elicitations by one, the call (`again`) made anew once
/// the login landed; any other with the URL. Once for this call: refused again, the
/// caller gets the URL, never another elicitation.
pub(super) async fn unless_refused(
    answer: Result<Payload, Error>,
    users: Option<Arc<UserServers>>,
    host: &Host,
    method: Method,
    server: &str,
    again: Option<Again>,
) -> Result<Payload, Error> {
    let users = match (&answer, users) {
        (Err(e), Some(users)) if refused(e) && users.servers.contains_key(server) => users,
        _ => return answer,
    };
    let (Some(again), Some(_)) = (again, &users.elicit) else {
        return Err(refused_now(host, &users, method, server).await);
    };
    let _ = host.disconnect(server).await;
    let Some((url, _)) = users.servers.get(server).cloned() else {
        return Err(ask_again(&users, method, server).await);
    };
    let _ = users.users.forget(&users.caller, &url);
    match users.elicit(server, LOGIN_WAIT).await {
        Ok(true) if users.users.take_fresh(&users.caller, &url) => {
            connected_then_call(host, &users, method, server, again).await
        }
        Ok(_) => Err(declined(method, server)),
        Err(()) => Err(ask_again(&users, method, server).await),
    }
}

/// The caller logged in to `server` since this session connected it: connected
/// again, then the call (`again`) made; the server refusing the new token too asks
/// the caller again with the URL (never a loop).
async fn connected_then_call(
    host: &Host,
    users: &UserServers,
    method: Method,
    server: &str,
    again: Again,
) -> Result<Payload, Error> {
    let _ = host.reconnect(server).await;
    let ready = async {
        loop {
            if let Ok(session) = host.session(server) {
                return Some(session);
            }
            let settled = host.server(server).is_none_or(|s| s.state.is_settled());
            if settled {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let session = tokio::time::timeout(RECONNECT_WAIT, ready)
        .await
        .ok()
        .flatten();
    let Some(session) = session else {
        return Err(ask_again(users, method, server).await);
    };
    match call_without_tasks(&session, again.params, again.options, again.bound).await {
        Err(e) if refused(&e) => Err(refused_now(host, users, method, server).await),
        answer => answer,
    }
}

impl Many {
    /// A call (`params`) of a tool of a `user` server that is not up for this caller:
    /// connected again and made when the caller logged in since, else answered with
    /// the URL to log in at. `None`: not such a call.
    pub(super) fn needs_login(
        &self,
        method: Method,
        params: &mut Map<String, Value>,
        options: RequestOptions,
    ) -> Option<Routed> {
        if method != Method::CallTool {
            return None;
        }
        let users = self.users.clone()?;
        let asked = params.get("name").and_then(Value::as_str)?.to_owned();
        let server = self.down_server_of(&asked)?;
        let (url, _) = users.servers.get(&server)?.clone();
        let own = self.own_tool_name(&asked).unwrap_or_else(|| {
            let prefix = format!("{server}{}", self.separator);
            asked.strip_prefix(&prefix).unwrap_or(&asked).to_owned()
        });
        params.insert("name".into(), json!(own));
        // The policy first: a call the caller may not make asks for no login.
        let passed =
            match policy::through(self.policy.as_ref(), &server, method, params, &self.audit) {
                Ok(passed) => passed,
                Err(e) => return Some((futures_util::future::ready(Err(e)).boxed(), None)),
            };
        let (host, bound, params) = (self.host.clone(), self.task_bound, params.clone());
        let at = Some(server.clone());
        let call = async move {
            if !users.users.take_fresh(&users.caller, &url) {
                // A host that takes URL-mode elicitations is asked, and the call waits
                // for the login; any other gets the URL in its answer.
                let _ = users.users.forget(&users.caller, &url);
                match users.elicit(&server, LOGIN_WAIT).await {
                    Ok(true) if users.users.take_fresh(&users.caller, &url) => {}
                    Ok(_) => return Err(declined(method, &server)),
                    Err(()) => return Err(ask_again(&users, method, &server).await),
                }
            }
            // Logged in since this session connected it: connected again, then called.
            let again = Again {
                params,
                options,
                bound,
            };
            connected_then_call(&host, &users, method, &server, again).await
        };
        Some((policy::after(passed, method, call.boxed()), at))
    }

    /// Adds to `tools` (server, name, the tool, offered) those of each `user` server
    /// not up for this caller, as it last listed them, marked as needing
    /// authorization; keeps those of each that is up for the next caller.
    pub(super) fn tools_to_log_in(&self, tools: &mut Vec<(String, String, Value, bool)>) {
        let Some(users) = &self.users else {
            return;
        };
        for server in users.servers.keys() {
            if self.host.session(server).is_ok() {
                let listed = tools
                    .iter()
                    .filter(|t| &t.0 == server)
                    .map(|t| t.2.clone())
                    .collect();
                users.users.saw_tools(server, listed);
                continue;
            }
            for mut tool in users.users.tools_of(server) {
                let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else {
                    continue;
                };
                let offered = self.listed(server, Method::ListTools, &tool);
                let mark = json!({"required": true, "server": server});
                match tool.get_mut("_meta").and_then(Value::as_object_mut) {
                    Some(meta) => {
                        meta.insert(AUTHORIZATION_META.into(), mark);
                    }
                    None => tool["_meta"] = json!({ AUTHORIZATION_META: mark }),
                }
                tools.push((server.clone(), name, tool, offered));
            }
        }
    }
}
