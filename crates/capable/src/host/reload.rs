//! A host's config read anew: which servers were added, removed or changed.
//!
//! [`diff`] is a pure function of the entries before and after: no process is
//! touched, so what a reload will do can be shown (or tested) before it is done.
//! [`Host::reload`](crate::host::Host::reload) applies it:
//!
//! | an entry | in the new config | the host |
//! |---|---|---|
//! | added | a name it did not have | starts it (or keeps it refused, with why) |
//! | removed | a name it no longer has | stops it (its session closed, its process group ended) and forgets it |
//! | changed | the same name, another command, args, env, cwd, url, headers or auth — or now broken, or mended | stops the old one, starts the new one in its place |
//! | unchanged | the same name, the same entry | nothing: its session, subscriptions and calls in flight go on |
//!
//! A server's name is its identity: a renamed server is one removed and one added.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::supervisor::Server;
use super::{catalog, Host, HostError, HostEvent, ServerError, ServerState};
use crate::config::{ConfigEntry, ConfigFile};
use crate::options::ClientOptions;

/// What a reload changed, by server name, each list in the new config's order (the
/// removed ones in the old config's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Servers the new config adds.
    pub added: Vec<String>,
    /// Servers the new config no longer has.
    pub removed: Vec<String>,
    /// Servers whose entry is another now: restarted.
    pub changed: Vec<String>,
    /// Servers left as they were.
    pub unchanged: Vec<String>,
}

impl Reloaded {
    /// Whether nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// How one server of a host was touched by a reload ([`HostEvent::Reloaded`]).
///
/// [`HostEvent::Reloaded`]: crate::host::HostEvent::Reloaded
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerChange {
    /// New in the config: started.
    Added,
    /// Gone from the config: stopped and forgotten.
    Removed,
    /// Its entry changed: the old one stopped, the new one started.
    Changed,
}

impl ServerChange {
    /// `added`, `removed` or `changed`.
    pub fn name(self) -> &'static str {
        match self {
            ServerChange::Added => "added",
            ServerChange::Removed => "removed",
            ServerChange::Changed => "changed",
        }
    }
}

/// Which of `new`'s servers are added, changed or unchanged against `old`, and which
/// of `old`'s are removed. A name twice in one list counts once, the first standing
/// (as [`Host::from_config`](crate::host::Host::from_config) does).
pub fn diff(old: &[ConfigEntry], new: &[ConfigEntry]) -> Reloaded {
    let mut out = Reloaded::default();
    let first = |list: &'_ [ConfigEntry], name: &str| -> Option<usize> {
        list.iter().position(|e| e.name == name)
    };
    for (i, entry) in new.iter().enumerate() {
        if first(new, &entry.name) != Some(i) {
            continue;
        }
        match first(old, &entry.name).map(|j| &old[j]) {
            None => out.added.push(entry.name.clone()),
            Some(before) if before.target == entry.target => {
                out.unchanged.push(entry.name.clone());
            }
            Some(_) => out.changed.push(entry.name.clone()),
        }
    }
    for (j, entry) in old.iter().enumerate() {
        if first(old, &entry.name) == Some(j) && first(new, &entry.name).is_none() {
            out.removed.push(entry.name.clone());
        }
    }
    out
}

/// The first of `new`'s entries that cannot be used and was not broken the same way in
/// `old`, in words (`mcpServers.NAME: why`): a reload that would apply it would stop a
/// server that runs for a typo, so a follower of the file refuses the whole file
/// instead (at start, such an entry is a refused server beside the others).
pub fn newly_broken(old: &[ConfigEntry], new: &[ConfigEntry]) -> Option<String> {
    new.iter().find_map(|entry| {
        let Err(error) = &entry.target else {
            return None;
        };
        let was = old.iter().find(|e| e.name == entry.name);
        was.is_none_or(|was| was.target != entry.target)
            .then(|| format!("mcpServers.{}: {error}", entry.name))
    })
}

impl Host {
    /// Applies `file` anew ([`diff`] says what changes): servers added are started, those
    /// removed stopped (their sessions closed, their process groups ended, bounded by
    /// [`HostOptions::shutdown_timeout`](crate::host::HostOptions::shutdown_timeout)),
    /// those whose entry changed stopped and started again in their place; the others
    /// are not touched. Each touched server gets a [`HostEvent::Reloaded`], then its
    /// states; their lists leave and join the merged view with
    /// [`HostEvent::ListChanged`]. Returns at once after the stops, without waiting for
    /// the new servers to be ready ([`Host::started`] waits). Two reloads apply one
    /// after the other; after [`Host::shutdown`], [`HostError::ShutDown`].
    pub async fn reload(&self, file: &ConfigFile) -> Result<Reloaded, HostError> {
        let client = self.options.client.clone();
        self.reload_with(&file.servers, &[], &|_| client.clone())
            .await
    }

    /// [`Host::reload`] with each server's client options from `client` (by name), and
    /// the servers named in `restart` restarted even when their entries are the same
    /// (something of theirs outside the entry changed: their own timeout, say).
    pub async fn reload_with(
        &self,
        entries: &[ConfigEntry],
        restart: &[String],
        client: &(dyn Fn(&str) -> ClientOptions + Send + Sync),
    ) -> Result<Reloaded, HostError> {
        let _one_at_a_time = self.reloading.lock().await;
        if self.closed.load(Ordering::Acquire) {
            return Err(HostError::ShutDown);
        }
        let old: Vec<ConfigEntry> = self
            .all()
            .iter()
            .map(|s| ConfigEntry {
                name: s.name.clone(),
                target: s.entry.clone(),
            })
            .collect();
        let mut done = diff(&old, entries);
        let (again, kept) = done
            .unchanged
            .drain(..)
            .partition(|name| restart.contains(name));
        done.unchanged = kept;
        done.changed.extend(again);
        done.changed
            .sort_by_key(|name| entries.iter().position(|e| &e.name == name));

        // The removed and the changed stop together.
        let going: Vec<Arc<Server>> = self
            .all()
            .into_iter()
            .filter(|s| done.removed.contains(&s.name) || done.changed.contains(&s.name))
            .collect();
        let timeout = self.options.shutdown_timeout;
        futures_util::future::join_all(going.iter().map(|server| async move {
            let _one_at_a_time = server.op.lock().await;
            server.stop(&self.shared, timeout).await;
            if !matches!(server.slot().status.state, ServerState::Stopped) {
                server.set_state(&self.shared, ServerState::Stopped);
            }
        }))
        .await;

        for name in &done.removed {
            self.servers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|s| &s.name != name);
            self.said(name, ServerChange::Removed);
        }
        for entry in entries {
            let change = if done.changed.contains(&entry.name) {
                ServerChange::Changed
            } else if done.added.contains(&entry.name) {
                ServerChange::Added
            } else {
                continue;
            };
            let server = self.server_of(entry, client(&entry.name));
            {
                let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
                match servers.iter_mut().find(|s| s.name == entry.name) {
                    // A name twice in the new list: the first stood.
                    Some(_) if change == ServerChange::Added => continue,
                    Some(place) => *place = server.clone(),
                    None => servers.push(server.clone()),
                }
            }
            self.said(&entry.name, change);
            if server.has_target() {
                self.start(&server);
            }
        }
        Ok(done)
    }

    fn said(&self, server: &str, change: ServerChange) {
        self.shared.emit(HostEvent::Reloaded {
            server: server.to_owned(),
            change,
        });
    }

    /// The server of `entry`, not started: refused with why when its entry or name
    /// cannot be used.
    fn server_of(&self, entry: &ConfigEntry, client: ClientOptions) -> Arc<Server> {
        let (state, spec) = match &entry.target {
            Ok(target) => match catalog::check_name(&entry.name) {
                Ok(()) => (ServerState::Starting, Some((target.clone(), client))),
                Err(why) => {
                    let name = entry.name.clone();
                    let error = ServerError::InvalidName { name, why };
                    (ServerState::Refused { error }, None)
                }
            },
            Err(e) => {
                let error = ServerError::Config(e.clone());
                (ServerState::Refused { error }, None)
            }
        };
        Arc::new(Server::new(&entry.name, state, spec, entry.target.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigFile;

    fn entries(json: &str) -> Vec<ConfigEntry> {
        ConfigFile::from_text(json, "t.json", &|v| (v == "TOKEN").then(|| "b".into()))
            .unwrap()
            .servers
    }

    #[test]
    fn each_server_is_added_removed_changed_or_left_by_its_name_and_entry() {
        let old = entries(
            r#"{"mcpServers": {
                "same": {"command": "s", "args": ["1"]},
                "args": {"command": "a", "args": ["1"]},
                "env": {"command": "e", "env": {"K": "1"}},
                "url": {"url": "http://127.0.0.1:1/mcp"},
                "auth": {"url": "http://127.0.0.1:2/mcp", "headers": {"Authorization": "Bearer a"}},
                "gone": {"command": "g"}
            }}"#,
        );
        let new = entries(
            r#"{"mcpServers": {
                "same": {"command": "s", "args": ["1"]},
                "args": {"command": "a", "args": ["2"]},
                "env": {"command": "e", "env": {"K": "2"}},
                "url": {"url": "http://127.0.0.1:3/mcp"},
                "auth": {"url": "http://127.0.0.1:2/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "new": {"command": "n"}
            }}"#,
        );
        let d = diff(&old, &new);
        assert_eq!(d.added, ["new"]);
        assert_eq!(d.removed, ["gone"]);
        assert_eq!(d.changed, ["args", "env", "url", "auth"]);
        assert_eq!(d.unchanged, ["same"]);
        assert!(!d.is_empty());
    }

    #[test]
    fn the_same_config_read_twice_changes_nothing() {
        let text = r#"{"mcpServers": {"a": {"command": "a"}, "broken": {"args": []}}}"#;
        let d = diff(&entries(text), &entries(text));
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(d.unchanged, ["a", "broken"]);
    }

    #[test]
    fn an_entry_broken_or_mended_is_changed_and_a_rename_is_a_removal_and_an_addition() {
        let old = entries(r#"{"mcpServers": {"a": {"command": "a"}, "b": {"args": []}}}"#);
        let new = entries(r#"{"mcpServers": {"a": {"args": []}, "b": {"command": "b"}}}"#);
        assert_eq!(diff(&old, &new).changed, ["a", "b"]);
        let renamed = entries(r#"{"mcpServers": {"c": {"command": "a"}, "b": {"args": []}}}"#);
        let d = diff(&old, &renamed);
        assert_eq!(
            (d.added, d.removed),
            (vec!["c".to_owned()], vec!["a".to_owned()])
        );
    }

    #[test]
    fn an_entry_broken_anew_is_named_and_one_broken_the_same_way_before_is_not() {
        let old = entries(r#"{"mcpServers": {"a": {"command": "a"}, "b": {"args": []}}}"#);
        let typo = entries(r#"{"mcpServers": {"a": {"comand": "a"}, "b": {"args": []}}}"#);
        let why = newly_broken(&old, &typo).expect("a is broken now");
        assert!(why.starts_with("mcpServers.a: "), "{why}");
        assert_eq!(newly_broken(&old, &old), None);
        let added = entries(r#"{"mcpServers": {"a": {"command": "a"}, "c": {}}}"#);
        assert!(newly_broken(&old, &added).is_some_and(|w| w.starts_with("mcpServers.c: ")));
    }

    #[test]
    fn a_name_twice_counts_once_the_first_standing() {
        let one = |n: &str, c: &str| ConfigEntry {
            name: n.into(),
            target: Ok(crate::config::ServerTarget::Stdio(
                crate::ServerCommand::new(c, Vec::<String>::new()),
            )),
        };
        let old = vec![one("a", "x"), one("a", "y")];
        let new = vec![one("a", "x"), one("a", "z")];
        let d = diff(&old, &new);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(d.unchanged, ["a"]);
    }
}
