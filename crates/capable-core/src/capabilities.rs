//! What each side declares it can do, read exactly.
//!
//! A capability is **present when its key is present**, whatever its value: `"resources":
//! {}` declares resources with no optional features. Optional features are separate
//! flags inside the object and each is read on its own: `subscribe` (content changes of
//! single resources) and `listChanged` (the list itself changed) never imply each other,
//! and plain reading depends on neither.
//!
//! [`ServerCapabilities`] keeps the object exactly as the server sent it (unknown keys,
//! `experimental` and `extensions` included) next to the typed view the gating table
//! reads.

use serde::Serialize;
use serde_json::{Map, Value};

/// A server capability, by the key it has in `ServerCapabilities`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// `resources`: `resources/list`, `resources/templates/list`, `resources/read`.
    Resources,
    /// `tools`: `tools/list`, `tools/call`.
    Tools,
    /// `prompts`: `prompts/list`, `prompts/get`.
    Prompts,
    /// `logging`: `logging/setLevel` and `notifications/message`.
    Logging,
    /// `completions`: `completion/complete`.
    Completions,
}

impl Capability {
    /// Every standard capability, in display order.
    pub const ALL: [Capability; 5] = [
        Capability::Resources,
        Capability::Tools,
        Capability::Prompts,
        Capability::Logging,
        Capability::Completions,
    ];

    /// The key in `ServerCapabilities`.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Resources => "resources",
            Capability::Tools => "tools",
            Capability::Prompts => "prompts",
            Capability::Logging => "logging",
            Capability::Completions => "completions",
        }
    }

    /// The optional flags defined inside this capability's object.
    pub fn flags(self) -> &'static [Flag] {
        match self {
            Capability::Resources => &[Flag::Subscribe, Flag::ListChanged],
            Capability::Tools | Capability::Prompts => &[Flag::ListChanged],
            Capability::Logging | Capability::Completions => &[],
        }
    }
}

/// An optional feature flag inside a capability object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flag {
    /// `subscribe`: updates of single resources (legacy `resources/subscribe`, modern
    /// `resourceSubscriptions`).
    Subscribe,
    /// `listChanged`: notifications that a list changed.
    ListChanged,
}

impl Flag {
    /// The key inside the capability object.
    pub fn key(self) -> &'static str {
        match self {
            Flag::Subscribe => "subscribe",
            Flag::ListChanged => "listChanged",
        }
    }
}

/// How one capability was declared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Declared {
    /// The key is present (with any value).
    pub present: bool,
    /// `subscribe` is literally `true`.
    pub subscribe: bool,
    /// `listChanged` is literally `true`.
    pub list_changed: bool,
}

impl Declared {
    /// Whether a flag is set. Flags count only when the capability is present.
    pub fn flag(&self, flag: Flag) -> bool {
        self.present
            && match flag {
                Flag::Subscribe => self.subscribe,
                Flag::ListChanged => self.list_changed,
            }
    }
}

/// The server's capabilities: the object as sent, plus a typed view.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerCapabilities {
    raw: Map<String, Value>,
    resources: Declared,
    tools: Declared,
    prompts: Declared,
    logging: Declared,
    completions: Declared,
}

fn read(raw: &Map<String, Value>, key: &str) -> Declared {
    match raw.get(key) {
        None => Declared::default(),
        Some(value) => {
            let flag = |name: &str| value.get(name).and_then(Value::as_bool) == Some(true);
            Declared {
                present: true,
                subscribe: flag("subscribe"),
                list_changed: flag("listChanged"),
            }
        }
    }
}

impl ServerCapabilities {
    /// Reads a capabilities object. Anything that is not an object declares nothing
    /// (and is kept for display as an empty object).
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(raw) => Self::from_map(raw),
            _ => Self::from_map(Map::new()),
        }
    }

    /// Reads a capabilities object given as a map.
    pub fn from_map(raw: Map<String, Value>) -> Self {
        ServerCapabilities {
            resources: read(&raw, "resources"),
            tools: read(&raw, "tools"),
            prompts: read(&raw, "prompts"),
            logging: read(&raw, "logging"),
            completions: read(&raw, "completions"),
            raw,
        }
    }

    /// How `capability` was declared.
    pub fn get(&self, capability: Capability) -> Declared {
        match capability {
            Capability::Resources => self.resources,
            Capability::Tools => self.tools,
            Capability::Prompts => self.prompts,
            Capability::Logging => self.logging,
            Capability::Completions => self.completions,
        }
    }

    /// Whether `capability` is declared (its key is present).
    pub fn has(&self, capability: Capability) -> bool {
        self.get(capability).present
    }

    /// Whether `capability` is declared with `flag` set to `true`.
    pub fn has_flag(&self, capability: Capability, flag: Flag) -> bool {
        self.get(capability).flag(flag)
    }

    /// The value under `capability`'s key exactly as sent, if present.
    pub fn declared_value(&self, capability: Capability) -> Option<&Value> {
        self.raw.get(capability.key())
    }

    /// The object exactly as the server sent it.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }

    /// The server's `extensions` object, exactly as sent (2026-07-28; some servers
    /// declare it on a legacy handshake too).
    pub fn extensions(&self) -> Option<&Map<String, Value>> {
        self.raw.get("extensions").and_then(Value::as_object)
    }

    /// The settings of one extension, when the server declared it (presence by key).
    pub fn extension(&self, id: &str) -> Option<&Value> {
        self.extensions()?.get(id)
    }

    /// Whether the server declared `extension`.
    pub fn has_extension(&self, extension: crate::extensions::Extension) -> bool {
        self.extension(extension.id()).is_some()
    }

    /// The 2025-11-25 `tasks` capability, read by key.
    pub fn legacy_tasks(&self) -> crate::extensions::LegacyTasks {
        crate::extensions::LegacyTasks::read(self.raw.get("tasks"))
    }

    /// What a server that declared this says to a client of `version`: the object as
    /// declared, less the keys that version does not define — `completions` before
    /// 2025-03-26 (the method is there, unannounced), the core `tasks` outside
    /// 2025-11-25 (2026-07-28 moved them to an extension). Everything else is kept as
    /// sent, `experimental` and `extensions` included.
    pub fn for_version(&self, version: crate::ProtocolVersion) -> Value {
        let mut raw = self.raw.clone();
        if !version.has_completions_flag() {
            raw.remove("completions");
        }
        if !version.has_core_tasks() {
            raw.remove("tasks");
        }
        Value::Object(raw)
    }

    /// Keys the server declared that are not standard capabilities
    /// (`experimental`, `extensions`, `tasks`, and anything unknown).
    pub fn other_keys(&self) -> impl Iterator<Item = &str> {
        self.raw
            .keys()
            .map(String::as_str)
            .filter(|k| !Capability::ALL.iter().any(|c| c.key() == *k))
    }
}

impl Serialize for ServerCapabilities {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

/// The client capabilities capable declares: only what the host actually handles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// Extensions the host handles, by identifier, with their settings (2026-07-28
    /// `extensions`; sent on a legacy handshake too, for servers that read it there).
    /// `io.modelcontextprotocol/tasks` is declared only on modern requests: the
    /// 2025-11-25 way to ask for a task is per request.
    pub extensions: std::collections::BTreeMap<String, Value>,
    /// The host answers `roots/list`.
    pub roots: bool,
    /// The host tells the server when its roots change
    /// (`notifications/roots/list_changed`, legacy only: declared as
    /// `roots.listChanged`).
    pub roots_list_changed: bool,
    /// The host answers `sampling/createMessage`.
    pub sampling: bool,
    /// The host answers form-mode elicitation.
    pub elicitation_form: bool,
    /// The host answers URL-mode elicitation.
    pub elicitation_url: bool,
}

impl ClientCapabilities {
    /// Whether the host declared `extension`.
    pub fn has_extension(&self, extension: crate::extensions::Extension) -> bool {
        self.extensions.contains_key(extension.id())
    }

    /// Reads what a client declared (a server's view: `initialize`'s `capabilities`, a
    /// 2026-07-28 request's `io.modelcontextprotocol/clientCapabilities`), by key
    /// presence: `roots`, `sampling`, `elicitation` (an object with neither `form` nor
    /// `url` declares form mode, as before 2025-11-25 and by 2025-11-25's own rule),
    /// `extensions`. Anything that is not an object declares nothing.
    pub fn from_value(value: &Value) -> ClientCapabilities {
        let Some(map) = value.as_object() else {
            return ClientCapabilities::default();
        };
        let elicitation = map.get("elicitation");
        let mode = |m: &str| elicitation.and_then(|e| e.get(m)).is_some();
        let (form, url) = (mode("form"), mode("url"));
        ClientCapabilities {
            extensions: map
                .get("extensions")
                .and_then(Value::as_object)
                .map(|e| e.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
            roots: map.contains_key("roots"),
            roots_list_changed: map
                .get("roots")
                .and_then(|r| r.get("listChanged"))
                .and_then(Value::as_bool)
                == Some(true),
            sampling: map.contains_key("sampling"),
            elicitation_form: elicitation.is_some() && (form || !url),
            elicitation_url: url,
        }
    }

    /// The object to send for `version`: a capability a revision does not define is
    /// left out, and nothing is declared that the host does not handle.
    pub fn to_value(&self, version: crate::ProtocolVersion) -> Value {
        let mut map = Map::new();
        if self.roots {
            // 2026-07-28 removed `notifications/roots/list_changed`: a server asks for
            // the roots with each request that needs them.
            let mut roots = Map::new();
            if self.roots_list_changed && version.era() == crate::Era::Legacy {
                roots.insert("listChanged".into(), Value::Bool(true));
            }
            map.insert("roots".into(), Value::Object(roots));
        }
        if self.sampling {
            map.insert("sampling".into(), Value::Object(Map::new()));
        }
        if version.has_elicitation() && (self.elicitation_form || self.elicitation_url) {
            let mut modes = Map::new();
            if version.has_elicitation_modes() {
                if self.elicitation_form {
                    modes.insert("form".into(), Value::Object(Map::new()));
                }
                if self.elicitation_url {
                    modes.insert("url".into(), Value::Object(Map::new()));
                }
            }
            // Before 2025-11-25 only form mode exists and `{}` declares it.
            if version.has_elicitation_modes() || self.elicitation_form {
                map.insert("elicitation".into(), Value::Object(modes));
            }
        }
        let tasks = crate::extensions::Extension::Tasks.id();
        let extensions: Map<String, Value> = self
            .extensions
            .iter()
            .filter(|(id, _)| version.era() == crate::Era::Modern || id.as_str() != tasks)
            .map(|(id, settings)| (id.clone(), settings.clone()))
            .collect();
        if !extensions.is_empty() {
            map.insert("extensions".into(), Value::Object(extensions));
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(v: Value) -> ServerCapabilities {
        ServerCapabilities::from_value(v)
    }

    #[test]
    fn an_empty_object_is_present() {
        let c = caps(json!({"resources": {}}));
        assert!(c.has(Capability::Resources));
        assert!(!c.has_flag(Capability::Resources, Flag::Subscribe));
        assert!(!c.has_flag(Capability::Resources, Flag::ListChanged));
    }

    #[test]
    fn flags_are_independent() {
        let c = caps(json!({"resources": {"subscribe": true}}));
        assert!(c.has_flag(Capability::Resources, Flag::Subscribe));
        assert!(!c.has_flag(Capability::Resources, Flag::ListChanged));
        let c = caps(json!({"resources": {"listChanged": true}}));
        assert!(!c.has_flag(Capability::Resources, Flag::Subscribe));
        assert!(c.has_flag(Capability::Resources, Flag::ListChanged));
        let c = caps(json!({"resources": {"subscribe": false, "listChanged": false}}));
        assert!(c.has(Capability::Resources));
        assert!(!c.has_flag(Capability::Resources, Flag::Subscribe));
    }

    #[test]
    fn only_a_literal_true_sets_a_flag() {
        let c = caps(json!({"resources": {"subscribe": "true", "listChanged": 1}}));
        assert!(c.has(Capability::Resources));
        assert!(!c.has_flag(Capability::Resources, Flag::Subscribe));
        assert!(!c.has_flag(Capability::Resources, Flag::ListChanged));
    }

    #[test]
    fn absence_is_absence_and_unknown_keys_are_kept() {
        let c = caps(json!({"tools": {}, "experimental": {"x": {}}, "weird": 1}));
        assert!(!c.has(Capability::Resources));
        assert!(c.has(Capability::Tools));
        assert_eq!(
            c.other_keys().collect::<Vec<_>>(),
            vec!["experimental", "weird"]
        );
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"tools": {}, "experimental": {"x": {}}, "weird": 1})
        );
    }

    #[test]
    fn a_version_is_told_only_what_it_defines() {
        use crate::ProtocolVersion as V;
        let c = caps(
            json!({"tools": {}, "completions": {}, "tasks": {"list": {}},
            "extensions": {"io.modelcontextprotocol/skills": {}}}),
        );
        assert_eq!(
            c.for_version(V::V2024_11_05),
            json!({"tools": {}, "extensions": {"io.modelcontextprotocol/skills": {}}})
        );
        assert_eq!(
            c.for_version(V::V2025_11_25),
            serde_json::to_value(&c).unwrap()
        );
        assert_eq!(
            c.for_version(V::V2026_07_28),
            json!({"tools": {}, "completions": {}, "extensions": {"io.modelcontextprotocol/skills": {}}})
        );
    }

    #[test]
    fn a_null_value_is_still_a_present_key() {
        // Presence is by key; a server that writes `null` declared the key.
        let c = caps(json!({"logging": null}));
        assert!(c.has(Capability::Logging));
    }

    #[test]
    fn client_capabilities_follow_handlers_and_version() {
        use crate::ProtocolVersion as V;
        let none = ClientCapabilities::default();
        assert_eq!(none.to_value(V::V2025_11_25), json!({}));
        let elicit = ClientCapabilities {
            elicitation_form: true,
            ..Default::default()
        };
        assert_eq!(elicit.to_value(V::V2025_03_26), json!({}));
        assert_eq!(elicit.to_value(V::V2025_06_18), json!({"elicitation": {}}));
        assert_eq!(
            elicit.to_value(V::V2025_11_25),
            json!({"elicitation": {"form": {}}})
        );
        let roots = ClientCapabilities {
            roots: true,
            roots_list_changed: true,
            ..Default::default()
        };
        assert_eq!(
            roots.to_value(V::V2025_11_25),
            json!({"roots": {"listChanged": true}}),
            "legacy: changes are told"
        );
        assert_eq!(
            ClientCapabilities::from_value(&roots.to_value(V::V2025_11_25)),
            roots,
            "read back as declared"
        );
        let untold = ClientCapabilities {
            roots: true,
            ..Default::default()
        };
        assert_eq!(untold.to_value(V::V2025_11_25), json!({"roots": {}}));
        assert_eq!(
            roots.to_value(V::V2026_07_28),
            json!({"roots": {}}),
            "modern: there is no such notification"
        );
    }

    #[test]
    fn a_clients_declaration_is_read_by_key_and_mode() {
        let read = |v: Value| ClientCapabilities::from_value(&v);
        assert_eq!(read(json!({})), ClientCapabilities::default());
        assert_eq!(read(json!(null)), ClientCapabilities::default());
        let c = read(json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}}));
        assert!(c.roots && c.sampling && c.elicitation_form && !c.elicitation_url);
        let url = read(json!({"elicitation": {"url": {}}}));
        assert!(!url.elicitation_form && url.elicitation_url);
        let both = read(json!({"elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}}));
        assert!(both.elicitation_form && both.elicitation_url);
        assert!(both.has_extension(crate::extensions::Extension::Tasks));
        // What capable declares reads back as itself.
        assert_eq!(
            read(both.to_value(crate::ProtocolVersion::V2026_07_28)),
            both
        );
    }

    #[test]
    fn extensions_are_declared_as_the_host_set_them_and_tasks_only_when_modern() {
        let mut c = ClientCapabilities::default();
        c.extensions.insert(
            "io.modelcontextprotocol/ui".into(),
            json!({"mimeTypes": ["text/html;profile=mcp-app"]}),
        );
        c.extensions
            .insert("io.modelcontextprotocol/tasks".into(), json!({}));
        assert_eq!(
            c.to_value(crate::ProtocolVersion::V2026_07_28),
            json!({"extensions": {
                "io.modelcontextprotocol/tasks": {},
                "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}
            }})
        );
        assert_eq!(
            c.to_value(crate::ProtocolVersion::V2025_11_25),
            json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
        );
    }

    #[test]
    fn server_extensions_and_legacy_tasks_are_read_by_key() {
        use crate::extensions::Extension;
        let c = caps(json!({
            "extensions": {"io.modelcontextprotocol/skills": {}},
            "tasks": {"cancel": {}}
        }));
        assert!(c.has_extension(Extension::Skills));
        assert!(!c.has_extension(Extension::Tasks));
        assert_eq!(
            c.extension("io.modelcontextprotocol/skills"),
            Some(&json!({}))
        );
        let t = c.legacy_tasks();
        assert!(t.present && t.cancel && !t.list && !t.tool_calls);
    }
}
