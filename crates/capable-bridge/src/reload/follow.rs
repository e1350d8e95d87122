//! A config file followed: when to read it anew (its directory changed and has been
//! quiet for a while, or a `SIGHUP` came), and a read that waits for the file to stand
//! still. The bridge's reloader and `capable ui` follow their configs with it; what
//! each does with the config read is its own.
//!
//! ```no_run
//! # async fn run(hangups: tokio::sync::watch::Receiver<u64>) {
//! use capable_bridge::Follow;
//!
//! let path = std::path::PathBuf::from("mcp.json");
//! let mut follow = Follow::new(Some(path.clone()), Some(hangups)).expect("watched");
//! while let Some(forced) = follow.next().await {
//!     let file = path.clone();
//!     let read = follow.read(move || std::fs::read_to_string(&file).map_err(|e| e.to_string())).await;
//!     // Apply `read` (or say why it cannot be), saying so even unchanged when `forced`.
//! #   let _ = (forced, read);
//! }
//! # }
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch as channel;

use super::watch::Changes;

/// How a config file is followed: its directory watched, and a count that `SIGHUP`
/// bumps.
pub struct Follow {
    file: Option<PathBuf>,
    changes: Option<Changes>,
    hangups: Option<channel::Receiver<u64>>,
    quiet: Duration,
}

impl Follow {
    /// Follows `watch` (its directory: editors and deploy tools rename a new file into
    /// place) and each change of `hangups`; either may be `None`. The file must be left
    /// alone for 200 ms before it is read. Err: the directory cannot be watched.
    pub fn new(
        watch: Option<PathBuf>,
        hangups: Option<channel::Receiver<u64>>,
    ) -> Result<Follow, String> {
        let changes = match &watch {
            Some(path) => Some(
                Changes::of(path)
                    .map_err(|e| format!("cannot watch {} for changes: {e}", path.display()))?,
            ),
            None => None,
        };
        Ok(Follow {
            file: watch,
            changes,
            hangups,
            quiet: Duration::from_millis(200),
        })
    }

    /// The same, the file left alone for `quiet` before it is read.
    pub fn quiet(mut self, quiet: Duration) -> Follow {
        self.quiet = quiet;
        self
    }

    /// Waits for the next reason to read the file: `Some(false)` the file changed
    /// (and has been quiet since), `Some(true)` a hangup (say what comes of the read
    /// even when nothing changed); `None` once neither can come any more.
    pub async fn next(&mut self) -> Option<bool> {
        loop {
            if self.changes.is_none() && self.hangups.is_none() {
                return None;
            }
            let quiet = self.quiet;
            let changed = async {
                match &mut self.changes {
                    Some(c) => c.settled(quiet).await,
                    None => std::future::pending().await,
                }
            };
            let hangup = async {
                match &mut self.hangups {
                    Some(h) => h.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                seen = changed => match seen {
                    Some(()) => return Some(false),
                    None => self.changes = None,
                },
                told = hangup => match told {
                    true => return Some(true),
                    false => self.hangups = None,
                },
            }
        }
    }

    /// Reads the file with `load` (on a blocking thread), again if it changed while it
    /// was read (a few tries; then the next change reads it again).
    pub async fn read<T, L>(&self, load: L) -> Result<T, String>
    where
        T: Send + 'static,
        L: Fn() -> Result<T, String> + Send + Sync + 'static,
    {
        let path = self.file.clone();
        let stamp = move || {
            let meta = std::fs::metadata(path.as_ref()?).ok()?;
            Some((
                meta.len(),
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            ))
        };
        let load = Arc::new(load);
        for _ in 0..5 {
            let before = stamp();
            let load = load.clone();
            let loaded = tokio::task::spawn_blocking(move || load())
                .await
                .map_err(|e| format!("reading the config failed: {e}"))?;
            if stamp() == before {
                return loaded;
            }
            tokio::time::sleep(self.quiet).await;
        }
        Err("the file kept changing while it was read; the next change is read again".into())
    }
}
