//! Watches from the page: each a task that follows one resource with
//! [`Session::watch`] and puts every event on the stream as a `watch` event — the
//! mode and why, each revision as it arrives, a contract violation with both
//! messages, then the fallback's mode — the lines `capable watch --json` prints, with
//! the watch's id and server around each (`{"watch", "server", "line"}`).
//!
//! A watch ends when the page stops it, the page that started it is gone
//! (`pages.rs`), its server is disconnected, or it fails; it ends in order either way
//! (`resources/unsubscribe`, or the listen stream closed).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::internal::{Flag, Refusal};
use capable::{Error, Session, WatchPolicy};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::bus::Bus;
use crate::error::ApiError;
use crate::pages::{Pages, GRACE};

struct Running {
    server: String,
    /// The page that started it (none: a script, with the token).
    page: Option<String>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// The open watches.
pub struct Watches {
    bus: Bus,
    next: AtomicU64,
    running: Mutex<HashMap<u64, Running>>,
    pages: Mutex<Pages>,
}

impl Watches {
    /// None yet.
    pub fn new(bus: Bus) -> Watches {
        Watches {
            bus,
            next: AtomicU64::new(1),
            running: Mutex::new(HashMap::new()),
            pages: Mutex::new(Pages::default()),
        }
    }

    /// Starts watching `uri` for `page` (none: a script): its id, or why the server's
    /// declarations allow no watch (nothing sent).
    pub async fn start(
        &self,
        server: &str,
        page: Option<String>,
        session: Arc<Session>,
        uri: String,
        poll: Option<Duration>,
    ) -> Result<u64, ApiError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (started_tx, started) = oneshot::channel();
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(follow(
            self.bus.clone(),
            server.to_owned(),
            id,
            session,
            uri,
            WatchPolicy { poll },
            started_tx,
            stopped,
        ));
        match started.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(ApiError::usage("the watch ended before it started")),
        }
        self.lock().insert(
            id,
            Running {
                server: server.to_owned(),
                page,
                stop,
                task,
            },
        );
        Ok(id)
    }

    /// Stops watch `id` (after its unsubscribe); whether it was running.
    pub async fn stop(&self, id: u64) -> bool {
        let running = self.lock().remove(&id);
        match running {
            Some(r) => {
                end(r).await;
                true
            }
            None => false,
        }
    }

    /// Stops every watch of `server`.
    pub async fn stop_server(&self, server: &str) {
        let ids: Vec<u64> = self
            .lock()
            .iter()
            .filter(|(_, r)| r.server == server)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.stop(id).await;
        }
    }

    /// An event stream of `page` opened; the returned guard says when it closes.
    pub fn page_opened(self: &Arc<Self>, page: &str) -> PageStream {
        self.pages().opened(page);
        PageStream {
            watches: self.clone(),
            page: page.to_owned(),
        }
    }

    /// Stops the watches of `page` if none of its streams came back within the grace
    /// since its last closed (at `generation`).
    async fn page_closed(self: Arc<Self>, page: String, generation: u64) {
        tokio::time::sleep(GRACE).await;
        if !self.pages().gone(&page, generation) {
            return;
        }
        let ids: Vec<u64> = self
            .lock()
            .iter()
            .filter(|(_, r)| r.page.as_deref() == Some(page.as_str()))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.stop(id).await;
        }
    }

    fn pages(&self) -> std::sync::MutexGuard<'_, Pages> {
        self.pages.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An open event stream of a page: dropped as the stream closes.
pub struct PageStream {
    watches: Arc<Watches>,
    page: String,
}

impl Drop for PageStream {
    fn drop(&mut self) {
        let Some(generation) = self.watches.pages().closed(&self.page) else {
            return;
        };
        let page = std::mem::take(&mut self.page);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(self.watches.clone().page_closed(page, generation));
        }
    }
}

async fn end(r: Running) {
    let _ = r.stop.send(());
    let mut task = r.task;
    if tokio::time::timeout(Duration::from_secs(5), &mut task)
        .await
        .is_err()
    {
        task.abort();
    }
}

/// One watch's life.
#[allow(clippy::too_many_arguments)]
async fn follow(
    bus: Bus,
    server: String,
    id: u64,
    session: Arc<Session>,
    uri: String,
    policy: WatchPolicy,
    started: oneshot::Sender<Result<(), ApiError>>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut watch = match session.watch(&uri, policy) {
        Ok(w) => w,
        Err(e) => {
            let _ = started.send(Err(refused(&session, e)));
            return;
        }
    };
    let _ = started.send(Ok(()));
    // The line `capable watch --json` prints, with which watch of which server it is.
    let publish = |line: Value| {
        bus.publish(
            "watch",
            json!({"watch": id, "server": server, "line": line}),
        );
    };
    loop {
        let event = tokio::select! {
            _ = &mut stop => break,
            event = watch.next() => event,
        };
        match event {
            Ok(event) => publish(capable::watch::event_json(&uri, &event)),
            Err(e) => {
                publish(json!({"event": "end", "uri": uri, "error": e.to_string()}));
                let _ = watch.close().await;
                return;
            }
        }
    }
    let closed = watch.close().await;
    let mut v = json!({"event": "end", "uri": uri});
    if let Err(e) = closed {
        if !matches!(e, capable::Error::Refused(_)) {
            v["error"] = json!(e.to_string());
        }
    }
    publish(v);
}

/// A refused watch, in words that say what the server declared and what to set
/// instead (nothing was sent).
fn refused(session: &Session, e: Error) -> ApiError {
    match e {
        Error::Refused(Refusal::FlagNotDeclared {
            flag: Flag::Subscribe,
            declared,
            method,
            ..
        }) => ApiError::not_offered(format!(
            "cannot watch without a poll interval: the server declared `\"resources\": {declared}` \
             (no `subscribe`), so there is no {method} to follow; set a poll interval to re-read \
             on a schedule (nothing was sent)"
        )),
        Error::Refused(Refusal::MarkedBroken { method }) => ApiError::not_offered(format!(
            "{method} was refused by {} earlier in this session although declared; \
             set a poll interval to re-read on a schedule",
            session.server_info()
        )),
        e => ApiError::from(e),
    }
}
