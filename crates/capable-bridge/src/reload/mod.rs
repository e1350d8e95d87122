//! Reload without a restart: a bridge of many servers reads its config anew when the
//! file changes (its directory watched, `watch.rs`) or when told to (`SIGHUP` in
//! `capable bridge`), and applies it to every host's servers while they run.
//!
//! | what changed in the file | what the bridge does |
//! |---|---|
//! | a server added, removed, changed (command, args, env, url, headers, auth), `disabled` turned | each host's servers follow ([`Host::reload_with`](capable::host::Host::reload_with)): started, stopped (process groups ended), restarted; the others untouched, hosts' sessions kept |
//! | a server's `timeout` | that server restarted with it |
//! | `allowTools`, `denyTools`, `access`, `rateLimit`, `outputBudget`, `gateway.rateLimit` | the new policy in force from the next request on, swapped whole (`live.rs`); nothing locked on a request's way |
//! | a merged list | `notifications/…/list_changed` to each host that may hear it (as its era and declaration allow) |
//!
//! A file that cannot be used — not JSON, an unknown key, too big, not a regular file
//! (a FIFO), gone, or a rule that needs callers where nobody logs in — changes
//! nothing: the config in force stays, and the audit says why (`reload_failed`, on
//! stderr with the rest); a file written in many steps is read once it has been quiet
//! for a while, and again if it changed while it was read. Each attempt is counted
//! (`capable_bridge_reloads_total{outcome}`) and said (`reloaded` with what changed).
//! A change of the directory that leaves the config as it is (the pins lock file
//! beside it written) is silent.
//!
//! When to read the file, and the read that waits for it to stand still, are
//! [`Follow`]'s (`follow.rs`, over `watch.rs`), which `capable ui` follows its config
//! with too; what a reload does to the bridge is this file's.

mod follow;
mod live;
mod watch;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use capable::config::{ConfigEntry, ConfigFile, ServerPolicy};
use capable::host::{diff, newly_broken, ListKind};
use capable::internal::secrets::Secrets;
use serde_json::json;
use tokio::sync::watch as channel;

pub use follow::Follow;
pub use live::Live;

use crate::audit::Audit;
use crate::{BridgeConfig, BridgeError, Policy, Stop, Upstream};

/// A config read anew: its servers and the policy it gives.
#[non_exhaustive]
pub struct Loaded {
    /// The config.
    pub config: ConfigFile,
    /// Its policy (none: everything as the servers have it).
    pub policy: Option<Arc<dyn Policy>>,
    /// Secrets it brings (a new server's token): cut out of every audit line from now
    /// on, as the first config's are.
    pub secrets: Secrets,
}

impl Loaded {
    /// `config` with `policy`, no new secrets.
    pub fn new(config: ConfigFile, policy: Option<Arc<dyn Policy>>) -> Loaded {
        Loaded {
            config,
            policy,
            secrets: Secrets::default(),
        }
    }
}

/// Reads the config anew, or says in words why it cannot be used.
pub type Load = Arc<dyn Fn() -> Result<Loaded, String> + Send + Sync>;

/// How a bridge of many servers ([`Upstream::Many`]) reloads its config: its file
/// watched (editors' renames included), or told by a count that SIGHUP bumps.
#[derive(Clone)]
#[non_exhaustive]
pub struct Reload {
    /// Reads the config anew (with the bounds any config is read with).
    pub load: Load,
    /// The file to watch (its directory is): `None`, no watching.
    pub watch: Option<PathBuf>,
    /// Each change of this count reads the config anew (`SIGHUP`), and always says
    /// what came of it.
    pub hangups: Option<channel::Receiver<u64>>,
    /// How long the file must be left alone before it is read (200 ms).
    pub quiet: Duration,
}

impl Reload {
    /// Reloads with `load`; neither watching nor told to yet.
    pub fn new(load: Load) -> Reload {
        Reload {
            load,
            watch: None,
            hangups: None,
            quiet: Duration::from_millis(200),
        }
    }
}

impl std::fmt::Debug for Reload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reload")
            .field("watch", &self.watch)
            .field("quiet", &self.quiet)
            .finish_non_exhaustive()
    }
}

/// The config in force, as each host's servers follow it.
pub struct Generation {
    /// The config.
    pub config: ConfigFile,
    /// The merged lists whose offering the new policy may have changed.
    pub lists: Vec<ListKind>,
}

/// The servers of `file` a bridge serves: those of `only` (all when empty), not
/// `disabled`.
pub fn served(file: &ConfigFile, only: &[String]) -> Vec<ConfigEntry> {
    file.servers
        .iter()
        .filter(|e| only.is_empty() || only.contains(&e.name))
        .filter(|e| !file.policies.get(&e.name).is_some_and(|p| p.disabled))
        .cloned()
        .collect()
}

/// What follows a reload besides each host's servers.
pub struct Following {
    /// Where it is said and counted (its metrics' server slots follow the config).
    pub audit: Arc<Audit>,
    /// What stops the reloading.
    pub stop: Stop,
    /// The hosts are verified callers (a reloaded policy may then name who may call).
    pub known: bool,
    /// Whether some server exchanges callers' tokens: set by each config applied.
    pub exchanging: Arc<AtomicBool>,
}

/// Starts reloading `config` (many servers): its policy put behind a [`Live`], a task
/// that reads the file anew until `following.stop`. Returns the config in force, for
/// each host's servers to follow.
pub fn start(
    mut reload: Reload,
    config: &mut BridgeConfig,
    following: Following,
) -> Result<channel::Receiver<Arc<Generation>>, BridgeError> {
    let Following {
        audit,
        stop,
        known,
        exchanging,
    } = following;
    let Upstream::Many { config: file, only } = &config.upstream else {
        return Err(BridgeError::Config(
            "a reload is of a config's servers: serve them as many (--config without --server, --url or a command)".into(),
        ));
    };
    let first = Generation {
        config: file.clone(),
        lists: Vec::new(),
    };
    let (tx, rx) = channel::channel(Arc::new(first));
    let live = Arc::new(Live::new(config.policy.take()));
    config.policy = Some(live.clone());
    let follow = Follow::new(reload.watch.clone(), reload.hangups.take())
        .map_err(BridgeError::Config)?
        .quiet(reload.quiet);
    let reloader = Reloader {
        reload,
        only: only.clone(),
        live,
        tx,
        audit,
        known,
        exchanging,
        last_failure: None,
    };
    tokio::spawn(reloader.run(follow, stop));
    Ok(rx)
}

struct Reloader {
    reload: Reload,
    only: Vec<String>,
    live: Arc<Live>,
    tx: channel::Sender<Arc<Generation>>,
    audit: Arc<Audit>,
    known: bool,
    exchanging: Arc<AtomicBool>,
    /// Why the last read failed, said once until something else comes of a read.
    last_failure: Option<String>,
}

impl Reloader {
    async fn run(mut self, mut follow: Follow, stop: Stop) {
        loop {
            let next = async {
                match follow.next().await {
                    Some(forced) => forced,
                    // Neither the file nor a hangup can say anything any more.
                    None => std::future::pending().await,
                }
            };
            let forced = tokio::select! {
                forced = next => forced,
                _ = stop.stopped() => return,
                // The bridge is gone (nobody follows the config any more).
                () = self.tx.closed() => return,
            };
            self.once(&follow, forced).await;
        }
    }

    /// Reads the config and applies it; `forced` (a hangup): says what came of it even
    /// when nothing changed.
    async fn once(&mut self, follow: &Follow, forced: bool) {
        let load = self.reload.load.clone();
        let loaded = match follow.read(move || load()).await {
            Ok(loaded) => loaded,
            Err(why) => return self.failed(why, forced),
        };
        if let Some(rule) = loaded.policy.as_ref().and_then(|p| p.wants_callers()) {
            if !self.known {
                let why = format!(
                    "the rule {rule} names who may call, but this bridge's hosts do not log in"
                );
                return self.failed(why, forced);
            }
        }
        let before = self.tx.borrow().config.clone();
        if let Err(why) = usable(&before, &loaded.config, &self.only) {
            return self.failed(why, forced);
        }
        self.last_failure = None;
        if loaded.config == before && !forced {
            return;
        }
        self.audit.add_secrets(&loaded.secrets);
        let new = loaded.config;
        let mut servers = diff(&served(&before, &self.only), &served(&new, &self.only));
        let timeout =
            |file: &ConfigFile, name: &str| file.policies.get(name).and_then(|p| p.timeout);
        let (again, kept): (Vec<String>, Vec<String>) = servers
            .unchanged
            .drain(..)
            .partition(|name| timeout(&before, name) != timeout(&new, name));
        servers.unchanged = kept;
        servers.changed.extend(again);
        let (lists, policies) = lists_changed(&before, &new);
        self.live.swap(loaded.policy);
        let exchanging = crate::credentials::any_exchange(&new);
        self.exchanging.store(exchanging, Ordering::Relaxed);
        let metrics = self.audit.metrics();
        metrics.follow(crate::host::config_servers(&new, &self.only));
        let names: Vec<&str> = lists.iter().map(|l| l.name()).collect();
        self.tx.send_replace(Arc::new(Generation {
            config: new,
            lists: lists.clone(),
        }));
        self.audit.metrics().reload(true);
        self.audit.always(
            "reloaded",
            json!({"server": "bridge", "added": servers.added, "removed": servers.removed,
                "changed": servers.changed, "policies": policies, "lists": names}),
        );
    }

    fn failed(&mut self, why: String, forced: bool) {
        if !forced && self.last_failure.as_deref() == Some(why.as_str()) {
            return;
        }
        self.audit.metrics().reload(false);
        self.audit.always(
            "reload_failed",
            json!({"server": "bridge", "why": why, "kept": "the config in force stays"}),
        );
        self.last_failure = Some(why);
    }
}

/// Whether `new` may replace `before`: every server `--only` names still in it, and
/// no served entry broken that was not broken the same way before (a typo in one entry
/// would otherwise stop a server that runs; at start, such an entry is a refused server
/// beside the others).
fn usable(before: &ConfigFile, new: &ConfigFile, only: &[String]) -> Result<(), String> {
    if let Some(gone) = only
        .iter()
        .find(|o| !new.servers.iter().any(|e| &e.name == *o))
    {
        return Err(format!("--only {gone}: the new config has no such server"));
    }
    match newly_broken(&before.servers, &served(new, only)) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// The merged lists whose offering changed between two configs' policies, and the
/// servers whose policy changed.
fn lists_changed(before: &ConfigFile, after: &ConfigFile) -> (Vec<ListKind>, Vec<String>) {
    let none = ServerPolicy::default();
    let mut lists = Vec::new();
    let mut servers = Vec::new();
    let names = before.policies.keys().chain(after.policies.keys());
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            continue;
        }
        let (old, new) = (
            before.policies.get(name).unwrap_or(&none),
            after.policies.get(name).unwrap_or(&none),
        );
        if old == new {
            continue;
        }
        servers.push(name.clone());
        let access = |p: &ServerPolicy| p.access.clone().unwrap_or_default();
        let (a, b) = (access(old), access(new));
        let every = a.allow != b.allow;
        let tools = old.allow_tools != new.allow_tools || old.deny_tools != new.deny_tools;
        for (list, moved) in [
            (ListKind::Tools, every || tools || a.tools != b.tools),
            (ListKind::Prompts, every || a.prompts != b.prompts),
            (ListKind::Resources, every || a.resources != b.resources),
        ] {
            if moved && !lists.contains(&list) {
                lists.push(list);
            }
        }
    }
    (lists, servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ConfigFile {
        ConfigFile::from_text(text, "t.json", &|_| None).unwrap()
    }

    #[test]
    fn a_changed_rule_names_the_lists_it_moves_and_a_timeout_none() {
        let before = file(
            r#"{"mcpServers": {"a": {"command": "a", "allowTools": ["x"]},
            "b": {"command": "b", "access": {"prompts": {"p": {"groups": ["g"]}}}}}}"#,
        );
        let after = file(
            r#"{"mcpServers": {"a": {"command": "a", "allowTools": ["x", "y"]},
            "b": {"command": "b", "timeout": "5s", "access": {"prompts": {"p": {"groups": ["g"]}}}}}}"#,
        );
        let (lists, servers) = lists_changed(&before, &after);
        assert_eq!(lists, [ListKind::Tools]);
        assert_eq!(servers, ["a", "b"]);
        assert_eq!(lists_changed(&before, &before), (vec![], vec![]));
    }

    #[test]
    fn who_may_use_a_server_at_all_moves_every_list() {
        let before = file(r#"{"mcpServers": {"a": {"command": "a"}}}"#);
        let after = file(
            r#"{"mcpServers": {"a": {"command": "a", "access": {"allow": {"groups": ["g"]}}}}}"#,
        );
        let (lists, _) = lists_changed(&before, &after);
        assert_eq!(
            lists,
            [ListKind::Tools, ListKind::Prompts, ListKind::Resources]
        );
    }

    #[test]
    fn a_newly_broken_entry_or_a_chosen_server_gone_refuses_the_whole_file() {
        let before = file(r#"{"mcpServers": {"a": {"command": "a"}, "old": {"args": []}}}"#);
        let typo = file(r#"{"mcpServers": {"a": {"comand": "a"}, "old": {"args": []}}}"#);
        let why = usable(&before, &typo, &[]).unwrap_err();
        assert!(why.starts_with("mcpServers.a: "), "{why}");
        // Broken before the same way: not this reload's fault.
        assert_eq!(usable(&before, &before, &[]), Ok(()));
        // Not served: not judged.
        assert_eq!(usable(&before, &typo, &["old".into()]), Ok(()));
        let gone = file(r#"{"mcpServers": {"old": {"args": []}}}"#);
        let why = usable(&before, &gone, &["a".into()]).unwrap_err();
        assert!(why.contains("--only a"), "{why}");
    }

    #[test]
    fn the_servers_served_leave_out_the_disabled_and_those_not_chosen() {
        let f = file(
            r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "disabled": true},
            "c": {"command": "c"}}}"#,
        );
        let names =
            |entries: Vec<ConfigEntry>| entries.into_iter().map(|e| e.name).collect::<Vec<_>>();
        assert_eq!(names(served(&f, &[])), ["a", "c"]);
        assert_eq!(names(served(&f, &["c".into(), "b".into()])), ["c"]);
    }
}
