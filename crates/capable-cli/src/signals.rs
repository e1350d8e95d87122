//! One handler for SIGINT, SIGTERM and SIGHUP, for every command.
//!
//! A signal never kills capable mid-step: the command stops where it is, the session is
//! closed in order (a watch unsubscribes first; the server's input is closed, then
//! SIGTERM and SIGKILL go to its whole process group, each after a bounded wait), and
//! capable exits with `128 + signal` (130, 143, 129). A `watch` stopped with Ctrl-C —
//! its documented way to end — exits 0. A bridge that reloads its config takes
//! SIGHUP as "read the config again" instead ([`Signals::stopping`],
//! [`Signals::hangups`]).

use std::future::Future;

use tokio::sync::watch;

/// The signal that arrived, if one did.
#[derive(Clone)]
pub struct Signals {
    /// The first of SIGINT, SIGTERM and SIGHUP.
    rx: watch::Receiver<Option<i32>>,
    /// The first of SIGINT and SIGTERM.
    stops: watch::Receiver<Option<i32>>,
    /// How many SIGHUPs arrived.
    hangups: watch::Receiver<u64>,
}

impl Signals {
    /// Listens for SIGINT, SIGTERM and SIGHUP from now on (inside the runtime).
    pub fn install() -> Signals {
        let (tx, rx) = watch::channel(None);
        let (stop_tx, stops) = watch::channel(None);
        let (hup_tx, hangups) = watch::channel(0u64);
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) else {
                return;
            };
            // The handlers stay installed: a second signal must not kill capable
            // while it shuts the server down in order.
            loop {
                let number = tokio::select! {
                    _ = int.recv() => libc::SIGINT,
                    _ = term.recv() => libc::SIGTERM,
                    _ = hup.recv() => libc::SIGHUP,
                };
                // The first one is kept.
                let first = |n: &mut Option<i32>| n.is_none() && n.replace(number).is_none();
                tx.send_if_modified(first);
                if number == libc::SIGHUP {
                    hup_tx.send_modify(|n| *n = n.wrapping_add(1));
                } else {
                    stop_tx.send_if_modified(first);
                }
            }
        });
        Signals { rx, stops, hangups }
    }

    /// Resolves with SIGINT's or SIGTERM's number once one has arrived: a SIGHUP is
    /// not a stop here (see [`Signals::hangups`]).
    pub fn stopping(&self) -> impl Future<Output = i32> + 'static {
        first_of(self.stops.clone())
    }

    /// How many SIGHUPs arrived: changes with each.
    pub fn hangups(&self) -> watch::Receiver<u64> {
        let mut hangups = self.hangups.clone();
        hangups.mark_unchanged();
        hangups
    }

    /// Resolves with the signal's number once one has arrived (at once if one did).
    pub fn received(&self) -> impl Future<Output = i32> + 'static {
        first_of(self.rx.clone())
    }
}

/// Resolves with the number `rx` holds once it holds one.
async fn first_of(mut rx: watch::Receiver<Option<i32>>) -> i32 {
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

/// The exit code after a signal: `128 + number`.
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}
