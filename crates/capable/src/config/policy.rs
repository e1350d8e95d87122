//! A server's policy in a config file: what a host that serves many servers as one
//! (`capable bridge --config`) applies to each — read from the entry's `disabled`,
//! `allowTools`, `denyTools`, `timeout`, `outputBudget`, and for a gateway `access`,
//! `rateLimit` (`access.rs`) and `perReplica`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::access::{self, Access, RateLimit};
use super::credentials::Credentials;

/// What a host of many servers applies to one of them, from its config entry:
///
/// ```json
/// {"mcpServers": {"docs": {"command": "docs-server",
///   "disabled": false, "allowTools": ["search", "read"], "denyTools": ["delete"],
///   "timeout": "30s", "outputBudget": "256KiB"}}}
/// ```
///
/// `timeout` is a duration (`"30s"`, `"500ms"`) or milliseconds, `outputBudget` a size
/// (`"64KiB"`) or bytes. An entry's policy that cannot be read makes the entry unusable
/// (its error says why), as any other mistake in it does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerPolicy {
    /// The server is not started at all.
    pub disabled: bool,
    /// Only these tools are offered (`None`: every tool).
    pub allow_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub deny_tools: Vec<String>,
    /// How long one of its requests may take (its own request timeout).
    pub timeout: Option<Duration>,
    /// The most bytes one of its tool results may take: a larger one is cut, with a
    /// note that says so.
    pub output_budget: Option<usize>,
    /// Who may list and use its tools, prompts and resources (`access`).
    pub access: Option<Access>,
    /// How much each caller may ask of it (`rateLimit`).
    pub rate_limit: Option<RateLimit>,
    /// Whose credentials go to it, an HTTP server (`credentials`; none said: the
    /// gateway's own, [`Credentials::Service`]).
    pub credentials: Option<Credentials>,
    /// Whether each of many gateway replicas may run its own copy of it, a server the
    /// gateway starts (`perReplica`; not said: it may). `Some(false)` says the server
    /// keeps what a session did in its own process, so a replica that continues another's
    /// session must not meet a copy that never saw it: a gateway run as one of many
    /// replicas (given a seal key) leaves it out, saying why.
    pub per_replica: Option<bool>,
}

impl ServerPolicy {
    /// Whether the tool `name` is offered under this policy.
    pub fn offers_tool(&self, name: &str) -> bool {
        let allowed = self
            .allow_tools
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == name));
        allowed && !self.deny_tools.iter().any(|d| d == name)
    }
}

/// The policy keys of an entry, as written.
#[derive(Debug, Default, Deserialize)]
struct PolicyEntry {
    #[serde(default)]
    disabled: bool,
    #[serde(default, rename = "allowTools")]
    allow_tools: Option<Vec<String>>,
    #[serde(default, rename = "denyTools")]
    deny_tools: Vec<String>,
    #[serde(default)]
    timeout: Option<Value>,
    #[serde(default, rename = "outputBudget")]
    output_budget: Option<Value>,
    #[serde(default)]
    access: Option<Access>,
    #[serde(default, rename = "rateLimit")]
    rate_limit: Option<Value>,
    #[serde(default)]
    credentials: Option<Credentials>,
    #[serde(default, rename = "perReplica")]
    per_replica: Option<bool>,
}

/// The policy of entry `raw` (`None` when it sets none); an error for a key of the
/// wrong shape, or a `timeout` or `outputBudget` that is neither a number nor a
/// duration or size in words.
pub(super) fn read(raw: &Value) -> Result<Option<ServerPolicy>, String> {
    let entry = PolicyEntry::deserialize(raw).map_err(|e| e.to_string())?;
    let timeout = match &entry.timeout {
        None => None,
        Some(Value::Number(ms)) => ms.as_u64().map(Duration::from_millis),
        Some(Value::String(text)) => Some(capable_core::internal::time::parse_duration(text)?),
        Some(other) => return Err(format!("timeout {other} is not a duration")),
    };
    let output_budget = match &entry.output_budget {
        None => None,
        Some(Value::Number(bytes)) => bytes.as_u64().map(|b| b as usize),
        Some(Value::String(text)) => Some(capable_core::internal::text::parse_size(text)?),
        Some(other) => return Err(format!("outputBudget {other} is not a size")),
    };
    let rate_limit = entry
        .rate_limit
        .as_ref()
        .map(access::rate_limit)
        .transpose()?;
    let policy = ServerPolicy {
        access: entry.access,
        rate_limit,
        credentials: entry.credentials,
        per_replica: entry.per_replica,
        disabled: entry.disabled,
        allow_tools: entry.allow_tools,
        deny_tools: entry.deny_tools,
        timeout,
        output_budget,
    };
    Ok((policy != ServerPolicy::default()).then_some(policy))
}

#[cfg(test)]
mod tests {
    use super::super::ConfigFile;
    use super::*;

    #[test]
    fn a_servers_policy_is_read_from_its_entry() {
        let text = r#"{"mcpServers": {
            "docs": {"command": "d", "allowTools": ["search"], "denyTools": ["drop"],
                     "timeout": "30s", "outputBudget": "64KiB"},
            "off": {"command": "o", "disabled": true},
            "ms": {"url": "http://127.0.0.1:1/mcp", "timeout": 1500, "outputBudget": 100},
            "plain": {"command": "p"},
            "bad": {"command": "b", "timeout": "soon"}}}"#;
        let file = ConfigFile::from_text(text, "f.json", &|_| None).unwrap();
        let docs = &file.policies["docs"];
        assert_eq!(
            docs.allow_tools.as_deref(),
            Some(&["search".to_owned()][..])
        );
        assert_eq!(docs.timeout, Some(Duration::from_secs(30)));
        assert_eq!(docs.output_budget, Some(64 * 1024));
        assert!(
            docs.offers_tool("search") && !docs.offers_tool("drop") && !docs.offers_tool("other")
        );
        assert!(file.policies["off"].disabled);
        assert_eq!(
            file.policies["ms"].timeout,
            Some(Duration::from_millis(1500))
        );
        assert!(!file.policies.contains_key("plain"));
        let bad = file.servers.iter().find(|e| e.name == "bad").unwrap();
        assert!(bad.target.is_err(), "{:?}", bad.target);
        assert!(ServerPolicy::default().offers_tool("anything"));
    }

    #[test]
    fn who_may_call_and_how_much_are_read_and_a_mistake_in_them_breaks_the_entry() {
        let text = r#"{"gateway": {"groupsClaim": "roles"}, "mcpServers": {
            "docs": {"command": "d", "access": {"allow": {"groups": ["eng"]},
                     "tools": {"drop": {"subjects": ["alice"]}}},
                     "rateLimit": {"requests": 5, "per": "1m", "concurrent": 1}},
            "typo": {"command": "t", "access": {"allow": {"group": ["eng"]}}},
            "nolimit": {"command": "n", "rateLimit": {"requests": 5}}}}"#;
        let file = ConfigFile::from_text(text, "f.json", &|_| None).unwrap();
        let docs = &file.policies["docs"];
        let access = docs.access.as_ref().unwrap();
        assert_eq!(access.allow.groups, ["eng"]);
        assert_eq!(access.tools["drop"].subjects, ["alice"]);
        let limit = docs.rate_limit.unwrap();
        assert_eq!(limit.requests.unwrap().1, Duration::from_secs(60));
        assert_eq!(file.gateway.groups_claim.as_deref(), Some("roles"));
        for broken in ["typo", "nolimit"] {
            let entry = file.servers.iter().find(|e| e.name == broken).unwrap();
            assert!(entry.target.is_err(), "{broken}: {:?}", entry.target);
            assert!(!file.policies.contains_key(broken));
        }
        let bad_gateway = r#"{"gateway": {"rateLimit": {"concurrent": 0}}, "mcpServers": {}}"#;
        assert!(ConfigFile::from_text(bad_gateway, "f.json", &|_| None).is_err());
    }
}
