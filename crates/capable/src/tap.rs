//! A wire tap: see every message exactly as sent and received (for `--trace`, tests
//! that validate messages against the official schema, and debugging).

use std::sync::Arc;

/// Which way a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client → server.
    Sent,
    /// Server → client.
    Received,
}

type TapFn = dyn Fn(Direction, &[u8]) + Send + Sync;

/// A callback that sees every message (one line, without its newline).
#[derive(Clone)]
pub struct Tap(Arc<TapFn>);

impl Tap {
    /// Wraps a callback.
    pub fn new(f: impl Fn(Direction, &[u8]) + Send + Sync + 'static) -> Self {
        Tap(Arc::new(f))
    }

    /// Shows one message to the callback (to chain taps: a tap that calls another).
    pub fn call(&self, direction: Direction, line: &[u8]) {
        (self.0)(direction, line)
    }

    /// Shows one received message.
    pub(crate) fn received(&self, line: &[u8]) {
        (self.0)(Direction::Received, line)
    }

    /// Shows every message in a batch of sent lines.
    pub(crate) fn sent(&self, batch: &[u8]) {
        for line in batch.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            (self.0)(Direction::Sent, line)
        }
    }
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap(..)")
    }
}
