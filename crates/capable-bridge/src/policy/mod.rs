//! The one policy seam: what the bridge asks before a host's request reaches a server,
//! as a server's result goes back, and of each item of a server's list — for one server
//! and for many alike, once per request, at the point where the server is known.
//!
//! | hook | when | may |
//! |---|---|---|
//! | [`Policy::on_list`] | each item of a server's `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` | keep it back |
//! | [`Policy::on_request`] | a host's request on its way to a server (params with the server's own names) | allow it, edit its params, or deny it (`-32602`, nothing sent) |
//! | [`Policy::on_result`] | a server's result on its way back | replace it |
//! | [`Policy::request_timeout`] | a server connected | give it its own request timeout |
//!
//! [`Policy::inspects`] says which methods a policy looks at: the others pass as they
//! came, never decoded (the bridge forwards params and results as bytes). The config's
//! `allowTools`, `denyTools`, `timeout` and `outputBudget` are the first policy
//! ([`ConfigPolicy`]); a gateway's identities, rate limits and pinned tool definitions
//! plug in here too.
//!
//! ```
//! use std::sync::Arc;
//! use capable::internal::Method;
//! use capable_bridge::{BridgeConfig, Connector, Policy, Upstream, Verdict};
//! use serde_json::{Map, Value};
//!
//! /// Tools whose name starts with `delete_` are neither listed nor called.
//! struct NoDeletes;
//!
//! impl Policy for NoDeletes {
//!     fn inspects(&self, _server: &str, method: Method) -> bool {
//!         matches!(method, Method::ListTools | Method::CallTool)
//!     }
//!     fn on_list(&self, _server: &str, _method: Method, tool: &Value) -> bool {
//!         !tool["name"].as_str().unwrap_or("").starts_with("delete_")
//!     }
//!     fn on_request(&self, _server: &str, _method: Method, params: &mut Map<String, Value>) -> Verdict {
//!         match params.get("name").and_then(Value::as_str) {
//!             Some(name) if name.starts_with("delete_") => Verdict::Deny(format!("{name} is not offered")),
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

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use capable::config::ServerPolicy;
use capable::internal::jsonrpc::{codes, Payload};
use capable::internal::Method;
use capable::Error;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Map, Value};

use crate::forward::{answer_error, Forwarded};

/// What a policy says of a host's request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// It goes on (with its params as the policy left them).
    Allow,
    /// It is refused with these words (`-32602`); the server never sees it.
    Deny(String),
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
    /// offered to hosts.
    fn on_list(&self, server: &str, method: Method, item: &Value) -> bool {
        let _ = (server, method, item);
        true
    }

    /// A host's request of `method` on its way to `server`: `params` as the server
    /// will get them (a tool's or prompt's own name, not the bridge's `server/name`);
    /// edit them to rewrite the request.
    fn on_request(&self, server: &str, method: Method, params: &mut Map<String, Value>) -> Verdict {
        let _ = (server, method, params);
        Verdict::Allow
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

/// `params` of a host's request to `server` through `policy`: edited, or the error the
/// host gets.
pub(crate) fn request(
    policy: &dyn Policy,
    server: &str,
    method: Method,
    params: &mut Map<String, Value>,
) -> Result<(), Error> {
    match policy.on_request(server, method, params) {
        Verdict::Allow => Ok(()),
        Verdict::Deny(why) => Err(answer_error(method, codes::INVALID_PARAMS, why, None)),
    }
}

/// `server`'s result to `method` through `policy`: a list's items judged one by one
/// (the list rewritten only when one is kept back), then [`Policy::on_result`].
pub(crate) fn result(
    policy: &dyn Policy,
    server: &str,
    method: Method,
    result: Payload,
) -> Payload {
    let result = match list_member(method) {
        Some(member) => filtered(policy, server, method, member, result),
        None => result,
    };
    policy.on_result(server, method, result)
}

fn filtered(
    policy: &dyn Policy,
    server: &str,
    method: Method,
    member: &str,
    result: Payload,
) -> Payload {
    let Ok(Value::Object(mut fields)) = result.decode::<Value>() else {
        return result;
    };
    let Some(Value::Array(items)) = fields.get_mut(member) else {
        return result;
    };
    let before = items.len();
    items.retain(|item| policy.on_list(server, method, item));
    if items.len() == before {
        return result;
    }
    Payload::from_json(Value::Object(fields).to_string().into_bytes())
}

/// The policy a result passes on its way back, with its server's name (`None`: none
/// looks at it).
pub(crate) type After = Option<(Arc<dyn Policy>, String)>;

/// The policy the one server's request of `method` passes (`one`: its name; `None`
/// for many, whose requests pass it where their server is known): its params edited,
/// and the policy its result passes after; or the error the host gets.
pub(crate) fn before_one(
    policy: Option<&Arc<dyn Policy>>,
    one: Option<&str>,
    method: Method,
    params: Forwarded,
) -> Result<(Forwarded, After), Error> {
    // Decoded only for a policy that looks at it.
    let inspected = |server: &&str| policy.is_some_and(|p| p.inspects(server, method));
    let Some(server) = one.filter(inspected) else {
        return Ok((params, None));
    };
    let mut map = params.into_map();
    let after = through(policy, server, method, &mut map)?;
    Ok((Forwarded::from_map(&map), after))
}

/// `params` of a request of `method` to `server` through `policy` (none, or one that
/// does not look at it: as they are): edited, and the policy its result passes; or the
/// error the host gets.
pub(crate) fn through(
    policy: Option<&Arc<dyn Policy>>,
    server: &str,
    method: Method,
    params: &mut Map<String, Value>,
) -> Result<After, Error> {
    let Some(policy) = policy.filter(|p| p.inspects(server, method)) else {
        return Ok(None);
    };
    request(&**policy, server, method, params)?;
    Ok(Some((policy.clone(), server.to_owned())))
}

/// Whether an item of `server`'s list of `method` is offered (the policy's word); the
/// item is made (`item`) only for a policy that looks at it.
pub(crate) fn listed(
    policy: Option<&Arc<dyn Policy>>,
    server: &str,
    method: Method,
    item: impl FnOnce() -> Value,
) -> bool {
    match policy.filter(|p| p.inspects(server, method)) {
        Some(p) => p.on_list(server, method, &item()),
        None => true,
    }
}

/// `answer`, its result through `policy` (from [`before_one`]) when there is one.
pub(crate) fn after(
    policy: After,
    method: Method,
    answer: BoxFuture<'static, Result<Payload, Error>>,
) -> BoxFuture<'static, Result<Payload, Error>> {
    match policy {
        None => answer,
        Some((policy, server)) => answer
            .map(move |answer| answer.map(|payload| result(&*policy, &server, method, payload)))
            .boxed(),
    }
}

/// The config's policies, one per server by name (`allowTools`, `denyTools`, `timeout`,
/// `outputBudget`; `disabled` is for the bridge of many, which does not start such a
/// server): the first [`Policy`].
#[derive(Clone, Debug, Default)]
pub struct ConfigPolicy {
    servers: BTreeMap<String, ServerPolicy>,
}

impl ConfigPolicy {
    /// The policies of a config's servers, by name.
    pub fn new(servers: BTreeMap<String, ServerPolicy>) -> ConfigPolicy {
        ConfigPolicy { servers }
    }

    fn of(&self, server: &str) -> Option<&ServerPolicy> {
        self.servers.get(server)
    }
}

impl Policy for ConfigPolicy {
    fn inspects(&self, server: &str, method: Method) -> bool {
        let Some(p) = self.of(server) else {
            return false;
        };
        let limits_tools = p.allow_tools.is_some() || !p.deny_tools.is_empty();
        match method {
            Method::ListTools => limits_tools,
            Method::CallTool => limits_tools || p.output_budget.is_some(),
            _ => false,
        }
    }

    fn on_list(&self, server: &str, method: Method, item: &Value) -> bool {
        match (method, self.of(server)) {
            (Method::ListTools, Some(p)) => {
                p.offers_tool(item.get("name").and_then(Value::as_str).unwrap_or(""))
            }
            _ => true,
        }
    }

    fn on_request(&self, server: &str, method: Method, params: &mut Map<String, Value>) -> Verdict {
        let (Method::CallTool, Some(p)) = (method, self.of(server)) else {
            return Verdict::Allow;
        };
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        match p.offers_tool(name) {
            true => Verdict::Allow,
            false => Verdict::Deny(format!("tool {name:?} is not offered by this bridge")),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ConfigPolicy {
        let docs = ServerPolicy {
            allow_tools: Some(vec!["search".into(), "read".into()]),
            deny_tools: vec!["read".into()],
            output_budget: Some(14),
            timeout: Some(Duration::from_secs(3)),
            ..ServerPolicy::default()
        };
        ConfigPolicy::new([("docs".to_owned(), docs)].into())
    }

    fn payload(v: Value) -> Payload {
        Payload::from_json(v.to_string().into_bytes())
    }

    #[test]
    fn a_servers_list_keeps_back_what_its_policy_does_and_others_pass_untouched() {
        let p = policy();
        let list = json!({"tools": [{"name": "search"}, {"name": "read"}, {"name": "drop"}], "nextCursor": "c"});
        let kept = result(&p, "docs", Method::ListTools, payload(list.clone()));
        assert_eq!(
            kept.decode::<Value>().unwrap(),
            json!({"tools": [{"name": "search"}], "nextCursor": "c"})
        );
        // Another server, another list: as they came, byte for byte.
        let raw = r#"{"tools":[{"name":"drop"}] }"#;
        let other = result(
            &p,
            "web",
            Method::ListTools,
            Payload::from_json(raw.as_bytes().to_vec()),
        );
        assert_eq!(other.json(), raw);
        assert!(!p.inspects("web", Method::CallTool));
        assert!(!p.inspects("docs", Method::ReadResource));
        assert!(p.inspects("docs", Method::ListTools));
    }

    #[test]
    fn a_tool_kept_back_is_refused_before_the_server_sees_it() {
        let p = policy();
        let mut params = json!({"name": "read"}).as_object().unwrap().clone();
        let refused = request(&p, "docs", Method::CallTool, &mut params).unwrap_err();
        let Error::Rpc { error, .. } = refused else {
            panic!("not an rpc error");
        };
        assert_eq!(error.code, codes::INVALID_PARAMS);
        assert!(error.message.contains("\"read\""), "{}", error.message);
        let mut params = json!({"name": "search"}).as_object().unwrap().clone();
        assert!(request(&p, "docs", Method::CallTool, &mut params).is_ok());
        assert_eq!(p.request_timeout("docs"), Some(Duration::from_secs(3)));
        assert_eq!(p.request_timeout("web"), None);
    }

    #[test]
    fn a_result_over_budget_is_cut_with_a_note_and_keeps_its_error_flag() {
        let p = policy();
        // 14 bytes fall inside the seventh `é`: the text ends before it.
        let long = json!({"content": [{"type": "text", "text": "aéééééééé"}], "isError": true});
        let cut = result(&p, "docs", Method::CallTool, payload(long))
            .decode::<Value>()
            .unwrap();
        assert_eq!(cut["content"][0]["text"], "aéééééé");
        assert!(cut["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("outputBudget of server \"docs\""));
        assert_eq!(cut["isError"], true);
        // A task the call became is no tool result: never cut.
        let task =
            r#"{"task":{"taskId":"t-1","status":"working","createdAt":"2026-12-06T10:00:00Z"}}"#;
        let kept = result(
            &p,
            "docs",
            Method::CallTool,
            Payload::from_json(task.as_bytes().to_vec()),
        );
        assert_eq!(kept.json(), task);
        let short = r#"{"content":[]}"#;
        let kept = result(
            &p,
            "docs",
            Method::CallTool,
            Payload::from_json(short.as_bytes().to_vec()),
        );
        assert_eq!(kept.json(), short);
    }

    #[test]
    fn a_policy_implements_only_what_it_needs() {
        struct ReadOnly;
        impl Policy for ReadOnly {
            fn on_request(&self, _: &str, method: Method, _: &mut Map<String, Value>) -> Verdict {
                match method {
                    Method::CallTool => Verdict::Deny("read-only".into()),
                    _ => Verdict::Allow,
                }
            }
        }
        let mut params = Map::new();
        assert!(request(&ReadOnly, "any", Method::CallTool, &mut params).is_err());
        assert!(request(&ReadOnly, "any", Method::ReadResource, &mut params).is_ok());
        let list = payload(json!({"tools": [{"name": "x"}]}));
        assert_eq!(
            result(&ReadOnly, "any", Method::ListTools, list.clone()).json(),
            list.json()
        );
    }
}
