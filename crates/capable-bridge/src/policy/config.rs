//! The config's policies ([`ConfigPolicy`]): what each server's entry says of its tools
//! (`allowTools`, `denyTools`, `timeout`, `outputBudget`), who may use what of it
//! (`access`), how much each caller may ask of it (`rateLimit`), and each caller's
//! limit across every server (the file's `gateway.rateLimit`).
//!
//! A caller must pass a server's `access.allow` for anything of it, and the rule of a
//! tool, prompt or resource (by URI) that has one besides; what it may not call, it is
//! not shown. Then come the limits: the gateway's, then the server's; a tool call is
//! counted in while it runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use capable::config::{Access, GatewayPolicy, RateLimit, Rule, ServerPolicy, WhenDown};
use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::Payload;
use capable::internal::Method;
use serde_json::{json, Map, Value};

use super::limits::Limit;
use super::shared::{Shared, SharedLimits};
use super::{Policy, Verdict};
use crate::store::Store;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;

/// The config's policies, one per server by name (`allowTools`, `denyTools`, `timeout`,
/// `outputBudget`, `access`, `rateLimit`; `disabled` is for the bridge of many, which
/// does not start such a server), and the gateway's limit of each caller: the first
/// [`Policy`].
#[derive(Clone, Debug, Default)]
pub struct ConfigPolicy {
    servers: BTreeMap<String, ServerPolicy>,
    /// Each server's limits of each caller.
    limits: BTreeMap<String, Arc<Limit>>,
    /// Each caller's limits across every server.
    gateway: Option<Arc<Limit>>,
    /// What the `gateway` section's limit says (to keep its counts across a reload).
    gateway_rule: Option<RateLimit>,
    /// The store the replicas share, where the limits are counted (none: here).
    shared: Option<SharedLimits>,
}

/// Which of a server's rules a list item or a request answers to: the kind of thing
/// (`tools`, `prompts`, `resources`) and the member that names it.
fn kind_of(method: Method) -> Option<(&'static str, &'static str)> {
    match method {
        Method::ListTools | Method::CallTool => Some(("tools", "name")),
        Method::ListPrompts | Method::GetPrompt => Some(("prompts", "name")),
        Method::ListResources | Method::ReadResource | Method::Subscribe | Method::Unsubscribe => {
            Some(("resources", "uri"))
        }
        _ => None,
    }
}

impl ConfigPolicy {
    /// The policies of a config's servers, by name.
    pub fn new(servers: BTreeMap<String, ServerPolicy>) -> ConfigPolicy {
        let limits = servers
            .iter()
            .filter_map(|(name, p)| {
                let scope = format!("mcpServers.{name}.rateLimit");
                Some((
                    name.clone(),
                    Arc::new(Limit::new(p.rate_limit.as_ref()?, scope)),
                ))
            })
            .collect();
        ConfigPolicy {
            servers,
            limits,
            gateway: None,
            gateway_rule: None,
            shared: None,
        }
    }

    /// With the limits counted in `store`, which every replica of the gateway shares
    /// (`gateway.store`), and `when_down` holding while it cannot be reached.
    pub fn with_store(mut self, store: Arc<dyn Store>, when_down: WhenDown) -> ConfigPolicy {
        self.shared = Some(SharedLimits { store, when_down });
        self
    }

    /// With the counts of `before`'s limits where they are the same limits (a reload
    /// that leaves a `rateLimit` as it was does not let its callers start afresh).
    pub fn keeping_counts(mut self, before: &ConfigPolicy) -> ConfigPolicy {
        for (name, limit) in &mut self.limits {
            let rule = |p: &BTreeMap<String, ServerPolicy>| p.get(name).and_then(|s| s.rate_limit);
            let kept = before.limits.get(name);
            if let Some(kept) = kept.filter(|_| rule(&self.servers) == rule(&before.servers)) {
                *limit = kept.clone();
            }
        }
        if self.gateway_rule.is_some() && self.gateway_rule == before.gateway_rule {
            self.gateway = before.gateway.clone();
        }
        self
    }

    /// With what the config's `gateway` section says of every server: each caller's
    /// limit across all of them.
    pub fn with_gateway(mut self, gateway: &GatewayPolicy) -> ConfigPolicy {
        self.gateway = gateway
            .rate_limit
            .as_ref()
            .map(|l| Arc::new(Limit::new(l, "gateway.rateLimit".into())));
        self.gateway_rule = gateway.rate_limit;
        self
    }

    fn of(&self, server: &str) -> Option<&ServerPolicy> {
        self.servers.get(server)
    }

    /// The limits that hold for a request to `server`: the gateway's, the server's.
    fn limits(&self, server: &str) -> impl Iterator<Item = &Arc<Limit>> {
        self.gateway.iter().chain(self.limits.get(server))
    }

    /// The rule of `server` that `caller` fails for `item` (a list item, or a request's
    /// params) of `method`, as the config spells its place; `None`: admitted.
    fn refuses(
        &self,
        server: &str,
        method: Method,
        item: &Map<String, Value>,
        caller: Option<&Caller>,
    ) -> Option<String> {
        let access = self.of(server)?.access.as_ref()?;
        if !access.allow.admits(caller) {
            return Some(format!("mcpServers.{server}.access.allow"));
        }
        let (kind, member) = kind_of(method)?;
        let name = item.get(member).and_then(Value::as_str)?;
        let rule = rules(access, kind).get(name)?;
        (!rule.admits(caller)).then(|| format!("mcpServers.{server}.access.{kind}.{name}"))
    }
}

/// The rules of `kind` of `access`.
fn rules<'a>(access: &'a Access, kind: &str) -> &'a BTreeMap<String, Rule> {
    match kind {
        "tools" => &access.tools,
        "prompts" => &access.prompts,
        _ => &access.resources,
    }
}

/// The key a caller is limited under (nobody logged in: one caller).
fn key(caller: Option<&Caller>) -> String {
    caller.map(Caller::key).unwrap_or_default()
}

impl Policy for ConfigPolicy {
    fn inspects(&self, server: &str, method: Method) -> bool {
        if self.limits(server).next().is_some() {
            return true;
        }
        let Some(p) = self.of(server) else {
            return false;
        };
        let limits_tools = p.allow_tools.is_some() || !p.deny_tools.is_empty();
        let tools = matches!(method, Method::ListTools | Method::CallTool) && limits_tools;
        let budget = method == Method::CallTool && p.output_budget.is_some();
        let access = p.access.as_ref().is_some_and(|a| {
            a.allow.names_callers()
                || kind_of(method).is_some_and(|(kind, _)| !rules(a, kind).is_empty())
        });
        tools || budget || access
    }

    fn on_list(&self, server: &str, method: Method, item: &Value, caller: Option<&Caller>) -> bool {
        let Some(p) = self.of(server) else {
            return true;
        };
        if method == Method::ListTools
            && !p.offers_tool(item.get("name").and_then(Value::as_str).unwrap_or(""))
        {
            return false;
        }
        let empty = Map::new();
        let fields = item.as_object().unwrap_or(&empty);
        self.refuses(server, method, fields, caller).is_none()
    }

    fn on_request(
        &self,
        server: &str,
        method: Method,
        params: &mut Map<String, Value>,
        caller: Option<&Caller>,
    ) -> Verdict {
        if let (Method::CallTool, Some(p)) = (method, self.of(server)) {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            if !p.offers_tool(name) {
                return Verdict::Deny(format!("tool {name:?} is not offered by this bridge"));
            }
        }
        if let Some(rule) = self.refuses(server, method, params, caller) {
            let what = kind_of(method)
                .and_then(|(_, member)| params.get(member)?.as_str())
                .map_or_else(|| method.as_str().to_owned(), |name| format!("{name:?}"));
            return Verdict::Deny(format!(
                "{what} of server {server:?} is not allowed for this caller (rule {rule})"
            ));
        }
        let mut limits = self.limits(server).peekable();
        // With a store, the limits are counted there (`on_request_shared`).
        if limits.peek().is_none() || self.shared.is_some() {
            return Verdict::Allow;
        }
        let key = key(caller);
        for limit in limits {
            if let Err((retry_after, why)) = limit.request(&key) {
                return Verdict::Limited { retry_after, why };
            }
        }
        if method == Method::CallTool {
            let mut entered: Vec<&Arc<Limit>> = Vec::new();
            for limit in self.limits(server) {
                if let Err(why) = limit.call(&key) {
                    for limit in entered {
                        limit.call_ended(&key);
                    }
                    let retry_after = Duration::from_secs(1);
                    return Verdict::Limited { retry_after, why };
                }
                entered.push(limit);
            }
        }
        Verdict::Allow
    }

    fn on_request_shared(
        &self,
        server: &str,
        method: Method,
        caller: Option<&Caller>,
    ) -> Option<BoxFuture<'static, Shared>> {
        let shared = self.shared.clone()?;
        let limits: Vec<Arc<Limit>> = self.limits(server).cloned().collect();
        if limits.is_empty() {
            return None;
        }
        let (caller, call) = (key(caller), method == Method::CallTool);
        Some(async move { shared.admit(limits, caller, call).await }.boxed())
    }

    fn on_end(&self, server: &str, method: Method, caller: Option<&Caller>) {
        // With a store, a call is counted out as what `on_request_shared` held is dropped.
        let shared = self.shared.is_some();
        if shared || method != Method::CallTool || !self.limits(server).any(|l| l.limits_calls()) {
            return;
        }
        let key = key(caller);
        for limit in self.limits(server) {
            limit.call_ended(&key);
        }
    }

    fn on_result(&self, server: &str, method: Method, result: Payload) -> Payload {
        let budget = match (method, self.of(server)) {
            (Method::CallTool, Some(p)) => p.output_budget,
            _ => None,
        };
        match budget {
            Some(budget) if result.json().len() > budget => {
                cut(result.json(), budget, server).unwrap_or(result)
            }
            _ => result,
        }
    }

    fn request_timeout(&self, server: &str) -> Option<Duration> {
        self.of(server).and_then(|p| p.timeout)
    }

    fn wants_callers(&self) -> Option<String> {
        self.servers.iter().find_map(|(name, p)| {
            let place = p.access.as_ref()?.naming_callers()?;
            Some(format!("mcpServers.{name}.{place}"))
        })
    }
}

/// A tool result over its server's budget, cut: its text kept up to the budget, its
/// structured content left out, and a note that says so. What is no tool result (a
/// task the call became, an unreadable answer) is not cut (`None`).
fn cut(result: &str, budget: usize, server: &str) -> Option<Payload> {
    let parsed: Value = serde_json::from_str(result).ok()?;
    parsed.get("content")?;
    let mut text = String::new();
    for block in parsed
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = block.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
    }
    let mut end = budget.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    let note = format!(
        "[capable bridge: the result was cut to {} of its {}: the outputBudget of server {server:?}]",
        capable::internal::text::size(budget),
        capable::internal::text::size(result.len()),
    );
    let mut cut =
        json!({"content": [{"type": "text", "text": text}, {"type": "text", "text": note}]});
    if parsed.get("isError") == Some(&Value::Bool(true)) {
        cut["isError"] = json!(true);
    }
    Some(Payload::from_json(cut.to_string().into_bytes()))
}
