//! What the pins judged while a config's servers started, written to the audit.

use std::collections::HashSet;

use capable::host::Host;

use crate::audit::Audit;

/// Writes to the audit what the pins judged while the servers started, from the
/// events `starting` received. Past the event channel's capacity (a server that
/// floods its stderr as it starts) the oldest events are lost: what the pins still
/// hold back and no event told is then written from the pins themselves, so the
/// evidence of a changed definition is never lost.
pub(super) fn audit_pins_judged(
    host: &Host,
    starting: &mut tokio::sync::broadcast::Receiver<capable::host::HostEvent>,
    audit: &Audit,
) {
    use capable::host::{HostEvent, Pending};
    use tokio::sync::broadcast::error::TryRecvError;
    let mut told = HashSet::new();
    let mut lagged = false;
    loop {
        match starting.try_recv() {
            Ok(event) => {
                match &event {
                    HostEvent::DefinitionChanged { server, change, .. } => {
                        told.insert((server.clone(), change.kind, change.name.clone()));
                    }
                    HostEvent::DefinitionHeld { server, kind, name } => {
                        told.insert((server.clone(), *kind, name.clone()));
                    }
                    _ => {}
                }
                audit.pins(&event);
            }
            Err(TryRecvError::Lagged(_)) => lagged = true,
            Err(TryRecvError::Empty | TryRecvError::Closed) => break,
        }
    }
    let Some(pins) = host.pins().filter(|_| lagged) else {
        return;
    };
    let withheld = !pins.policy().pass_changed;
    for pending in pins.pending() {
        let (server, kind, name) = pending.key();
        if told.contains(&(server.to_owned(), kind, name.to_owned())) {
            continue;
        }
        let event = match pending {
            Pending::Changed(change) => HostEvent::DefinitionChanged {
                server: change.server.clone(),
                server_version: host
                    .server(&change.server)
                    .and_then(|s| s.server_info.map(|i| i.version)),
                change: Box::new(change),
                withheld,
            },
            Pending::Held {
                server, kind, name, ..
            } => HostEvent::DefinitionHeld { server, kind, name },
            _ => continue,
        };
        audit.pins(&event);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use capable::host::{HostEvent, HostOptions, PinKind};

    /// Past the channel's capacity the oldest events are gone, and the receiver says
    /// so once: what came after is still written to the audit.
    #[tokio::test]
    async fn what_the_pins_judged_after_a_lag_still_reaches_the_audit() {
        let path =
            std::env::temp_dir().join(format!("capable-many-lag-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let audit = Audit::open(Some(&path), Default::default(), None, metrics).unwrap();
        let host = Host::new(HostOptions::default());
        let (send, mut starting) = tokio::sync::broadcast::channel(2);
        for name in ["first", "second", "third", "fourth"] {
            let held = HostEvent::DefinitionHeld {
                server: "docs".into(),
                kind: PinKind::Tool,
                name: name.into(),
            };
            send.send(held).unwrap();
        }
        audit_pins_judged(&host, &mut starting, &audit);
        let written = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(
            written.contains("\"fourth\"") && written.contains("\"third\""),
            "{written}"
        );
        assert!(!written.contains("\"first\""), "{written}");
    }
}
