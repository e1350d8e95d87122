//! Who may do what at a protected resource (the gateway's per-identity policy), every
//! decision sans-IO: which groups a verified token puts its bearer in ([`groups_in`],
//! read once when the token is verified and kept with its [`Caller`]), and whether a
//! [`Rule`] admits a caller.
//!
//! A rule names callers and what their token must grant:
//!
//! ```json
//! {"subjects": ["alice"], "groups": ["eng", "ops"], "scopes": ["docs:write"]}
//! ```
//!
//! A caller is admitted when it is *named* — its subject among `subjects`, or one of
//! its groups among `groups` (either list given; neither: anyone is named) — *and* its
//! token grants every scope of `scopes`. A rule without a caller (nobody logged in)
//! admits nobody, unless it names nobody and wants no scope.
//!
//! Groups come from one claim of the token, named by a dotted path (`groups`,
//! `roles`, `realm_access.roles`): an array of strings, or one string of
//! space-separated names. A missing claim, one of another type, or items that are not
//! strings are no membership — never an error; at most [`MAX_GROUPS`] names of at most
//! [`MAX_GROUP_LEN`] bytes are read, whatever the token holds.
//!
//! ```
//! use capable_core::internal::auth::access::{groups_in, Rule};
//! use serde_json::json;
//!
//! let claims = json!({"sub": "alice", "realm_access": {"roles": ["eng", 7, "ops"]}});
//! assert_eq!(groups_in(&claims, "realm_access.roles"), ["eng", "ops"]);
//! assert!(groups_in(&claims, "groups").is_empty());
//!
//! let rule: Rule = serde_json::from_value(json!({"groups": ["ops"], "scopes": ["deploy"]})).unwrap();
//! assert!(rule.names_callers());
//! ```

use serde::Deserialize;
use serde_json::Value;

use super::resource::Caller;

/// The most group names read from one token.
pub const MAX_GROUPS: usize = 256;

/// The longest group name read (a longer one is left out).
pub const MAX_GROUP_LEN: usize = 256;

/// The deepest dotted path followed.
const MAX_DEPTH: usize = 8;

/// The groups `claims` put its bearer in, read from the claim at `path` (dotted for a
/// nested claim): bounded, and empty when the claim is missing or of another type.
pub fn groups_in(claims: &Value, path: &str) -> Vec<String> {
    let mut at = claims;
    for (depth, part) in path.split('.').enumerate() {
        if depth >= MAX_DEPTH {
            return Vec::new();
        }
        match at.get(part) {
            Some(next) => at = next,
            None => return Vec::new(),
        }
    }
    let fits = |name: &&str| !name.is_empty() && name.len() <= MAX_GROUP_LEN;
    let mut groups: Vec<String> = match at {
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(fits)
            .take(MAX_GROUPS)
            .map(str::to_owned)
            .collect(),
        Value::String(names) => names
            .split_whitespace()
            .filter(fits)
            .take(MAX_GROUPS)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// Who a rule admits (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Subjects (`sub`) admitted by name.
    #[serde(default)]
    pub subjects: Vec<String>,
    /// Groups (or roles) whose members are admitted.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Scopes the caller's token must all grant.
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl Rule {
    /// Whether the rule says anything of who is calling (it is meaningless, and
    /// refused at start, where nobody logs in).
    pub fn names_callers(&self) -> bool {
        !(self.subjects.is_empty() && self.groups.is_empty() && self.scopes.is_empty())
    }

    /// Whether `caller` (`None`: nobody logged in) is admitted.
    pub fn admits(&self, caller: Option<&Caller>) -> bool {
        if !self.names_callers() {
            return true;
        }
        let Some(caller) = caller else {
            return false;
        };
        let anyone = self.subjects.is_empty() && self.groups.is_empty();
        let named = anyone
            || self.subjects.contains(&caller.subject)
            || self
                .groups
                .iter()
                .any(|g| caller.groups.binary_search(g).is_ok());
        named && self.scopes.iter().all(|s| caller.scopes.contains(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller(sub: &str, groups: &[&str], scopes: &[&str]) -> Caller {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        groups.sort_unstable();
        Caller {
            issuer: "https://id.example".into(),
            subject: sub.into(),
            client_id: None,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            groups,
            expires_at: 0,
        }
    }

    fn rule(v: Value) -> Rule {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_rule_admits_callers_it_names_who_hold_its_scopes() {
        let alice = caller("alice", &["eng"], &["docs:read"]);
        let bob = caller("bob", &["sales"], &["docs:read", "docs:write"]);
        let eng = rule(json!({"groups": ["eng", "ops"]}));
        assert!(eng.admits(Some(&alice)) && !eng.admits(Some(&bob)));
        let by_name = rule(json!({"subjects": ["bob"], "groups": ["ops"]}));
        assert!(by_name.admits(Some(&bob)) && !by_name.admits(Some(&alice)));
        // Named, and every scope granted.
        let writers = rule(json!({"groups": ["eng", "sales"], "scopes": ["docs:write"]}));
        assert!(writers.admits(Some(&bob)) && !writers.admits(Some(&alice)));
        // Scopes alone: anyone whose token grants them.
        let scoped = rule(json!({"scopes": ["docs:read"]}));
        assert!(scoped.admits(Some(&alice)) && scoped.admits(Some(&bob)));
        // Nobody logged in: only a rule that names nobody.
        assert!(!eng.admits(None) && !scoped.admits(None));
        assert!(Rule::default().admits(None) && !Rule::default().names_callers());
        // A subject is not a group, nor a group a subject.
        assert!(!rule(json!({"groups": ["alice"]})).admits(Some(&alice)));
        assert!(!rule(json!({"subjects": ["eng"]})).admits(Some(&alice)));
    }

    #[test]
    fn a_rule_with_an_unknown_key_is_refused_not_read_as_open() {
        let typo = serde_json::from_value::<Rule>(json!({"group": ["eng"]}));
        assert!(typo.is_err());
        assert!(serde_json::from_value::<Rule>(json!({"groups": "eng"})).is_err());
    }

    #[test]
    fn groups_are_read_from_a_claim_at_a_dotted_path() {
        let claims = json!({"groups": ["b", "a", "b"], "roles": "admin  reader",
            "realm_access": {"roles": ["ops"]}, "app": {"x": {"y": ["deep"]}}});
        assert_eq!(groups_in(&claims, "groups"), ["a", "b"]);
        assert_eq!(groups_in(&claims, "roles"), ["admin", "reader"]);
        assert_eq!(groups_in(&claims, "realm_access.roles"), ["ops"]);
        assert_eq!(groups_in(&claims, "app.x.y"), ["deep"]);
    }

    #[test]
    fn claims_missing_of_another_type_or_huge_are_no_membership_and_bounded() {
        let claims = json!({"n": 7, "o": {"a": 1}, "mixed": [1, null, {"g": "x"}, "ok", ""],
            "s": {"t": "not an object"}});
        for path in ["missing", "n", "o", "s.t.u", "o.a", "", ".", "n.x"] {
            assert!(groups_in(&claims, path).is_empty(), "{path}");
        }
        assert_eq!(groups_in(&claims, "mixed"), ["ok"]);
        let huge: Vec<String> = (0..100_000).map(|n| format!("g{n}")).collect();
        let long = "x".repeat(MAX_GROUP_LEN + 1);
        let claims = json!({"groups": huge, "long": [long, "short"]});
        assert_eq!(groups_in(&claims, "groups").len(), MAX_GROUPS);
        assert_eq!(groups_in(&claims, "long"), ["short"]);
        let deep = "a.".repeat(100) + "a";
        assert!(groups_in(&claims, &deep).is_empty());
    }
}
