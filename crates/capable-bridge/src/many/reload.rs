//! One host's servers following the config in force: each config a reload brings is
//! applied in turn by one task — the latest one when several came meanwhile, so an
//! older config is never applied after a newer one — while the host's requests go on.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use capable::host::Host;
use capable::ClientOptions;
use tokio::sync::watch;

use crate::policy::Policy;
use crate::reload::{served, Generation};
use crate::upstream;

/// What applies a config to one host's servers.
pub struct Applier {
    /// The servers (gone once the host's session ended: the applier ends too).
    pub host: Weak<Host>,
    /// The policy in force (a reload swaps what it stands for): each server's timeout.
    pub policy: Option<Arc<dyn Policy>>,
    /// The client options every server starts with, before its own timeout.
    pub client: ClientOptions,
    /// The servers chosen (`--only`; none: all).
    pub only: Vec<String>,
    /// Each server's own request timeout as it was last started.
    pub timeouts: BTreeMap<String, Option<Duration>>,
}

impl Applier {
    /// Applies each config `generation` brings, until the bridge or the host is gone.
    pub async fn run(mut self, mut generation: watch::Receiver<Arc<Generation>>) {
        while generation.changed().await.is_ok() {
            let now = generation.borrow_and_update().clone();
            let Some(host) = self.host.upgrade() else {
                return;
            };
            self.apply(&host, &now).await;
        }
    }

    /// The added started, the removed stopped, the changed — or those whose own
    /// timeout changed — restarted, the others untouched.
    async fn apply(&mut self, host: &Host, generation: &Generation) {
        let entries = served(&generation.config, &self.only);
        let policy = self.policy.clone();
        let timeout = move |name: &str| policy.as_ref().and_then(|p| p.request_timeout(name));
        let mut restart = Vec::new();
        for entry in &entries {
            let now = timeout(&entry.name);
            let was = self.timeouts.insert(entry.name.clone(), now);
            if was.is_some_and(|was| was != now) {
                restart.push(entry.name.clone());
            }
        }
        let client = &self.client;
        let client_of = move |name: &str| {
            let client = upstream::for_server(client, name);
            match timeout(name) {
                Some(t) => client.with_request_timeout(t),
                None => client,
            }
        };
        // Shut down meanwhile: nothing to follow.
        let _ = host.reload_with(&entries, &restart, &client_of).await;
    }
}
