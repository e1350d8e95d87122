//! The config read anew while the inspector runs ([`Reloader`]): whoever follows the
//! file (`capable ui` watches its `--config` and takes `SIGHUP`) hands each read here.
//!
//! | the config read anew | the inspector |
//! |---|---|
//! | a server added, removed, changed | the host's servers follow ([`Host::reload_with`](capable::host::Host::reload_with)): started, stopped, restarted; the others untouched, their sessions, watches and calls going on; the page hears `reloaded` (what changed) and reads its list again |
//! | the same servers | nothing (said only when asked to: a `SIGHUP`) |
//! | unusable: not JSON, too big, gone, an entry broken anew | nothing changes; the page hears `reload_failed` with why, and shows it until a read succeeds |

use std::sync::{Arc, Mutex};

use capable::config::ConfigEntry;
use capable::host::{newly_broken, Reloaded};
use capable::internal::secrets::Secrets;
use serde_json::json;

use crate::state::AppState;

/// Applies a config read anew to a running inspector ([`Ui::reloader`](crate::Ui::reloader)).
#[derive(Clone)]
pub struct Reloader {
    state: Arc<AppState>,
    /// Why the last read could not be used, said once until something else comes of
    /// a read.
    last_failure: Arc<Mutex<Option<String>>>,
}

impl Reloader {
    pub(crate) fn new(state: Arc<AppState>) -> Reloader {
        Reloader {
            state,
            last_failure: Arc::default(),
        }
    }

    /// Applies `servers`, the entries of the config read anew, with the `secrets` they
    /// bring (cut out of everything the page gets from now on). An entry that cannot be
    /// used and was not broken the same way before refuses the whole file, as
    /// [`Reloader::refused`] says. `forced` (a `SIGHUP`): the page hears what came of
    /// it even when nothing changed. Returns what changed, or why nothing did.
    pub async fn apply(
        &self,
        servers: Vec<ConfigEntry>,
        secrets: &Secrets,
        forced: bool,
    ) -> Result<Reloaded, String> {
        let before = self.state.servers.entries();
        if let Some(why) = newly_broken(&before, &servers) {
            self.refused(&why, forced);
            return Err(why);
        }
        self.state.secrets.add(secrets);
        let done = match self.state.servers.reload(servers).await {
            Ok(done) => done,
            Err(e) => {
                let why = e.to_string();
                self.refused(&why, forced);
                return Err(why);
            }
        };
        *self.last_failure.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if forced || !done.is_empty() {
            self.state.bus.publish(
                "reloaded",
                json!({"added": done.added, "removed": done.removed, "changed": done.changed}),
            );
        }
        Ok(done)
    }

    /// Says on the page that the config read anew cannot be used, and why: the
    /// servers shown stay as they were. The same reason twice in a row is said once,
    /// unless `forced` (a `SIGHUP`: always answered).
    pub fn refused(&self, why: &str, forced: bool) {
        {
            let mut last = self.last_failure.lock().unwrap_or_else(|e| e.into_inner());
            if !forced && last.as_deref() == Some(why) {
                return;
            }
            *last = Some(why.to_owned());
        }
        self.state.bus.publish(
            "reload_failed",
            json!({"why": why, "kept": "the servers shown stay as they were"}),
        );
    }
}
