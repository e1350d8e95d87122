//! Who may use a server through a gateway, and how much: a config entry's `access` and
//! `rateLimit`, and the file's `gateway` section (where groups are read from, the limit
//! of each caller across every server). The rules themselves are judged by the core
//! ([`Rule`]); this reads them.
//!
//! ```json
//! {"gateway": {"groupsClaim": "realm_access.roles",
//!              "rateLimit": {"requests": 600, "per": "1m", "concurrent": 16}},
//!  "mcpServers": {"docs": {"command": "docs-server",
//!    "access": {"allow": {"groups": ["eng", "support"]},
//!               "tools": {"delete_page": {"groups": ["docs-admins"], "scopes": ["docs:write"]}},
//!               "prompts": {"escalate": {"subjects": ["alice"]}},
//!               "resources": {"docs://internal/salaries": {"groups": ["hr"]}}},
//!    "rateLimit": {"requests": 10, "per": "1s", "concurrent": 2}}}}
//! ```

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

pub use capable_core::internal::auth::access::Rule;

/// Who may list and use a server's tools, prompts and resources (an entry's
/// `access`): a caller must pass `allow` for anything of the server, and the rule of
/// a tool, prompt or resource that has one besides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Access {
    /// Who may use the server at all (default: anyone who may reach the gateway).
    #[serde(default)]
    pub allow: Rule,
    /// Rules of tools, by the server's own name of the tool.
    #[serde(default)]
    pub tools: BTreeMap<String, Rule>,
    /// Rules of prompts, by name.
    #[serde(default)]
    pub prompts: BTreeMap<String, Rule>,
    /// Rules of resources, by exact URI.
    #[serde(default)]
    pub resources: BTreeMap<String, Rule>,
}

impl Access {
    /// The first rule that names callers, as the config spells its place
    /// (`access.tools.delete_page`): such rules need a gateway that knows who is calling.
    pub fn naming_callers(&self) -> Option<String> {
        if self.allow.names_callers() {
            return Some("access.allow".into());
        }
        let kinds = [
            ("tools", &self.tools),
            ("prompts", &self.prompts),
            ("resources", &self.resources),
        ];
        kinds.into_iter().find_map(|(kind, rules)| {
            let (name, _) = rules.iter().find(|(_, r)| r.names_callers())?;
            Some(format!("access.{kind}.{name}"))
        })
    }
}

/// How much one caller may ask (`rateLimit`): requests per interval, and calls at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    /// At most this many requests each interval (`requests`, `per`).
    pub requests: Option<(NonZeroU32, Duration)>,
    /// At most this many tool calls in flight at once (`concurrent`).
    pub concurrent: Option<NonZeroU32>,
}

/// The file's `gateway` section: what holds for every server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatewayPolicy {
    /// The claim of an access token that names its bearer's groups or roles (dotted
    /// for a nested claim; default `groups`).
    pub groups_claim: Option<String>,
    /// Each caller's limit across every server.
    pub rate_limit: Option<RateLimit>,
    /// The store the gateway's replicas share (`store`; none: each counts alone).
    pub store: Option<super::store::StoreConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitEntry {
    #[serde(default)]
    requests: Option<u32>,
    #[serde(default)]
    per: Option<Value>,
    #[serde(default)]
    concurrent: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GatewayEntry {
    #[serde(default, rename = "groupsClaim")]
    groups_claim: Option<String>,
    #[serde(default, rename = "rateLimit")]
    rate_limit: Option<Value>,
    #[serde(default)]
    store: Option<Value>,
}

/// A `rateLimit` object (`{"requests": 10, "per": "1s", "concurrent": 2}`).
pub(super) fn rate_limit(raw: &Value) -> Result<RateLimit, String> {
    let entry = RateLimitEntry::deserialize(raw).map_err(|e| format!("rateLimit: {e}"))?;
    let per = match &entry.per {
        None => None,
        Some(Value::Number(ms)) => ms.as_u64().map(Duration::from_millis),
        Some(Value::String(text)) => Some(capable_core::internal::time::parse_duration(text)?),
        Some(other) => return Err(format!("rateLimit.per {other} is not a duration")),
    };
    let requests = match (entry.requests, per) {
        (None, None) => None,
        (Some(n), Some(per)) if n > 0 && !per.is_zero() => NonZeroU32::new(n).map(|n| (n, per)),
        (Some(_), None) => {
            return Err("rateLimit.requests needs its interval, rateLimit.per (\"1m\")".into())
        }
        (None, Some(_)) => return Err("rateLimit.per needs rateLimit.requests".into()),
        (Some(_), Some(_)) => {
            return Err("rateLimit.requests and rateLimit.per must be more than zero".into())
        }
    };
    let concurrent = match entry.concurrent {
        None => None,
        Some(n) => Some(
            NonZeroU32::new(n)
                .ok_or("rateLimit.concurrent must be more than zero: 0 serves nobody")?,
        ),
    };
    Ok(RateLimit {
        requests,
        concurrent,
    })
}

/// The file's `gateway` section, if it has one.
pub(super) fn gateway(doc: &Value) -> Result<GatewayPolicy, String> {
    let Some(raw) = doc.get("gateway") else {
        return Ok(GatewayPolicy::default());
    };
    let entry = GatewayEntry::deserialize(raw).map_err(|e| format!("gateway: {e}"))?;
    if let Some(claim) = &entry.groups_claim {
        if claim.is_empty() || claim.split('.').any(str::is_empty) {
            return Err(format!(
                "gateway.groupsClaim {claim:?}: a claim's name, or a dotted path to a nested one"
            ));
        }
    }
    Ok(GatewayPolicy {
        groups_claim: entry.groups_claim,
        rate_limit: entry
            .rate_limit
            .as_ref()
            .map(rate_limit)
            .transpose()
            .map_err(|e| format!("gateway.{e}"))?,
        store: entry
            .store
            .as_ref()
            .map(super::store::store)
            .transpose()
            .map_err(|e| format!("gateway.{e}"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rate_limit_says_how_many_requests_per_interval_and_calls_at_once() {
        let limit = rate_limit(&json!({"requests": 10, "per": "1s", "concurrent": 2})).unwrap();
        assert_eq!(
            limit.requests,
            Some((NonZeroU32::new(10).unwrap(), Duration::from_secs(1)))
        );
        assert_eq!(limit.concurrent, NonZeroU32::new(2));
        let ms = rate_limit(&json!({"requests": 5, "per": 250})).unwrap();
        assert_eq!(ms.requests.unwrap().1, Duration::from_millis(250));
        for bad in [
            json!({"requests": 10}),
            json!({"per": "1s"}),
            json!({"requests": 0, "per": "1s"}),
            json!({"requests": 1, "per": "0s"}),
            json!({"concurrent": 0}),
            json!({"requests": -1, "per": "1s"}),
            json!({"request": 1, "per": "1s"}),
            json!({"requests": 1, "per": true}),
        ] {
            assert!(rate_limit(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_gateway_section_names_the_groups_claim_and_each_callers_limit() {
        let g = gateway(&json!({"gateway": {"groupsClaim": "realm_access.roles",
            "rateLimit": {"concurrent": 4}}}))
        .unwrap();
        assert_eq!(g.groups_claim.as_deref(), Some("realm_access.roles"));
        assert_eq!(g.rate_limit.unwrap().concurrent, NonZeroU32::new(4));
        assert_eq!(gateway(&json!({})).unwrap(), GatewayPolicy::default());
        for bad in ["", "a..b", ".a"] {
            assert!(gateway(&json!({"gateway": {"groupsClaim": bad}})).is_err());
        }
        let typo = gateway(&json!({"gateway": {"groupClaim": "roles"}})).unwrap_err();
        assert!(typo.contains("groupClaim"), "{typo}");
    }

    #[test]
    fn rules_naming_callers_are_found_by_their_place() {
        let access: Access = serde_json::from_value(json!({
            "tools": {"open": {}, "drop": {"groups": ["admins"]}}}))
        .unwrap();
        assert_eq!(
            access.naming_callers().as_deref(),
            Some("access.tools.drop")
        );
        assert_eq!(Access::default().naming_callers(), None);
        let allow: Access = serde_json::from_value(json!({"allow": {"scopes": ["s"]}})).unwrap();
        assert_eq!(allow.naming_callers().as_deref(), Some("access.allow"));
    }
}
