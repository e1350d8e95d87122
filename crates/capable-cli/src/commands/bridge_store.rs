//! `capable bridge` with a store its replicas share (the config's `gateway.store`):
//! opened once at start (its password read from where the config says, kept out of
//! every line), asked once whether it answers, and given to the config's policy so its
//! rate limits are counted across the replicas. Without one, a gateway that looks like
//! one of many (a seal key is set) says at start what it gives up.

use std::sync::Arc;

use capable::config::{GatewayPolicy, WhenDown};
use capable_bridge::store::{RedisStore, Store};

use crate::exit::CliError;

/// The store the config names, with what holds while it is down (`None`: none named).
pub type Shared = Option<(Arc<dyn Store>, WhenDown)>;

/// The store of the config's `gateway` section, opened (not connected yet).
pub fn open(gateway: &GatewayPolicy) -> Result<Shared, CliError> {
    let Some(config) = &gateway.store else {
        return Ok(None);
    };
    let password = config.read_password().map_err(CliError::Usage)?;
    if let Some(password) = &password {
        crate::secrets::keep(|s| s.add(password));
    }
    let store = RedisStore::new(&config.redis, password.as_deref(), config.timeout)
        .map_err(|e| CliError::Usage(format!("gateway.store.redis: {e}")))?;
    Ok(Some((Arc::new(store), config.when_down)))
}

/// What the gateway says at start of the state its replicas share: the store
/// unreachable now (it serves anyway, as `whenDown` says), or, with a seal key and no
/// store, what many replicas give up.
pub async fn say_at_start(gateway: &GatewayPolicy, sealed: bool, shared: &Shared) {
    match (shared, &gateway.store) {
        (Some((store, when_down)), Some(config)) => {
            if let Err(e) = store.ping().await {
                let then = match when_down {
                    WhenDown::Open => {
                        "each replica counts its callers' limits alone, and keeps the \
                         subscriptions it takes, the log levels it is asked for and the tasks \
                         it makes (and lists them), until it answers"
                    }
                    _ => {
                        "requests under a rate limit, subscribes and setLevels a legacy \
                         host sends and its requests about another replica's task of the \
                         bridge's and its tasks/list are refused until it answers"
                    }
                };
                eprintln!(
                    "capable bridge: gateway.store ({}, timeout {}) cannot be reached now ({e}): {then}",
                    store.kind(),
                    capable::internal::time::humanize(config.timeout)
                );
            }
        }
        _ if sealed => eprintln!(
            "capable bridge: a seal key is set (a gateway of many replicas) and the config names \
             no gateway.store: each replica counts rate limits alone (a caller gets its limit \
             from every replica), a requestState is spent once on its own replica only, and a \
             legacy host's subscriptions to a 2026-07-28 server, a stdio server or the servers \
             of a --config stay with the replica that took them (delivered only while the host's \
             GET is there), and so does the log level it sets (logging/setLevel), and a task \
             of the bridge's own (a legacy host's task call a 2026-07-28 server answered at \
             once) is known only to the replica that made it, and a legacy host's tasks/list \
             lists the tasks started through the replica it reaches. \
             Name a Redis store in the config's gateway.store to share them."
        ),
        _ => {}
    }
}
