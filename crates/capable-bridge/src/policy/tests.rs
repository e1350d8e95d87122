//! The seam and the config's policies, judged as the bridge asks them: lists and
//! requests of callers with and without rules, results, limits.

use std::sync::Arc;
use std::time::Duration;

use capable::config::{Access, GatewayPolicy, RateLimit, ServerPolicy};
use capable::internal::auth::resource::Caller;
use capable::internal::jsonrpc::{codes, Payload};
use capable::internal::Method;
use capable::Error;
use serde_json::{json, Map, Value};

use super::{ConfigPolicy, Policy, Verdict};
use crate::audit::Audit;

fn audit() -> Audit {
    Audit::open(None, Default::default(), None, Default::default()).unwrap()
}

/// The seam's `request` for `caller`.
fn request_as(
    p: &dyn Policy,
    server: &str,
    method: Method,
    params: &mut Map<String, Value>,
    caller: Option<&Caller>,
) -> Result<(), Error> {
    super::request(p, server, method, params, caller, &audit())
}

fn request(
    p: &dyn Policy,
    server: &str,
    method: Method,
    params: &mut Map<String, Value>,
) -> Result<(), Error> {
    request_as(p, server, method, params, None)
}

fn result(p: &dyn Policy, server: &str, method: Method, payload: Payload) -> Payload {
    super::result(p, server, method, None, payload)
}

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
    let task = r#"{"task":{"taskId":"t-1","status":"working","createdAt":"2026-12-06T10:00:00Z"}}"#;
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
        fn on_request(
            &self,
            _: &str,
            method: Method,
            _: &mut Map<String, Value>,
            _: Option<&Caller>,
        ) -> Verdict {
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

fn caller(sub: &str, groups: &[&str], scopes: &[&str]) -> Caller {
    let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    groups.sort_unstable();
    Caller {
        issuer: "https://id.example".into(),
        subject: sub.into(),
        client_id: None,
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        groups,
        expires_at: u64::MAX,
    }
}

fn params(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// `docs` open to `eng` and `ops`, its `drop` tool to `ops` holding `docs:write`, its
/// `salaries` resource to `hr` alone; `web` with no rule at all.
fn team() -> ConfigPolicy {
    let access: Access = serde_json::from_value(json!({
        "allow": {"groups": ["eng", "ops"], "subjects": ["carol"]},
        "tools": {"drop": {"groups": ["ops"], "scopes": ["docs:write"]}},
        "prompts": {"escalate": {"subjects": ["carol"]}},
        "resources": {"docs://salaries": {"groups": ["hr"]}}}))
    .unwrap();
    let docs = ServerPolicy {
        access: Some(access),
        ..ServerPolicy::default()
    };
    ConfigPolicy::new([("docs".to_owned(), docs)].into())
}

fn listed(p: &ConfigPolicy, method: Method, list: Value, who: Option<&Caller>) -> Value {
    let payload = Payload::from_json(list.to_string().into_bytes());
    super::result(p, "docs", method, who, payload)
        .decode::<Value>()
        .unwrap()
}

#[test]
fn each_caller_is_shown_only_what_it_may_use() {
    let p = team();
    let alice = caller("alice", &["eng"], &[]);
    let olga = caller("olga", &["ops"], &["docs:write"]);
    let carol = caller("carol", &[], &[]);
    let tools = json!({"tools": [{"name": "search"}, {"name": "drop"}]});
    let names = |v: Value, member: &str| -> Vec<String> {
        v[member]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = Method::ListTools;
    assert_eq!(
        names(listed(&p, list, tools.clone(), Some(&alice)), "tools"),
        ["search"]
    );
    assert_eq!(
        names(listed(&p, list, tools.clone(), Some(&olga)), "tools"),
        ["search", "drop"]
    );
    // Named by subject; not a member of ops.
    assert_eq!(
        names(listed(&p, list, tools.clone(), Some(&carol)), "tools"),
        ["search"]
    );
    // Outside the server's rule: nothing of it.
    let bob = caller("bob", &["sales"], &["docs:write"]);
    assert!(listed(&p, list, tools.clone(), Some(&bob))["tools"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(listed(&p, list, tools, None)["tools"]
        .as_array()
        .unwrap()
        .is_empty());
    let prompts = json!({"prompts": [{"name": "escalate"}, {"name": "summary"}]});
    assert_eq!(
        names(
            listed(&p, Method::ListPrompts, prompts.clone(), Some(&alice)),
            "prompts"
        ),
        ["summary"]
    );
    assert_eq!(
        names(
            listed(&p, Method::ListPrompts, prompts, Some(&carol)),
            "prompts"
        )
        .len(),
        2
    );
    let resources = json!({"resources": [{"uri": "docs://salaries", "name": "s"},
        {"uri": "docs://manual", "name": "m"}]});
    let seen = listed(&p, Method::ListResources, resources, Some(&alice));
    assert_eq!(
        seen["resources"],
        json!([{"uri": "docs://manual", "name": "m"}])
    );
    // A server without rules: not even looked at.
    assert!(!p.inspects("web", Method::ListTools) && !p.inspects("web", Method::CallTool));
    assert!(
        p.inspects("docs", Method::Ping),
        "the server's own rule holds for everything"
    );
}

#[test]
fn a_denied_request_names_the_rule_and_never_the_token() {
    let p = team();
    let alice = caller("alice", &["eng"], &["docs:read"]);
    let denied = |method, v: Value, who: &Caller| {
        let Err(Error::Rpc { error, .. }) =
            request_as(&p, "docs", method, &mut params(v), Some(who))
        else {
            panic!("allowed");
        };
        assert_eq!(error.code, codes::INVALID_PARAMS);
        error.message
    };
    let why = denied(Method::CallTool, json!({"name": "drop"}), &alice);
    assert!(
        why.contains("rule mcpServers.docs.access.tools.drop"),
        "{why}"
    );
    assert!(why.contains("\"drop\""), "{why}");
    let why = denied(
        Method::ReadResource,
        json!({"uri": "docs://salaries"}),
        &alice,
    );
    assert!(why.contains("access.resources.docs://salaries"), "{why}");
    let bob = caller("bob", &["sales"], &[]);
    let why = denied(Method::CallTool, json!({"name": "search"}), &bob);
    assert!(why.contains("rule mcpServers.docs.access.allow"), "{why}");
    let why = denied(Method::ListTools, json!({}), &bob);
    assert!(why.contains("tools/list"), "{why}");
    // What the rules admit passes; the scope is the token's, not the group's.
    let mut call = params(json!({"name": "search"}));
    assert!(request_as(&p, "docs", Method::CallTool, &mut call, Some(&alice)).is_ok());
    let olga = caller("olga", &["ops"], &[]);
    denied(Method::CallTool, json!({"name": "drop"}), &olga);
    let olga = caller("olga", &["ops"], &["docs:write"]);
    let mut drop = params(json!({"name": "drop"}));
    assert!(request_as(&p, "docs", Method::CallTool, &mut drop, Some(&olga)).is_ok());
    // Params of the wrong type are no name: judged by the server's rule alone.
    let mut odd = params(json!({"name": 7, "uri": ["docs://salaries"]}));
    assert!(request_as(&p, "docs", Method::CallTool, &mut odd, Some(&alice)).is_ok());
}

#[test]
fn rules_naming_callers_are_told_at_start() {
    assert_eq!(
        team().wants_callers().as_deref(),
        Some("mcpServers.docs.access.allow")
    );
    let open: Access = serde_json::from_value(json!({"tools": {"x": {}}})).unwrap();
    let docs = ServerPolicy {
        access: Some(open),
        ..ServerPolicy::default()
    };
    let p = ConfigPolicy::new([("docs".to_owned(), docs)].into());
    assert_eq!(p.wants_callers(), None);
    assert_eq!(ConfigPolicy::default().wants_callers(), None);
}

fn limited(requests: u32, per: Duration, concurrent: Option<u32>) -> RateLimit {
    RateLimit {
        requests: std::num::NonZeroU32::new(requests).map(|n| (n, per)),
        concurrent: concurrent.and_then(std::num::NonZeroU32::new),
    }
}

#[test]
fn a_caller_over_its_limit_waits_and_another_is_untouched() {
    let docs = ServerPolicy {
        rate_limit: Some(limited(2, Duration::from_secs(3600), None)),
        ..ServerPolicy::default()
    };
    let p = ConfigPolicy::new([("docs".to_owned(), docs)].into());
    let (alice, bob) = (caller("alice", &[], &[]), caller("bob", &[], &[]));
    let ping = |who: &Caller| request_as(&p, "docs", Method::Ping, &mut Map::new(), Some(who));
    assert!(ping(&alice).is_ok() && ping(&alice).is_ok());
    let Err(Error::Rpc { error, .. }) = ping(&alice) else {
        panic!("not limited");
    };
    assert_eq!(error.code, crate::forward::code::RATE_LIMITED);
    assert_eq!(error.data.unwrap()["retryAfter"], 1800);
    assert!(
        error.message.contains("mcpServers.docs.rateLimit"),
        "{}",
        error.message
    );
    assert!(
        ping(&bob).is_ok(),
        "another caller has a limit of their own"
    );
    // Another server is not limited by this one's rule.
    assert!(!p.inspects("web", Method::Ping));
}

#[test]
fn calls_at_once_are_counted_out_as_they_end_across_the_gateway_and_a_server() {
    let docs = ServerPolicy {
        rate_limit: Some(limited(0, Duration::ZERO, Some(2))),
        ..ServerPolicy::default()
    };
    let gateway = GatewayPolicy {
        rate_limit: Some(limited(0, Duration::ZERO, Some(3))),
        ..GatewayPolicy::default()
    };
    let p: Arc<dyn Policy> =
        Arc::new(ConfigPolicy::new([("docs".to_owned(), docs)].into()).with_gateway(&gateway));
    let alice = caller("alice", &[], &[]);
    let call = |server: &str| {
        p.on_request(
            server,
            Method::CallTool,
            &mut params(json!({"name": "x"})),
            Some(&alice),
        )
    };
    assert_eq!(call("docs"), Verdict::Allow);
    assert_eq!(call("docs"), Verdict::Allow);
    let Verdict::Limited { why, .. } = call("docs") else {
        panic!("a third call at once to docs");
    };
    assert!(why.contains("mcpServers.docs.rateLimit"), "{why}");
    // The gateway's count was given back: one more elsewhere, then the gateway's bound.
    assert_eq!(call("web"), Verdict::Allow);
    let Verdict::Limited { why, .. } = call("web") else {
        panic!("a fourth call at once through the gateway");
    };
    assert!(why.contains("gateway.rateLimit"), "{why}");
    p.on_end("docs", Method::CallTool, Some(&alice));
    assert_eq!(call("docs"), Verdict::Allow);
    // Nobody logged in is one caller, limited as any.
    assert_eq!(
        p.on_request("web", Method::CallTool, &mut Map::new(), None),
        Verdict::Allow
    );
}

#[test]
fn a_list_judged_for_a_caller_is_never_cached_for_others() {
    let p = team();
    let alice = caller("alice", &["eng"], &[]);
    let list = json!({"tools": [{"name": "search"}], "ttlMs": 60000, "cacheScope": "public"});
    let seen = listed(&p, Method::ListTools, list.clone(), Some(&alice));
    assert_eq!(seen["cacheScope"], "private");
    assert_eq!(seen["ttlMs"], 60000);
    assert_eq!(seen["tools"], json!([{"name": "search"}]));
    let private = json!({"tools": [], "ttlMs": 0, "cacheScope": "private"});
    assert_eq!(
        listed(&p, Method::ListTools, private.clone(), Some(&alice)),
        private
    );
}

#[test]
fn a_reloaded_policy_keeps_the_counts_of_the_limits_it_leaves_as_they_were() {
    let at_once = |n| ServerPolicy {
        rate_limit: Some(limited(0, Duration::ZERO, Some(n))),
        ..ServerPolicy::default()
    };
    let gateway = GatewayPolicy {
        rate_limit: Some(limited(0, Duration::ZERO, Some(3))),
        ..GatewayPolicy::default()
    };
    let of = |docs, web| {
        let servers = [
            ("docs".to_owned(), at_once(docs)),
            ("web".to_owned(), at_once(web)),
        ];
        ConfigPolicy::new(servers.into()).with_gateway(&gateway)
    };
    let alice = caller("alice", &[], &[]);
    let call = |p: &ConfigPolicy, server: &str| {
        let mut params = params(json!({"name": "x"}));
        p.on_request(server, Method::CallTool, &mut params, Some(&alice))
    };
    let before = of(1, 1);
    assert_eq!(call(&before, "docs"), Verdict::Allow);
    assert_eq!(call(&before, "web"), Verdict::Allow);
    // Reloaded: docs's limit as it was (its call still counted), web's raised.
    let after = of(1, 2).keeping_counts(&before);
    assert!(matches!(call(&after, "docs"), Verdict::Limited { .. }));
    assert_eq!(call(&after, "web"), Verdict::Allow);
    // The gateway's count went on too (its bound is 3): 2 before, 1 now — web's own
    // raised limit would take another, the gateway's does not.
    let Verdict::Limited { why, .. } = call(&after, "web") else {
        panic!("the gateway's fourth call at once");
    };
    assert!(why.contains("gateway.rateLimit"), "{why}");
}
