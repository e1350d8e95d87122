//! What stops a bridge from outside: [`Stop`] and its [`StopHandle`] (a signal handler
//! holds the handle; the bridge, every copy of the `Stop`).

use tokio::sync::watch;

/// What a bridge watches to stop: once [`StopHandle::stop`] is called, it stops
/// serving, shuts every server behind down in order, and returns
/// [`BridgeError::Stopped`](crate::BridgeError::Stopped) with the number given.
#[derive(Clone, Debug)]
pub struct Stop(watch::Receiver<Option<i32>>);

/// Stops the bridges watching its [`Stop`].
#[derive(Debug)]
pub struct StopHandle(watch::Sender<Option<i32>>);

impl Stop {
    /// A pair: the handle to stop with, and what the bridge watches.
    pub fn new() -> (StopHandle, Stop) {
        let (tx, rx) = watch::channel(None);
        (StopHandle(tx), Stop(rx))
    }

    /// A `Stop` that never stops: the bridge ends only when its host leaves.
    pub fn never() -> Stop {
        // No handle: nothing can ever stop it (see `stopped`).
        let (_, rx) = watch::channel(None);
        Stop(rx)
    }

    /// Waits until stopped; the number given. Cancel-safe; every copy sees it.
    pub async fn stopped(&self) -> i32 {
        let mut rx = self.0.clone();
        loop {
            if let Some(signal) = *rx.borrow_and_update() {
                return signal;
            }
            if rx.changed().await.is_err() {
                // The handle is gone without stopping: never.
                return std::future::pending().await;
            }
        }
    }
}

impl StopHandle {
    /// Stops every bridge watching this handle's [`Stop`], with `signal` (the number of
    /// the signal that asked for it, or any number the embedding application uses).
    pub fn stop(&self, signal: i32) {
        self.0.send_replace(Some(signal));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_copy_sees_the_stop_also_one_made_after() {
        let (handle, stop) = Stop::new();
        let early = stop.clone();
        let waiting = tokio::spawn(async move { early.stopped().await });
        handle.stop(15);
        assert_eq!(waiting.await.unwrap(), 15);
        assert_eq!(stop.clone().stopped().await, 15);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_handle_never_stops() {
        let (handle, stop) = Stop::new();
        drop(handle);
        let waited = tokio::time::timeout(std::time::Duration::from_secs(3600), stop.stopped());
        assert!(waited.await.is_err());
        let never = Stop::never();
        let waited = tokio::time::timeout(std::time::Duration::from_secs(3600), never.stopped());
        assert!(waited.await.is_err());
    }
}
