//! The one policy seam: what the bridge asks before a host's request reaches a server,
//! as a server's result goes back, and of each item of a server's list — for one server
//! and for many alike, once per request, at the point where the server is known, and
//! always knowing who is calling.
//!
//! | hook | when | may |
//! |---|---|---|
//! | [`Policy::on_list`] | each item of a server's `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` | keep it back (from this caller) |
//! | [`Policy::on_request`] | a host's request on its way to a server (params with the server's own names) | allow it, edit its params, deny it (`-32602`) or hold it back for a while (`-32011`, HTTP `429`); nothing is sent unless allowed |
//! | [`Policy::on_request_shared`] | a request `on_request` allowed, before it is sent: what only a store the replicas share can say (a global rate limit) | the same as `on_request`, later (awaited, bounded by the store's timeout) |
//! | [`Policy::on_end`] | a request it allowed has ended (answered, failed, cancelled) | count it out |
//! | [`Policy::on_result`] | a server's result on its way back | replace it |
//! | [`Policy::request_timeout`] | a server connected | give it its own request timeout |
//!
//! The caller is the [`Caller`] the gateway verified (`--auth-issuer`: issuer, subject,
//! client, scopes, groups), the same for every request of a session; `None` where
//! nobody logs in (stdio, a listener without an issuer). [`Policy::wants_callers`] says
//! when a policy cannot work without one: such a bridge refuses to start.
//!
//! [`Policy::inspects`] says which methods a policy looks at: the others pass as they
//! came, never decoded (the bridge forwards params and results as bytes). The config's
//! `allowTools`, `denyTools`, `timeout`, `outputBudget`, `access` and `rateLimit` are
//! the first policy ([`ConfigPolicy`], `config.rs`, with its limits in `limits.rs`).
//!
//! ```
//! use std::sync::Arc;
//! use capable::internal::Method;
//! use capable_bridge::{BridgeConfig, Caller, Connector, Policy, Upstream, Verdict};
//! use serde_json::{Map, Value};
//!
//! /// Tools whose name starts with `delete_` are neither listed nor called, but by
//! /// the subject `root`.
//! struct NoDeletes;
//!
//! fn may(name: &str, caller: Option<&Caller>) -> bool {
//!     !name.starts_with("delete_") || caller.is_some_and(|c| c.subject == "root")
//! }
//!
//! impl Policy for NoDeletes {
//!     fn inspects(&self, _server: &str, method: Method) -> bool {
//!         matches!(method, Method::ListTools | Method::CallTool)
//!     }
//!     fn on_list(&self, _server: &str, _method: Method, tool: &Value, caller: Option<&Caller>) -> bool {
//!         may(tool["name"].as_str().unwrap_or(""), caller)
//!     }
//!     fn on_request(
//!         &self, _server: &str, _method: Method, params: &mut Map<String, Value>, caller: Option<&Caller>,
//!     ) -> Verdict {
//!         match params.get("name").and_then(Value::as_str) {
//!             Some(name) if !may(name, caller) => Verdict::Deny(format!("{name} is not offered")),
//!             _ => Verdict::Allow,
//!         }
//!     }
//! }
//!
//! # fn config(connect: Connector) -> BridgeConfig {
//! let mut config = BridgeConfig::new(Upstream::One { name: "docs".into(), connect });
//! config.policy = Some(Arc::new(NoDeletes));
//! # config }
//! ```

mod config;
mod limits;
mod shared;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::{codes, Payload};
use capable::internal::Method;
use capable::Error;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Map, Value};

pub use self::config::ConfigPolicy;
pub use self::shared::Shared;
use crate::audit::Audit;
use crate::forward::{answer_error, code, Forwarded};

/// What a policy says of a host's request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// It goes on (with its params as the policy left them).
    Allow,
    /// It is refused with these words (`-32602`); the server never sees it.
    Deny(String),
    /// Not now: the caller asked too much (`-32011` with `data.retryAfter` in seconds;
    /// over HTTP, `429` with `Retry-After`). The server never sees it.
    Limited {
        /// How long until a request may pass again.
        retry_after: Duration,
        /// Which limit, in words.
        why: String,
    },
}

/// What the bridge asks of its policy (see the module documentation). Every hook has
/// a default that lets everything through, so a policy implements only what it needs.
pub trait Policy: Send + Sync + 'static {
    /// Whether requests of `method` to `server`, and their results, are looked at
    /// (list methods: whether the list's items are). Those that are not pass
    /// untouched, never decoded. Default: all.
    fn inspects(&self, server: &str, method: Method) -> bool {
        let _ = (server, method);
        true
    }

    /// Whether `item` of `server`'s list (`method`: `tools/list`, `prompts/list`,
    /// `resources/list` or `resources/templates/list`), as the server listed it, is
    /// offered to `caller`.
    fn on_list(&self, server: &str, method: Method, item: &Value, caller: Option<&Caller>) -> bool {
        let _ = (server, method, item, caller);
        true
    }

    /// `caller`'s request of `method` on its way to `server`: `params` as the server
    /// will get them (a tool's or prompt's own name, not the bridge's `server/name`);
    /// edit them to rewrite the request.
    fn on_request(
        &self,
        server: &str,
        method: Method,
        params: &mut Map<String, Value>,
        caller: Option<&Caller>,
    ) -> Verdict {
        let _ = (server, method, params, caller);
        Verdict::Allow
    }

    /// What of `caller`'s request of `method` to `server` only a store shared by
    /// every replica can judge (a rate limit counted across them), once
    /// [`on_request`](Policy::on_request) allowed it: a future the bridge awaits
    /// before anything is sent (`None`, the default: nothing to ask). Its
    /// [`Shared::held`] is kept while the request runs and dropped as it ends.
    fn on_request_shared(
        &self,
        server: &str,
        method: Method,
        caller: Option<&Caller>,
    ) -> Option<BoxFuture<'static, Shared>> {
        let _ = (server, method, caller);
        None
    }

    /// A request [`on_request`](Policy::on_request) allowed has ended: answered,
    /// failed, or cancelled before its answer (once, whichever).
    fn on_end(&self, server: &str, method: Method, caller: Option<&Caller>) {
        let _ = (server, method, caller);
    }

    /// `server`'s result to `method`, on its way back to the host.
    fn on_result(&self, server: &str, method: Method, result: Payload) -> Payload {
        let _ = (server, method);
        result
    }

    /// `server`'s own request timeout (`None`: the bridge's).
    fn request_timeout(&self, server: &str) -> Option<Duration> {
        let _ = server;
        None
    }

    /// The policy a request answers to when it comes: `None` (the default), this one.
    /// A policy that stands for another — the one a reload of the config swaps in —
    /// gives the one in force now; the request is judged by it, its result and its end
    /// too, whatever is swapped in meanwhile.
    fn current(&self) -> Option<Arc<dyn Policy>> {
        None
    }

    /// A rule of the policy that cannot be judged without knowing who is calling, in
    /// words (`None`: none). A bridge whose hosts do not log in (stdio, a listener
    /// without an issuer) refuses to start with it rather than judge it open or shut.
    fn wants_callers(&self) -> Option<String> {
        None
    }
}

/// The list methods whose items [`Policy::on_list`] judges, with the member that
/// holds them.
fn list_member(method: Method) -> Option<&'static str> {
    match method {
        Method::ListTools => Some("tools"),
        Method::ListPrompts => Some("prompts"),
        Method::ListResources => Some("resources"),
        Method::ListResourceTemplates => Some("resourceTemplates"),
        _ => None,
    }
}

/// `params` of `caller`'s request to `server` through `policy`: edited, or the error
/// the host gets (audited, naming the caller).
pub(crate) fn request(
    policy: &dyn Policy,
    server: &str,
    method: Method,
    params: &mut Map<String, Value>,
    caller: Option<&Caller>,
    audit: &Audit,
) -> Result<(), Error> {
    match policy.on_request(server, method, params, caller) {
        Verdict::Allow => Ok(()),
        verdict => Err(refused(verdict, server, method, named(params), audit)),
    }
}

/// What a request is about, for the audit: its `name` or `uri`.
fn named(params: &Map<String, Value>) -> Option<String> {
    params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The error a request refused by `verdict` gets (audited, naming the caller).
fn refused(
    verdict: Verdict,
    server: &str,
    method: Method,
    name: Option<String>,
    audit: &Audit,
) -> Error {
    let refusal = match verdict {
        Verdict::Limited { .. } => crate::metrics::Refusal::RateLimited,
        _ => crate::metrics::Refusal::Denied,
    };
    audit.metrics().refusal(refusal);
    let (event, error) = match verdict {
        Verdict::Deny(why) => (
            "denied",
            answer_error(method, codes::INVALID_PARAMS, why, None),
        ),
        Verdict::Limited { retry_after, why } => {
            let seconds = retry_seconds(retry_after);
            let data = json!({"retryAfter": seconds});
            let error = answer_error(method, code::RATE_LIMITED, why, Some(data));
            ("limited", error)
        }
        // Never refused (the callers let it pass); a denial in words if it were.
        Verdict::Allow => (
            "denied",
            answer_error(method, codes::INVALID_PARAMS, "refused".into(), None),
        ),
    };
    let mut line = json!({"server": server, "method": method.as_str(), "why": error.to_string()});
    if let Some(name) = name {
        line["name"] = name.into();
    }
    audit.record(event, line);
    error
}

/// Whole seconds to wait, at least one (`Retry-After` counts in seconds).
pub(crate) fn retry_seconds(wait: Duration) -> u64 {
    let ceiling = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    ceiling.max(1)
}

/// `server`'s result to `method` through `policy`: a list's items judged one by one
/// for `caller` (the list rewritten only when one is kept back), then
/// [`Policy::on_result`].
pub(crate) fn result(
    policy: &dyn Policy,
    server: &str,
    method: Method,
    caller: Option<&Caller>,
    result: Payload,
) -> Payload {
    let result = match list_member(method) {
        Some(member) => filtered(policy, server, method, member, caller, result),
        None => result,
    };
    policy.on_result(server, method, result)
}

fn filtered(
    policy: &dyn Policy,
    server: &str,
    method: Method,
    member: &str,
    caller: Option<&Caller>,
    result: Payload,
) -> Payload {
    let Ok(Value::Object(mut fields)) = result.decode::<Value>() else {
        return result;
    };
    let Some(Value::Array(items)) = fields.get_mut(member) else {
        return result;
    };
    let before = items.len();
    items.retain(|item| policy.on_list(server, method, item, caller));
    let kept_back = items.len() != before;
    // A list judged for a caller is that caller's: a 2026-07-28 server's `public` is
    // not shared across callers (a `private` cache is not shared across
    // authorization contexts).
    let public = caller.is_some() && fields.get("cacheScope") == Some(&json!("public"));
    if public {
        fields.insert("cacheScope".into(), "private".into());
    }
    if !kept_back && !public {
        return result;
    }
    Payload::from_json(Value::Object(fields).to_string().into_bytes())
}

/// A request the policy let through: its result passes the policy on its way back,
/// and the policy hears of its end when this is dropped (answered, failed, cancelled).
pub(crate) struct Passed {
    policy: Arc<dyn Policy>,
    server: String,
    method: Method,
    caller: Option<Arc<Caller>>,
    /// What the policy asks of the shared store before the request is sent, with
    /// what it is about and where a refusal is audited.
    shared: Option<(BoxFuture<'static, Shared>, Option<String>, Arc<Audit>)>,
}

impl Drop for Passed {
    fn drop(&mut self) {
        self.policy
            .on_end(&self.server, self.method, self.caller.as_deref());
    }
}

/// The policy a result passes on its way back (`None`: none looks at it).
pub(crate) type After = Option<Passed>;

/// The policy the one server's request of `method` passes (`one`: its name; `None`
/// for many, whose requests pass it where their server is known): its params edited,
/// and the policy its result passes after; or the error the host gets.
pub(crate) fn before_one(
    policy: Option<&Arc<dyn Policy>>,
    one: Option<&str>,
    method: Method,
    params: Forwarded,
    audit: &Arc<Audit>,
) -> Result<(Forwarded, After), Error> {
    let current = policy.and_then(|p| p.current());
    let policy = current.as_ref().or(policy);
    // Decoded only for a policy that looks at it.
    let inspected = |server: &&str| policy.is_some_and(|p| p.inspects(server, method));
    let Some(server) = one.filter(inspected) else {
        return Ok((params, None));
    };
    let mut map = params.into_map();
    let after = through(policy, server, method, &mut map, audit)?;
    Ok((Forwarded::from_map(&map), after))
}

/// `params` of a request of `method` to `server` through `policy` (none, or one that
/// does not look at it: as they are), for the caller of the task at hand: edited, and
/// the policy its result passes; or the error the host gets.
pub(crate) fn through(
    policy: Option<&Arc<dyn Policy>>,
    server: &str,
    method: Method,
    params: &mut Map<String, Value>,
    audit: &Arc<Audit>,
) -> Result<After, Error> {
    // One look at the policy in force (a reload may swap it).
    let current = policy.and_then(|p| p.current());
    let policy = current.as_ref().or(policy);
    let Some(policy) = policy.filter(|p| p.inspects(server, method)) else {
        return Ok(None);
    };
    let caller = crate::audit::caller();
    request(&**policy, server, method, params, caller.as_deref(), audit)?;
    let shared = policy
        .on_request_shared(server, method, caller.as_deref())
        .map(|shared| (shared, named(params), audit.clone()));
    Ok(Some(Passed {
        policy: policy.clone(),
        server: server.to_owned(),
        method,
        caller,
        shared,
    }))
}

/// Whether an item of `server`'s list of `method` is offered to the caller of the
/// task at hand (the policy's word); the item is made (`item`) only for a policy that
/// looks at it.
pub(crate) fn listed(
    policy: Option<&Arc<dyn Policy>>,
    server: &str,
    method: Method,
    item: impl FnOnce() -> Value,
) -> bool {
    let current = policy.and_then(|p| p.current());
    let policy = current.as_ref().or(policy);
    match policy.filter(|p| p.inspects(server, method)) {
        Some(p) => {
            let caller = crate::audit::caller();
            p.on_list(server, method, &item(), caller.as_deref())
        }
        None => true,
    }
}

/// `answer`, its result through `policy` (from [`before_one`]) when there is one —
/// once what the policy asks of the shared store let it through; the policy hears of
/// its end when it ends.
pub(crate) fn after(
    policy: After,
    method: Method,
    answer: BoxFuture<'static, Result<Payload, Error>>,
) -> BoxFuture<'static, Result<Payload, Error>> {
    match policy {
        None => answer,
        Some(mut passed) => async move {
            // Kept while the request runs (a call counted in, in the store).
            let mut _held = None;
            if let Some((shared, name, audit)) = passed.shared.take() {
                let shared = shared.await;
                if let Some(why) = &shared.fallback {
                    let line =
                        json!({"server": passed.server, "method": method.as_str(), "why": why});
                    audit.record("store_down", line);
                }
                if shared.verdict != Verdict::Allow {
                    return Err(refused(
                        shared.verdict,
                        &passed.server,
                        method,
                        name,
                        &audit,
                    ));
                }
                _held = shared.held;
            }
            let answer = answer.await;
            let (policy, server) = (&*passed.policy, passed.server.as_str());
            let caller = passed.caller.as_deref();
            answer.map(|payload| result(policy, server, method, caller, payload))
        }
        .boxed(),
    }
}
