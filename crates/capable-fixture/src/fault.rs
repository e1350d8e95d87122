//! Faults the fixture can add to any profile (`--fault F`): the ways a server process
//! breaks in the middle of a conversation, for the fault-matrix tests. Each is one
//! precise misbehaviour at one point, so a test can say what the client must do there.

use clap::ValueEnum;

/// One way to break.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Fault {
    /// Exits with status 3 on reading the first request of the handshake (`initialize`
    /// or `server/discover`), before answering it.
    ExitInHandshake,
    /// On `resources/read`: writes the first half of its answer, then exits with
    /// status 3 (the line never ends).
    ExitMidAnswer,
    /// On `resources/read`: writes the first half of its answer and never the rest
    /// (it keeps running and reading).
    StallMidAnswer,
    /// On the first `resources/read`: writes the first half of its answer as a line of
    /// its own (truncated JSON whose id is readable), then serves on normally.
    TruncatedAnswer,
    /// Answers every notification it receives as if it were a request: a result with
    /// `"id": null`, and one with no id at all.
    AnswersNotifications,
    /// Starts a background child (`sleep`) that holds its stdout and stderr open, and
    /// exits with status 3 on `resources/read`: the exit is observable although the
    /// pipe stays open.
    Orphan,
    /// Keeps running after its stdin closes (only a signal ends it).
    IgnoreEof,
    /// After each notification it receives (`notifications/initialized` first), floods
    /// its client with 5,000 `notifications/tools/list_changed` it never declared, then
    /// serves on normally: what an audit must hold within bounds.
    FloodUndeclared,
    /// After each notification it receives, sends one of its own that no protocol
    /// defines (`x/custom`, params `{"n": 1}`), then serves on normally.
    CustomNotification,
    /// Takes 300 ms over each `resources/subscribe`, `resources/unsubscribe` and
    /// `subscriptions/listen` before it answers (or acknowledges) it: a server whose
    /// answer surely comes after anything its client answers on its own.
    SlowSubscribe,
    /// The soak's server: floods (bursts of updates, log messages and garbage every
    /// 250 ms), changes its content every second, and crashes (status 1) after a random
    /// 3 to 12 s — one start in four already in the handshake.
    Chaos,
}

impl Fault {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Fault::ExitInHandshake => "exit-in-handshake",
            Fault::ExitMidAnswer => "exit-mid-answer",
            Fault::StallMidAnswer => "stall-mid-answer",
            Fault::TruncatedAnswer => "truncated-answer",
            Fault::AnswersNotifications => "answers-notifications",
            Fault::Orphan => "orphan",
            Fault::IgnoreEof => "ignore-eof",
            Fault::FloodUndeclared => "flood-undeclared",
            Fault::CustomNotification => "custom-notification",
            Fault::SlowSubscribe => "slow-subscribe",
            Fault::Chaos => "chaos",
        }
    }
}

/// What the server does with one answer line (`line` ends with `\n`) under `fault`,
/// for a request of `method`.
pub(crate) enum Answer {
    /// Send it as is.
    Whole,
    /// Send these bytes instead, then go on.
    Instead(Vec<u8>),
    /// Send these bytes, then exit with status 3.
    ThenExit(Vec<u8>),
    /// Send these bytes, then never answer again.
    ThenStall(Vec<u8>),
}

impl Fault {
    /// How the answer to a `method` request is mangled.
    pub(crate) fn answer(self, method: &str, line: &[u8]) -> Answer {
        let half = line[..line.len() / 2].to_vec();
        match (self, method) {
            (Fault::ExitMidAnswer, "resources/read") => Answer::ThenExit(half),
            (Fault::StallMidAnswer, "resources/read") => Answer::ThenStall(half),
            (Fault::TruncatedAnswer, "resources/read") => {
                let mut truncated = half;
                truncated.push(b'\n');
                Answer::Instead(truncated)
            }
            _ => Answer::Whole,
        }
    }

    /// Whether the server exits on reading a `method` request, before answering.
    pub(crate) fn exits_on(self, method: &str) -> bool {
        match self {
            Fault::ExitInHandshake => matches!(method, "initialize" | "server/discover"),
            Fault::Orphan => method == "resources/read",
            Fault::Chaos => {
                matches!(method, "initialize" | "server/discover") && chaos_rng().is_multiple_of(4)
            }
            _ => false,
        }
    }

    /// How long the server takes over a `method` request before it handles it.
    pub(crate) fn delay(self, method: &str) -> Option<std::time::Duration> {
        let subscribing = matches!(
            method,
            "resources/subscribe" | "resources/unsubscribe" | "subscriptions/listen"
        );
        (self == Fault::SlowSubscribe && subscribing)
            .then_some(std::time::Duration::from_millis(300))
    }

    /// What the server writes after receiving a notification.
    pub(crate) fn after_notification(self) -> &'static [u8] {
        match self {
            Fault::AnswersNotifications => {
                b"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"result\":{}}\n"
            }
            Fault::CustomNotification => {
                b"{\"jsonrpc\":\"2.0\",\"method\":\"x/custom\",\"params\":{\"n\":1}}\n"
            }
            Fault::FloodUndeclared => {
                static FLOOD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
                FLOOD.get_or_init(|| {
                    let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";
                    line.repeat(5_000)
                })
            }
            _ => b"",
        }
    }

    /// The lifetime of a [`Fault::Chaos`] server.
    pub(crate) fn chaos_lifetime() -> std::time::Duration {
        std::time::Duration::from_millis(3000 + chaos_rng() % 9000)
    }

    /// Work done once at start.
    pub(crate) fn start(self) {
        if self == Fault::Orphan {
            // Inherits stdout and stderr: the client's pipe stays open after we exit.
            let child = std::process::Command::new("sleep").arg("600").spawn();
            match child {
                Ok(c) => eprintln!("capable fixture: background child {}", c.id()),
                Err(e) => eprintln!("capable fixture: cannot start a background child: {e}"),
            }
        }
    }
}

/// A small random number (xorshift, seeded by the clock and the pid once): chaos
/// differs from one start to the next.
fn chaos_rng() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        x = nanos ^ (u64::from(std::process::id()) << 32) | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    x
}
