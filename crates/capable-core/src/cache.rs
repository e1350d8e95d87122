//! Response caching (SEP-2549, 2026-07-28): the freshness rule, as a decision.
//!
//! Servers put two hints on every result a client may keep — `server/discover`, the
//! lists (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`,
//! `skills/list`), and the reads (`resources/read`, `skills/get`):
//!
//! - `ttlMs`: the result is fresh while `now < received + ttlMs`. Absent, negative or
//!   not a number means 0: not kept at all. A server's absurd value is capped at a
//!   day ([`crate::time::ttl`]).
//! - `cacheScope`: `"private"` results must not be shared across authorization
//!   contexts; `"public"` ones may be. Within one connection there is one context, so
//!   both are kept; a cache that outlives the connection (the CLI's on disk) keys
//!   what it keeps by context.
//!
//! A result is kept under its [`CacheKey`]: the method and the params that choose the
//! answer (a list's cursor, a read's URI), never `_meta`. What invalidates it:
//!
//! | event | drops |
//! |---|---|
//! | `notifications/tools/list_changed` | every page of `tools/list` |
//! | `notifications/prompts/list_changed` | every page of `prompts/list` |
//! | `notifications/resources/list_changed` | every page of `resources/list` and `resources/templates/list` (the spec does not say whether templates are covered; dropping them too is the safe reading) |
//! | `notifications/resources/updated {uri}` | the reads of `uri` and of any resource it is a sub-resource of |
//! | an invalid cursor (`-32602` to a page) | every page of that list |
//!
//! Results that are not final (`input_required`, a task) and the retries of a
//! multi round-trip request are never kept. Nor is anything in the legacy era
//! ([`applies_to`]): its results carry no hints, and a session there pays nothing for
//! the cache (no key made, no result probed for hints). Time is given: every call
//! takes the moment it happens, and tests run the rule on a made-up clock.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::jsonrpc::{Params, Payload};
use crate::method::{Method, NotificationMethod};
use crate::model::is_same_or_sub_resource;
use crate::time::Now;
use crate::version::Era;

/// What a request does with the cache. In the legacy era, where nothing is kept
/// ([`applies_to`]), every policy asks the server and keeps nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CachePolicy {
    /// Serve a fresh result from the cache; ask the server otherwise and keep what it
    /// answers (the default).
    #[default]
    Use,
    /// Ask the server whatever the cache holds, and keep the new answer.
    Refresh,
    /// Ask the server, and leave the cache as it is.
    Bypass,
}

/// Whether a result may be shared across authorization contexts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Only for the authorization context it was fetched in (also the reading of an
    /// absent or unknown scope).
    #[default]
    Private,
    /// For anyone.
    Public,
}

/// The caching hints of one result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheHint {
    /// How long it stays fresh; `None`: not at all.
    pub ttl: Option<Duration>,
    /// Who may share it.
    pub scope: CacheScope,
}

impl CacheHint {
    /// Reads `ttlMs` and `cacheScope` off a result (missing or malformed: not
    /// cacheable, private).
    pub fn of(result: &Value) -> CacheHint {
        CacheHint::from_members(result.get("ttlMs"), result.get("cacheScope"))
    }

    /// The hints of a result whose `ttlMs` and `cacheScope` are these values.
    fn from_members(ttl_ms: Option<&Value>, cache_scope: Option<&Value>) -> CacheHint {
        let ttl = ttl_ms.and_then(Value::as_f64).and_then(crate::time::ttl);
        let scope = match cache_scope.and_then(Value::as_str) {
            Some("public") => CacheScope::Public,
            _ => CacheScope::Private,
        };
        CacheHint { ttl, scope }
    }

    /// Whether a result with these hints, received at `at`, is still fresh at `now`.
    pub fn fresh(&self, at: Instant, now: Instant) -> bool {
        self.ttl
            .and_then(|ttl| at.checked_add(ttl))
            .is_some_and(|until| now < until)
    }
}

/// Whether results are kept at all in `era`: only modern results (2026-07-28) carry
/// `ttlMs` and `cacheScope`. A legacy server's `ttlMs`, should it write one, is a
/// member the legacy schema does not define, and is not taken as a hint.
pub fn applies_to(era: Era) -> bool {
    era == Era::Modern
}

/// The methods whose results carry caching hints: the method table's cacheable
/// column ([`crate::method::MethodProps::is_cacheable`]).
pub fn is_cacheable(method: Method) -> bool {
    method.props().is_cacheable()
}

/// Which result a request asks for: its method and the params that choose the answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey {
    method: Method,
    params: String,
}

impl CacheKey {
    /// The key of a request, or `None` when its result is never kept (a method with
    /// no caching hints, or a multi round-trip retry, which carries
    /// `inputResponses` or `requestState`).
    pub fn new<P: Params + ?Sized>(method: Method, params: &P) -> Option<CacheKey> {
        if !is_cacheable(method) {
            return None;
        }
        Some(CacheKey {
            method,
            params: params.cache_key()?,
        })
    }

    /// The request's method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The params that choose the answer, as canonical JSON (`{}` for none).
    pub fn params(&self) -> &str {
        &self.params
    }

    fn uri(&self) -> Option<String> {
        let v: Value = serde_json::from_str(&self.params).ok()?;
        v.get("uri")?.as_str().map(str::to_owned)
    }
}

/// The canonical JSON of `params` as a cache key (see [`Params::cache_key`]): members
/// in order (serde_json's map is sorted), `_meta` left out, `{}` for none; `None` for
/// a multi round-trip retry's.
pub(crate) fn canonical_params(mut params: Value) -> Option<String> {
    if let Some(obj) = params.as_object_mut() {
        if obj.contains_key("inputResponses") || obj.contains_key("requestState") {
            return None;
        }
        obj.remove("_meta");
    }
    if params.is_null() {
        params = Value::Object(Default::default());
    }
    Some(params.to_string())
}

/// The members of a result that say whether and how long it may be kept.
#[derive(Debug, Default, PartialEq, serde::Deserialize)]
struct Hints {
    #[serde(default, rename = "ttlMs")]
    ttl_ms: Option<Value>,
    #[serde(default, rename = "cacheScope")]
    cache_scope: Option<Value>,
    #[serde(default, rename = "resultType")]
    result_type: Option<String>,
}

impl Hints {
    /// The hints of `result`; `None` when it does not decode as an object with them.
    fn of(result: &Payload) -> Option<Hints> {
        result.decode().ok()
    }
}

/// One kept result.
#[derive(Clone, Debug)]
pub struct Cached {
    /// The result exactly as the server sent it.
    pub payload: Payload,
    /// When it arrived (monotonic, for freshness).
    pub received: Instant,
    /// When it arrived (wall clock: a cached read still says when it was read).
    pub received_wall: SystemTime,
    /// Its hints.
    pub hint: CacheHint,
}

/// The results of one connection, each kept while fresh. See the module
/// documentation.
#[derive(Debug)]
pub struct ResponseCache {
    entries: HashMap<CacheKey, Cached>,
    capacity: usize,
}

impl Default for ResponseCache {
    fn default() -> Self {
        ResponseCache::with_capacity(1024)
    }
}

impl ResponseCache {
    /// A cache of at most `capacity` results (the oldest goes first).
    pub fn with_capacity(capacity: usize) -> ResponseCache {
        ResponseCache {
            entries: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The result kept for `key`, if it is still fresh at `now`.
    pub fn get(&self, key: &CacheKey, now: Instant) -> Option<&Cached> {
        self.entries
            .get(key)
            .filter(|c| c.hint.fresh(c.received, now))
    }

    /// Keeps `result`, received at `now`, under `key` when its hints allow it and it
    /// is final. Returns whether it was kept. A result that may not be kept replaces
    /// nothing but drops what was kept for the key (the server's answer is newer).
    pub fn store(&mut self, key: CacheKey, result: &Payload, now: Now) -> bool {
        self.keep(key, result, Hints::of(result), now)
    }

    /// [`ResponseCache::store`], noting on `result` the `resultType` its hints held:
    /// the caller's check of it then reads the note instead of the result again.
    pub(crate) fn store_noting(&mut self, key: CacheKey, result: &mut Payload, now: Now) -> bool {
        let hints = Hints::of(result);
        if let Some(h) = &hints {
            result.note_result_type(h.result_type.as_deref());
        }
        self.keep(key, result, hints, now)
    }

    fn keep(&mut self, key: CacheKey, result: &Payload, hints: Option<Hints>, now: Now) -> bool {
        let Some(hints) = hints else {
            self.entries.remove(&key);
            return false;
        };
        let final_answer = matches!(hints.result_type.as_deref(), None | Some("complete"));
        let hint = CacheHint::from_members(hints.ttl_ms.as_ref(), hints.cache_scope.as_ref());
        if !final_answer || hint.ttl.is_none() {
            self.entries.remove(&key);
            return false;
        }
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.evict_oldest();
        }
        self.entries.insert(
            key,
            Cached {
                payload: result.clone(),
                received: now.instant,
                received_wall: now.wall,
                hint,
            },
        );
        true
    }

    fn evict_oldest(&mut self) {
        let oldest = self
            .entries
            .iter()
            .min_by_key(|(_, c)| c.received)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.entries.remove(&k);
        }
    }

    /// Drops every result of `method` (every page of a list). Returns how many.
    pub fn invalidate(&mut self, method: Method) -> usize {
        let before = self.entries.len();
        self.entries.retain(|k, _| k.method != method);
        before - self.entries.len()
    }

    /// Drops what a server notification says is out of date (see the module
    /// documentation). Returns how many results were dropped.
    pub fn on_notification(&mut self, method: &str, params: &Value) -> usize {
        match NotificationMethod::from_name(method) {
            Some(NotificationMethod::ToolsListChanged) => self.invalidate(Method::ListTools),
            Some(NotificationMethod::PromptsListChanged) => self.invalidate(Method::ListPrompts),
            Some(NotificationMethod::ResourcesListChanged) => {
                self.invalidate(Method::ListResources)
                    + self.invalidate(Method::ListResourceTemplates)
            }
            Some(NotificationMethod::ResourceUpdated) => {
                let Some(updated) = params.get("uri").and_then(Value::as_str) else {
                    return 0;
                };
                let before = self.entries.len();
                self.entries.retain(|k, _| {
                    k.method != Method::ReadResource
                        || !k
                            .uri()
                            .is_some_and(|read| is_same_or_sub_resource(updated, &read))
                });
                before - self.entries.len()
            }
            _ => 0,
        }
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// How many results are kept (fresh or not).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(t0: Instant, ms: u64) -> Now {
        Now::new(t0 + Duration::from_millis(ms), SystemTime::UNIX_EPOCH)
    }

    fn result(v: Value) -> Payload {
        Payload::from_json(v.to_string())
    }

    fn list_key(method: Method) -> CacheKey {
        CacheKey::new(method, &json!({})).unwrap()
    }

    #[test]
    fn a_result_is_fresh_for_its_ttl_and_not_a_moment_longer() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::default();
        let key = list_key(Method::ListTools);
        let page = result(json!({"tools": [], "ttlMs": 1000, "cacheScope": "public"}));
        assert!(cache.store(key.clone(), &page, at(t0, 0)));
        assert!(cache.get(&key, at(t0, 999).instant).is_some());
        assert!(cache.get(&key, at(t0, 1000).instant).is_none());
        assert_eq!(cache.get(&key, t0).unwrap().hint.scope, CacheScope::Public);
    }

    #[test]
    fn no_ttl_a_zero_or_negative_ttl_and_unfinished_results_are_not_kept() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::default();
        let key = list_key(Method::ListTools);
        for r in [
            json!({"tools": []}),
            json!({"tools": [], "ttlMs": 0}),
            json!({"tools": [], "ttlMs": -5}),
            json!({"tools": [], "ttlMs": "soon"}),
            json!({"resultType": "input_required", "inputRequests": {}, "ttlMs": 1000}),
        ] {
            assert!(
                !cache.store(key.clone(), &result(r.clone()), at(t0, 0)),
                "{r}"
            );
        }
        assert!(cache.is_empty());
    }

    #[test]
    fn an_answer_that_may_not_be_kept_drops_the_older_one() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::default();
        let key = list_key(Method::ListPrompts);
        cache.store(
            key.clone(),
            &result(json!({"prompts": [], "ttlMs": 60000})),
            at(t0, 0),
        );
        cache.store(
            key.clone(),
            &result(json!({"prompts": [], "ttlMs": 0})),
            at(t0, 10),
        );
        assert!(cache.get(&key, at(t0, 20).instant).is_none());
    }

    #[test]
    fn keys_ignore_meta_and_refuse_retries_and_uncacheable_methods() {
        let a = CacheKey::new(
            Method::ReadResource,
            &json!({"uri": "a://x", "_meta": {"k": 1}}),
        );
        let b = CacheKey::new(Method::ReadResource, &json!({"uri": "a://x"}));
        assert_eq!(a, b);
        assert_ne!(
            b,
            CacheKey::new(Method::ReadResource, &json!({"uri": "a://y"}))
        );
        assert_ne!(
            CacheKey::new(Method::ListTools, &json!({})),
            CacheKey::new(Method::ListTools, &json!({"cursor": "2"}))
        );
        assert_eq!(CacheKey::new(Method::CallTool, &json!({"name": "x"})), None);
        let retry = json!({"uri": "a://x", "inputResponses": {}, "requestState": "s"});
        assert_eq!(CacheKey::new(Method::ReadResource, &retry), None);
    }

    #[test]
    fn list_changed_drops_every_page_of_its_list_only() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::default();
        let keep = |c: &mut ResponseCache, m: Method, p: Value| {
            let r = result(json!({"ttlMs": 60000}));
            c.store(CacheKey::new(m, &p).unwrap(), &r, at(t0, 0));
        };
        keep(&mut cache, Method::ListTools, json!({}));
        keep(&mut cache, Method::ListTools, json!({"cursor": "p2"}));
        keep(&mut cache, Method::ListPrompts, json!({}));
        keep(&mut cache, Method::ListResources, json!({}));
        keep(&mut cache, Method::ListResourceTemplates, json!({}));
        assert_eq!(
            cache.on_notification("notifications/tools/list_changed", &json!({})),
            2
        );
        assert_eq!(cache.len(), 3);
        assert_eq!(
            cache.on_notification("notifications/resources/list_changed", &json!({})),
            2
        );
        assert_eq!(
            cache.on_notification("notifications/message", &json!({})),
            0
        );
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn an_update_drops_the_reads_of_that_resource_and_of_what_contains_it() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::default();
        for uri in ["docs://manual", "docs://manual/current", "docs://other"] {
            let key = CacheKey::new(Method::ReadResource, &json!({"uri": uri})).unwrap();
            let r = result(json!({"contents": [], "ttlMs": 60000}));
            cache.store(key, &r, at(t0, 0));
        }
        let dropped = cache.on_notification(
            "notifications/resources/updated",
            &json!({"uri": "docs://manual/current"}),
        );
        assert_eq!(
            dropped, 2,
            "the read itself and the one it is a sub-resource of"
        );
        let other = CacheKey::new(Method::ReadResource, &json!({"uri": "docs://other"})).unwrap();
        assert!(cache.get(&other, t0).is_some());
    }

    #[test]
    fn the_cache_is_bounded_and_lets_the_oldest_go() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::with_capacity(2);
        for (i, uri) in ["a://1", "a://2", "a://3"].into_iter().enumerate() {
            let key = CacheKey::new(Method::ReadResource, &json!({"uri": uri})).unwrap();
            cache.store(key, &result(json!({"ttlMs": 60000})), at(t0, i as u64));
        }
        assert_eq!(cache.len(), 2);
        let first = CacheKey::new(Method::ReadResource, &json!({"uri": "a://1"})).unwrap();
        assert!(cache.get(&first, t0).is_none());
    }

    #[test]
    fn an_absurd_ttl_is_a_day_at_most() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::default();
        let key = list_key(Method::ListTools);
        cache.store(key.clone(), &result(json!({"ttlMs": 1e300})), at(t0, 0));
        let day = 24 * 3600 * 1000;
        assert!(cache.get(&key, at(t0, day - 1).instant).is_some());
        assert!(cache.get(&key, at(t0, day).instant).is_none());
    }

    #[test]
    fn a_result_s_hints_are_found_beside_its_bulk() {
        let text = "x".repeat(4096);
        let r = result(json!({"contents": [{"uri": "a://b", "text": text}],
            "ttlMs": 5000, "cacheScope": "public", "resultType": "complete"}));
        let hints = Hints::of(&r).expect("the hints");
        assert_eq!(hints.ttl_ms, Some(json!(5000)));
        assert_eq!(hints.cache_scope, Some(json!("public")));
        assert_eq!(hints.result_type.as_deref(), Some("complete"));
        // A duplicate hint is refused.
        let dup = Payload::from_json(r#"{"ttlMs":1,"ttlMs":2}"#);
        assert!(Hints::of(&dup).is_none());
    }

    /// What the cache read of a result's `resultType` is noted on it, and reads the
    /// same as the result itself says, whatever the value.
    #[test]
    fn the_result_type_the_hints_held_is_noted_on_the_result() {
        let t0 = Instant::now();
        let mut cache = ResponseCache::default();
        for (text, want) in [
            (
                r#"{"contents":[],"ttlMs":5,"resultType":"complete"}"#,
                Some("complete"),
            ),
            (r#"{"contents":[],"ttlMs":5}"#, None),
            (
                r#"{"resultType":"input_required","inputRequests":{}}"#,
                Some("input_required"),
            ),
            (r#"{"resultType":"task","task":{}}"#, Some("task")),
        ] {
            let key = CacheKey::new(Method::ReadResource, &json!({"uri": "a://x"})).unwrap();
            let mut p = Payload::from_json(text.to_owned());
            cache.store_noting(key, &mut p, at(t0, 0));
            assert_eq!(p.result_type().unwrap().as_deref(), want, "{text}");
            let fresh = Payload::from_json(text.to_owned());
            assert_eq!(fresh.result_type().unwrap().as_deref(), want, "{text}");
        }
    }
}
