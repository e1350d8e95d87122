//! One stream's events on their way from a host's task to the HTTP response that
//! writes them, counted in bytes. A host that stops reading a stream (its standalone
//! `GET`, a request's SSE answer) while the server talks must not grow the bridge
//! without end: past `--stream-buffer` bytes waiting, the stream is closed — its reader
//! ends, a legacy host may come back for what it missed with `Last-Event-ID` (what the
//! session keeps, bounded), a 2026-07-28 request ends as a closed stream does.
//!
//! One message is always let through whatever its size (up to `--max-message`): only
//! what piles up behind an unread one counts against the bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use capable::internal::server::streams::StreamEvent;
use tokio::sync::mpsc;

/// The task's end of a stream.
pub struct Sender {
    tx: mpsc::UnboundedSender<StreamEvent>,
    queued: Arc<AtomicUsize>,
    bound: usize,
}

/// The HTTP side's end of a stream.
#[derive(Debug)]
pub struct Receiver {
    rx: mpsc::UnboundedReceiver<StreamEvent>,
    queued: Arc<AtomicUsize>,
}

/// The stream can take no more: its reader stopped (it is gone, or past the bound).
#[derive(Debug, PartialEq)]
pub enum Closed {
    /// Nobody reads it any more.
    Gone,
    /// Its reader left more than the bound waiting.
    Full,
}

/// A stream that holds at most `bound` bytes waiting behind the first message.
pub fn stream(bound: usize) -> (Sender, Receiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let sender = Sender {
        tx,
        queued: queued.clone(),
        bound,
    };
    (sender, Receiver { rx, queued })
}

impl Sender {
    /// Sends `event`, unless the reader is gone or has let too much pile up.
    pub fn send(&self, event: StreamEvent) -> Result<(), Closed> {
        let size = event.data.len();
        let waiting = self.queued.fetch_add(size, Ordering::AcqRel);
        if waiting > 0 && waiting + size > self.bound {
            self.queued.fetch_sub(size, Ordering::AcqRel);
            return Err(Closed::Full);
        }
        self.tx.send(event).map_err(|_| Closed::Gone)
    }

    /// Whether the reader is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl Receiver {
    /// The next event; `None` once the stream is closed and drained.
    pub async fn recv(&mut self) -> Option<StreamEvent> {
        let event = self.rx.recv().await?;
        self.queued.fetch_sub(event.data.len(), Ordering::AcqRel);
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: usize) -> StreamEvent {
        StreamEvent {
            stream: 1,
            id: "1-1".into(),
            data: vec![b'x'; n].into(),
            ends: false,
        }
    }

    #[tokio::test]
    async fn what_piles_up_unread_is_bounded_and_one_message_always_passes() {
        let (tx, mut rx) = stream(100);
        // One message past the bound passes: nothing waits before it.
        assert_eq!(tx.send(event(1000)), Ok(()));
        // Behind it, nothing more than the bound.
        assert_eq!(tx.send(event(50)), Err(Closed::Full));
        // Read: room again.
        assert_eq!(rx.recv().await.map(|e| e.data.len()), Some(1000));
        assert_eq!(tx.send(event(60)), Ok(()));
        assert_eq!(tx.send(event(40)), Ok(()));
        assert_eq!(tx.send(event(1)), Err(Closed::Full));
        // A reader that went away takes nothing.
        let (tx, rx) = stream(100);
        drop(rx);
        assert_eq!(tx.send(event(1)), Err(Closed::Gone));
    }
}
