//! The config file watched: its directory, since editors and deploy tools write a file
//! anew and rename it into place (a watch on the file itself would follow the old one
//! away). Any change in the directory wakes the reloader once things have been quiet
//! for a while; the reloader reads the file and acts only when the config it gives
//! differs from the one in force (a write of the pins lock file beside it, or of any
//! other file there, changes nothing).

use std::path::Path;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// Changes in a directory, as they come (at most one waiting: one is enough to read the
/// file anew). Dropping it ends the watch.
pub struct Changes {
    _watcher: RecommendedWatcher,
    rx: mpsc::Receiver<()>,
}

impl Changes {
    /// Watches the directory of `file` (not its subdirectories).
    pub fn of(file: &Path) -> Result<Changes, notify::Error> {
        let (tx, rx) = mpsc::channel(1);
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<_>| {
            // An error of the watch (an overflowed queue) may hide a change: read anew.
            let _: &notify::Result<notify::Event> = &event;
            let _ = tx.try_send(());
        })?;
        let dir = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(Changes {
            _watcher: watcher,
            rx,
        })
    }

    /// Waits for a change, then until none came for `quiet` (a file written in many
    /// steps is read once, when it is done). `None`: the watch ended.
    pub async fn settled(&mut self, quiet: Duration) -> Option<()> {
        self.rx.recv().await?;
        loop {
            match tokio::time::timeout(quiet, self.rx.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) | Err(_) => return Some(()),
            }
        }
    }
}
