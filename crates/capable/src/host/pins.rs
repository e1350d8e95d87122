//! Pinned definitions in a host ([`PinStore`]): each server's tools and prompts judged
//! against the lock file when their list arrives ([`capable_core::Pins::judge`]), before
//! they reach the merged view. A definition that differs from its pin is withheld (or,
//! by [`PinPolicy::pass_changed`], passed) and reported as
//! [`HostEvent::DefinitionChanged`](super::HostEvent::DefinitionChanged) with both
//! definitions; a new one is pinned on first sight (the file written at once,
//! atomically) or held by [`PinPolicy::hold_new`]. Nothing of this runs per call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use capable_core::model::ResourceTemplate;
use capable_core::{Judged, Pin, PinChange, PinKind, PinPolicy, Pins, PinsError};
use serde::Serialize;
use serde_json::Value;

use super::catalog::{split, ListKind};
use super::{Host, HostError, HostEvent};

/// The largest lock file read.
pub const MAX_PINS_FILE: u64 = 16 << 20;

/// Why a host's pins cannot be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinStoreError {
    /// The file cannot be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// The file is not a lock file this build reads, or was edited by hand.
    #[error("{path}: {error}")]
    Pins {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        error: PinsError,
    },
}

/// A definition waiting to be accepted: one that differs from its pin, or one never
/// seen that the policy holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Pending {
    /// It differs from its pin.
    Changed(PinChange),
    /// It was never seen, and is held.
    Held {
        /// The server.
        server: String,
        /// Its kind.
        kind: PinKind,
        /// Its name.
        name: String,
        /// What it would be pinned as.
        now: Pin,
    },
}

impl Pending {
    /// Its server, kind and name.
    pub fn key(&self) -> (&str, PinKind, &str) {
        match self {
            Pending::Changed(c) => (&c.server, c.kind, &c.name),
            Pending::Held {
                server, kind, name, ..
            } => (server, *kind, name),
        }
    }

    /// What accepting it pins.
    pub fn now(&self) -> &Pin {
        match self {
            Pending::Changed(c) => &c.now,
            Pending::Held { now, .. } => now,
        }
    }
}

type PendingKey = (String, PinKind, String);

/// A host's pinned definitions and where they are kept.
#[derive(Clone, Debug)]
pub struct PinStore {
    path: PathBuf,
    policy: PinPolicy,
    /// Whether definitions seen for the first time are written to the file.
    write_new: bool,
    pins: Arc<Mutex<Pins>>,
    pending: Arc<Mutex<BTreeMap<PendingKey, Pending>>>,
}

impl PinStore {
    /// The pins kept at `path` (none yet when the file does not exist), judged under
    /// `policy`. A file that is too large, unreadable, of another version or edited by
    /// hand is an error: nothing is withheld silently, nothing accepted by default.
    pub fn open(path: impl Into<PathBuf>, policy: PinPolicy) -> Result<PinStore, PinStoreError> {
        let path = path.into();
        let io = |error| PinStoreError::Io {
            path: path.clone(),
            error,
        };
        let pins = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Pins::new(),
            Err(e) => return Err(io(e)),
            Ok(meta) if !meta.is_file() => {
                return Err(io(std::io::Error::other("not a regular file")))
            }
            Ok(meta) if meta.len() > MAX_PINS_FILE => {
                return Err(io(std::io::Error::other(format!(
                    "larger than {MAX_PINS_FILE} bytes"
                ))))
            }
            Ok(_) => {
                let text = std::fs::read_to_string(&path).map_err(io)?;
                Pins::parse(&text).map_err(|error| PinStoreError::Pins {
                    path: path.clone(),
                    error,
                })?
            }
        };
        Ok(PinStore {
            path,
            policy,
            write_new: true,
            pins: Arc::new(Mutex::new(pins)),
            pending: Arc::new(Mutex::new(BTreeMap::new())),
        })
    }

    /// The same store, judging without writing: definitions seen for the first time
    /// pass (or are held) for this run only — what a command that only looks does.
    pub fn looking_only(mut self) -> PinStore {
        self.write_new = false;
        self
    }

    /// What waits to be accepted, as of each server's last list.
    pub fn pending(&self) -> Vec<Pending> {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.values().cloned().collect()
    }

    /// Accepts what waits and `wanted(server, name)` picks: each pinned as it is now,
    /// the file read afresh and written with them alone added. Returns what was
    /// accepted.
    pub fn accept(
        &self,
        wanted: impl Fn(&str, &str) -> bool,
    ) -> Result<Vec<Pending>, PinStoreError> {
        let chosen: Vec<Pending> = self
            .pending()
            .into_iter()
            .filter(|p| {
                let (server, _, name) = p.key();
                wanted(server, name)
            })
            .collect();
        if chosen.is_empty() {
            return Ok(chosen);
        }
        let mut on_disk = PinStore::open(&self.path, self.policy)?.pins();
        for p in &chosen {
            let (server, kind, name) = p.key();
            on_disk.set(server, kind, name, p.now().clone());
            self.lock().set(server, kind, name, p.now().clone());
        }
        self.save(&on_disk)?;
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for p in &chosen {
            let (server, kind, name) = p.key();
            pending.remove(&(server.to_owned(), kind, name.to_owned()));
        }
        Ok(chosen)
    }

    /// The lock file of a config file: `NAME.pins.json` beside `config` (`team.json` →
    /// `team.pins.json`).
    pub fn beside(config: &Path) -> PathBuf {
        let stem = config
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "capable".into());
        config.with_file_name(format!("{stem}.pins.json"))
    }

    /// How definitions are judged.
    pub fn policy(&self) -> PinPolicy {
        self.policy
    }

    /// Where the pins are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A copy of the pins as they are now.
    pub fn pins(&self) -> Pins {
        self.lock().clone()
    }

    /// Judges `items` (`server`'s `kind` list); new pins are written to the file
    /// before this returns. The verdict stands even when that write fails (the new pins
    /// are kept in memory for this run): the write's error comes beside it.
    pub(crate) fn judge(
        &self,
        server: &str,
        kind: PinKind,
        items: &[Value],
    ) -> (Judged, Option<PinStoreError>) {
        let mut pins = self.lock();
        let judged = pins.judge(server, kind, items, self.policy);
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.retain(|(s, k, _), _| s != server || *k != kind);
            for change in &judged.changed {
                let key = (server.to_owned(), kind, change.name.clone());
                pending.insert(key, Pending::Changed(change.clone()));
            }
            for (name, now) in &judged.held {
                let key = (server.to_owned(), kind, name.clone());
                let held = Pending::Held {
                    server: server.to_owned(),
                    kind,
                    name: name.clone(),
                    now: now.clone(),
                };
                pending.insert(key, held);
            }
        }
        let unsaved = match judged.must_save() && self.write_new {
            true => self.save(&pins).err(),
            false => None,
        };
        (judged, unsaved)
    }

    /// Writes `pins` to the file: a temporary file beside it, renamed over it.
    fn save(&self, pins: &Pins) -> Result<(), PinStoreError> {
        let io = |error| PinStoreError::Io {
            path: self.path.clone(),
            error,
        };
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(format!(".{}.tmp", std::process::id()));
        let temporary = PathBuf::from(temporary);
        std::fs::write(&temporary, pins.to_text()).map_err(io)?;
        std::fs::rename(&temporary, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            io(e)
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pins> {
        self.pins.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The host's side of its pins: what it withholds, what it judges, what it accepts.
impl Host {
    /// The host's pinned definitions, if it has them ([`HostOptions::pins`](super::HostOptions::pins)).
    pub fn pins(&self) -> Option<&PinStore> {
        self.shared.pins.as_ref()
    }

    /// Every ready server's resource templates (`resources/templates/list`, where it
    /// declared resources), read now — the host keeps no list of them — and judged by
    /// its pins as tools are ([`Host::pinned_templates`]), by server. A server whose
    /// list fails is left out.
    pub async fn templates(&self) -> Vec<(String, Vec<ResourceTemplate>)> {
        let mut all = Vec::new();
        for status in self.servers() {
            let Ok(session) = self.session(&status.name) else {
                continue;
            };
            if session
                .check(capable_core::Method::ListResourceTemplates)
                .is_err()
            {
                continue;
            }
            if let Ok(templates) = session.list_resource_templates().await {
                let passed = self.pinned_templates(&status.name, templates);
                all.push((status.name, passed));
            }
        }
        all
    }

    /// Server `server`'s resource templates as the host's pins let them through: the
    /// host lists no templates itself, so whoever does (a bridge, an inspector) passes
    /// them here. Judged as tools and prompts are: one whose definition differs from its
    /// pin is left out (unless the policy passes changes) and reported as
    /// [`HostEvent::DefinitionChanged`], a new one pinned or held. All of them without
    /// pins.
    pub fn pinned_templates(
        &self,
        server: &str,
        templates: Vec<ResourceTemplate>,
    ) -> Vec<ResourceTemplate> {
        let Some(pins) = &self.shared.pins else {
            return templates;
        };
        let version = self
            .server(server)
            .and_then(|s| s.server_info.map(|i| i.version));
        let mut events = Vec::new();
        let (passed, _) = judge(
            server,
            pins,
            capable_core::PinKind::ResourceTemplate,
            templates,
            version,
            &mut events,
        );
        for event in events {
            self.shared.emit(event);
        }
        passed
    }

    /// Accepts the definitions waiting in the host's pins ([`PinStore::pending`]) that
    /// `wanted(server, name)` picks — each pinned as it is now ([`PinStore::accept`]) —
    /// and reads their servers' lists again, so that they join the merged view at
    /// once ([`HostEvent::ListChanged`]). Returns what was accepted; nothing without
    /// pins.
    pub async fn accept_pins(
        &self,
        wanted: impl Fn(&str, &str) -> bool,
    ) -> Result<Vec<Pending>, HostError> {
        let Some(pins) = &self.shared.pins else {
            return Ok(Vec::new());
        };
        let accepted = pins.accept(wanted).map_err(|error| HostError::Pins {
            error: Arc::new(error),
        })?;
        let mut lists: Vec<(String, ListKind)> = Vec::new();
        for pending in &accepted {
            let (server, kind, _) = pending.key();
            let list = match kind {
                capable_core::PinKind::Tool => ListKind::Tools,
                capable_core::PinKind::Prompt => ListKind::Prompts,
                _ => continue,
            };
            if !lists.iter().any(|(s, l)| s == server && *l == list) {
                lists.push((server.to_owned(), list));
            }
        }
        for (server, list) in lists {
            if let Ok(server) = self.find(&server) {
                server.reread(&self.shared, list).await;
            }
        }
        Ok(accepted)
    }

    /// Whether `qualified` (`server/name`) is a tool or prompt (`list`) the host's pins
    /// withhold: its definition changed since it was pinned, or it is new and held.
    pub fn withheld(&self, list: ListKind, qualified: &str) -> bool {
        // Without pins nothing is withheld: a call pays for no lookup.
        if self.shared.pins.is_none() {
            return false;
        }
        let Some((server, name)) = split(qualified) else {
            return false;
        };
        let found = {
            let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            servers.iter().find(|s| s.name == server).cloned()
        };
        found.is_some_and(|s| s.slot().lists.is_withheld(list, name))
    }
}

/// The `items` of `kind` that server `name`'s list brought and `pins` pass, and the
/// names kept out; what they withheld, held or could not save goes into `events`.
pub(super) fn judge<T: serde::Serialize>(
    name: &str,
    pins: &PinStore,
    kind: PinKind,
    items: Vec<T>,
    server_version: Option<String>,
    events: &mut Vec<HostEvent>,
) -> (Vec<T>, Vec<String>) {
    let values: Vec<serde_json::Value> = items
        .iter()
        .map(|i| serde_json::to_value(i).unwrap_or_default())
        .collect();
    let (judged, unsaved) = pins.judge(name, kind, &values);
    if let Some(error) = unsaved {
        events.push(HostEvent::PinsUnsaved {
            server: name.to_owned(),
            error: error.to_string(),
        });
    }
    let withheld = !pins.policy().pass_changed;
    let mut out = Vec::new();
    for change in judged.changed {
        if withheld {
            out.push(change.name.clone());
        }
        events.push(HostEvent::DefinitionChanged {
            server: name.to_owned(),
            server_version: server_version.clone(),
            change: Box::new(change),
            withheld,
        });
    }
    for (name, _) in judged.held {
        out.push(name.clone());
        events.push(HostEvent::DefinitionHeld {
            server: name.to_owned(),
            kind,
            name,
        });
    }
    let mut pass = judged.pass.into_iter().peekable();
    let passed = items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| match pass.peek() {
            Some(&next) if next == i => {
                pass.next();
                Some(item)
            }
            _ => None,
        })
        .collect();
    (passed, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "capable-pins-{name}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("team.pins.json")
    }

    #[test]
    fn first_sight_is_written_and_a_later_store_withholds_a_change() {
        let path = scratch("written");
        let store = PinStore::open(&path, PinPolicy::default()).unwrap();
        let v1 = [json!({"name": "search", "description": "v1"})];
        assert_eq!(store.judge("docs", PinKind::Tool, &v1).0.pass, vec![0]);
        let again = PinStore::open(&path, PinPolicy::default()).unwrap();
        let v2 = [json!({"name": "search", "description": "v2"})];
        let (judged, _) = again.judge("docs", PinKind::Tool, &v2);
        assert!(judged.pass.is_empty());
        assert_eq!(judged.changed.len(), 1);
        assert_eq!(again.pending().len(), 1);
        // Accepted: pinned as it is now, and nothing waits.
        let accepted = again.accept(|server, name| server == "docs" && name == "search");
        assert_eq!(accepted.unwrap().len(), 1);
        assert!(again.pending().is_empty());
        let third = PinStore::open(&path, PinPolicy::default()).unwrap();
        assert_eq!(third.judge("docs", PinKind::Tool, &v2).0.pass, vec![0]);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_store_that_only_looks_writes_nothing() {
        let path = scratch("looking");
        let store = PinStore::open(&path, PinPolicy::default())
            .unwrap()
            .looking_only();
        let v1 = [json!({"name": "search", "description": "v1"})];
        assert_eq!(store.judge("docs", PinKind::Tool, &v1).0.pass, vec![0]);
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_corrupted_or_odd_file_is_an_error_never_a_fresh_start() {
        let path = scratch("corrupt");
        std::fs::write(&path, "{ not json").unwrap();
        assert!(matches!(
            PinStore::open(&path, PinPolicy::default()),
            Err(PinStoreError::Pins { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(matches!(
            PinStore::open(&path, PinPolicy::default()),
            Err(PinStoreError::Io { .. })
        ));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn the_lock_file_sits_beside_its_config() {
        assert_eq!(
            PinStore::beside(Path::new("/etc/capable/team.json")),
            PathBuf::from("/etc/capable/team.pins.json")
        );
    }
}
