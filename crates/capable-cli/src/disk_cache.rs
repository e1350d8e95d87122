//! The command line's small cache on disk: one directory per server, so that a
//! one-shot command knows what an earlier one learnt.
//!
//! What it keeps, today: the server's tool list (`tools.json`), when the server said
//! how long it stays fresh (`ttlMs` > 0, 2026-07-28). A `capable tools call` then
//! knows each tool's `x-mcp-header` annotations (the `Mcp-Param-*` headers go out)
//! and `outputSchema` (the result is checked) without listing first; when the list
//! is stale or was never kept, it lists first. A `notifications/tools/list_changed`
//! seen in a session drops the file.
//!
//! Where: `$XDG_CACHE_HOME/capable` (else `~/.cache/capable`), one directory per
//! server *and authorization context*: its name is a digest of the command line (or
//! URL) and of the extra headers sent (`--header`, a config's `headers`), so a
//! `private` result is never served to another credential. `--no-cache` neither
//! reads nor writes; `--refresh` ignores what is kept and keeps the new answer. A
//! cache that cannot be read or written is no cache: never an error — unless the file
//! is not what capable writes there (a FIFO, a device, a directory, a symlink loop,
//! larger than a [`FileKind::Cache`] may be, which capable never keeps): that is
//! refused like any such file (exit 2), and `--no-cache` goes around it.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use capable::file::{FileError, FileKind};
use capable::internal::model::Tool;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use capable::config::ServerTarget;

use crate::exit::CliError;

/// How a command uses the cache (from `--no-cache` and `--refresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Read what is fresh, keep what is new.
    Normal,
    /// Do not read; keep what is new.
    Refresh,
    /// Neither read nor keep.
    Off,
}

/// One server's cache directory.
#[derive(Clone, Debug)]
pub struct ServerCache {
    dir: Option<PathBuf>,
    mode: Use,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeptTools {
    /// When the list arrived, in ms since the epoch.
    stored_at_ms: u64,
    /// How long it stays fresh, in ms.
    ttl_ms: u64,
    /// The server's `cacheScope`.
    cache_scope: String,
    tools: Vec<Tool>,
}

fn root() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("capable"))
}

/// The directory name of a server and authorization context.
fn key(target: &ServerTarget, extra_headers: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    match target {
        ServerTarget::Stdio(cmd) => {
            h.update(b"stdio\0");
            h.update(cmd.program.as_bytes());
            for a in &cmd.args {
                h.update(b"\0");
                h.update(a.as_bytes());
            }
            for (k, v) in &cmd.env {
                h.update(format!("\0env {k}={v}").as_bytes());
            }
            if let Some(cwd) = &cmd.cwd {
                h.update(format!("\0cwd {}", cwd.display()).as_bytes());
            }
        }
        ServerTarget::Http {
            url,
            headers,
            oauth,
        } => {
            h.update(b"http\0");
            h.update(url.as_bytes());
            // Another OAuth client (id, scopes, grant) is another credential.
            if let Some(o) = oauth {
                h.update(format!("\0oauth {o:?}").as_bytes());
            }
            let mut all: Vec<_> = headers.iter().chain(extra_headers).collect();
            all.sort();
            for (k, v) in all {
                h.update(format!("\0{}:{v}", k.to_ascii_lowercase()).as_bytes());
            }
        }
    }
    h.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl ServerCache {
    /// The cache of `target` as reached with `extra_headers`.
    pub fn new(target: &ServerTarget, extra_headers: &[(String, String)], mode: Use) -> Self {
        let dir = match mode {
            Use::Off => None,
            _ => root().map(|r| r.join(key(target, extra_headers))),
        };
        ServerCache { dir, mode }
    }

    fn file(&self, name: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(name))
    }

    /// The kept tool list, if it is still fresh; an error only when the file is
    /// refused for what it is.
    pub fn fresh_tools(&self) -> Result<Option<Vec<Tool>>, CliError> {
        let Some(path) = self.file("tools.json").filter(|_| self.mode == Use::Normal) else {
            return Ok(None);
        };
        let text = match capable::file::read(&path, FileKind::Cache) {
            Ok(text) => text,
            Err(error @ FileError::Refused(_)) => {
                return Err(CliError::File {
                    what: "the tool cache (--no-cache skips it)".into(),
                    error,
                })
            }
            Err(_) => return Ok(None),
        };
        let Ok(kept) = serde_json::from_slice::<KeptTools>(&text) else {
            return Ok(None);
        };
        let fresh = kept
            .stored_at_ms
            .checked_add(kept.ttl_ms)
            .is_some_and(|until| now_ms() < until);
        Ok(fresh.then_some(kept.tools))
    }

    /// Keeps a tool list that stays fresh for `ttl` (nothing is kept without one).
    pub fn keep_tools(&self, tools: &[Tool], ttl: Option<Duration>, scope: &str) {
        let (Some(path), Some(ttl)) = (self.file("tools.json"), ttl) else {
            return;
        };
        if ttl.is_zero() {
            return;
        }
        let kept = KeptTools {
            stored_at_ms: now_ms(),
            ttl_ms: ttl.as_millis().min(u128::from(u64::MAX)) as u64,
            cache_scope: scope.to_owned(),
            tools: tools.to_vec(),
        };
        // Never more than a later read would accept.
        let Ok(text) = serde_json::to_vec(&kept) else {
            return;
        };
        if text.len() as u64 > FileKind::Cache.limit() {
            return;
        }
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Written whole, then renamed: a reader never sees half a file.
        let tmp = path.with_extension(format!("json.{}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    /// Drops the kept tool list (the server said it changed).
    pub fn forget_tools(&self) {
        if let Some(path) = self.file("tools.json") {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capable::ServerCommand;

    #[test]
    fn each_server_and_credential_has_its_own_directory() {
        let stdio = ServerTarget::Stdio(ServerCommand::new("node", ["a.js"]));
        let other = ServerTarget::Stdio(ServerCommand::new("node", ["b.js"]));
        assert_ne!(key(&stdio, &[]), key(&other, &[]));
        let http = ServerTarget::Http {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: vec![],
            oauth: None,
        };
        let alice = [("Authorization".to_owned(), "Bearer a".to_owned())];
        let bob = [("Authorization".to_owned(), "Bearer b".to_owned())];
        assert_ne!(key(&http, &alice), key(&http, &bob));
        assert_eq!(key(&http, &alice), key(&http, &alice));
    }
}
