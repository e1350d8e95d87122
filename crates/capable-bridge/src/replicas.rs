//! Which servers each of many replicas may run: a server's `perReplica` in the config.
//!
//! Replicas given one seal key continue each other's legacy sessions (`listen/sealed.rs`),
//! and each replica runs its own copy of every server the config starts (a command). Most
//! servers hold nothing between calls that matters, and a copy per replica serves a
//! continued session as well as the first. A server that keeps what a session did in its
//! own process — a tool that remembers the last call, a scratch file, a login — would
//! meet a session continued on another replica as a stranger. `"perReplica": false` says
//! so of a server: a gateway run as one of many replicas leaves it out as if disabled
//! (`/readyz` does not wait for it), and its audit line says why. Such a server belongs
//! behind HTTP, where every replica reaches the same one, or on a single gateway.
//!
//! ```json
//! {"mcpServers": {"scratchpad": {"command": "scratchpad-server", "perReplica": false}}}
//! ```

use capable::config::{ConfigError, ConfigFile};

/// Leaves out of `file` every server it says must not run per replica (`perReplica:
/// false`): each is disabled (not started, not needed for readiness) and its target
/// becomes the error that says why. For a gateway run as
/// one of many replicas (given a seal key), at start and at each reload. Returns the
/// names left out.
pub fn hold_to_replicas(file: &mut ConfigFile) -> Vec<String> {
    let mut held = Vec::new();
    for entry in &mut file.servers {
        let Some(policy) = file.policies.get_mut(&entry.name) else {
            continue;
        };
        if policy.per_replica != Some(false) || entry.target.is_err() {
            continue;
        }
        // Not started, and not needed (`/readyz` does not wait for it), as a disabled
        // server; its target says why wherever the entry is shown.
        policy.disabled = true;
        entry.target = Err(ConfigError::Unsupported {
            path: file.path.clone(),
            name: entry.name.clone(),
            detail: "is not run here: it says `perReplica: false` (it keeps what a session \
                     did in its own process), and this gateway is one of many replicas (a \
                     seal key is given), each running its own copy; serve it over HTTP, \
                     which every replica shares, or from one gateway without a seal key"
                .into(),
        });
        held.push(entry.name.clone());
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_must_not_run_per_replica_is_left_out_with_why_and_only_it() {
        let text = r#"{"mcpServers": {
            "pad": {"command": "pad", "perReplica": false},
            "docs": {"command": "docs", "perReplica": true},
            "plain": {"command": "plain"},
            "web": {"url": "http://127.0.0.1:1/mcp", "perReplica": false}}}"#;
        let mut file = ConfigFile::from_text(text, "f.json", &|_| None).unwrap();
        // On an HTTP server it means nothing: a mistake, said as one.
        let web = file.servers.iter().find(|e| e.name == "web").unwrap();
        let why = web.target.as_ref().unwrap_err().to_string();
        assert!(why.contains("perReplica"), "{why}");
        assert_eq!(hold_to_replicas(&mut file), ["pad"]);
        for entry in &file.servers {
            let usable = entry.target.is_ok();
            assert_eq!(usable, ["docs", "plain"].contains(&entry.name.as_str()));
        }
        assert!(file.policies["pad"].disabled && !file.policies["docs"].disabled);
        let pad = file.servers.iter().find(|e| e.name == "pad").unwrap();
        let why = pad.target.as_ref().unwrap_err().to_string();
        assert!(
            why.contains("perReplica: false") && why.contains("seal key"),
            "{why}"
        );
        // Once is enough: nothing more is left out the second time.
        assert!(hold_to_replicas(&mut file).is_empty());
    }
}
