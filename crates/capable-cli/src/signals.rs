//! One handler for SIGINT, SIGTERM and SIGHUP, for every command.
//!
//! A signal never kills capable mid-step: the command stops where it is, the session is
//! closed in order (a watch unsubscribes first; the server's input is closed, then
//! SIGTERM and SIGKILL go to its whole process group, each after a bounded wait), and
//! capable exits with `128 + signal` (130, 143, 129). A `watch` stopped with Ctrl-C —
//! its documented way to end — exits 0.

use std::future::Future;

use tokio::sync::watch;

/// The signal that arrived, if one did.
#[derive(Clone)]
pub struct Signals {
    rx: watch::Receiver<Option<i32>>,
}

impl Signals {
    /// Listens for SIGINT, SIGTERM and SIGHUP from now on (inside the runtime).
    pub fn install() -> Signals {
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) else {
                return;
            };
            let number = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
                _ = hup.recv() => libc::SIGHUP,
            };
            let _ = tx.send(Some(number));
            // Keep the handlers installed: a second signal must not kill capable
            // while it shuts the server down in order.
            std::future::pending::<()>().await;
        });
        Signals { rx }
    }

    /// Resolves with the signal's number once one has arrived (at once if one did).
    pub fn received(&self) -> impl Future<Output = i32> + 'static {
        let mut rx = self.rx.clone();
        async move {
            loop {
                if let Some(n) = *rx.borrow_and_update() {
                    return n;
                }
                if rx.changed().await.is_err() {
                    // The listener is gone: no signal will ever be reported.
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// The exit code after a signal: `128 + number`.
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}
