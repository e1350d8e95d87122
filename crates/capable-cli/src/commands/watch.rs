//! `capable watch URI [--poll DURATION] [--updates N] [--reconnect]`: each revision of a
//! resource with its read time, through the server's own subscription when it declares
//! one, or by re-reading only when the user asked for it.
//!
//! `--json` prints JSON lines:
//! `{"event":"mode","mode":"subscribe"|"listen"|"poll",…}`,
//! `{"event":"revision","revision":…,"readAt":…,"contents":…}`,
//! `{"event":"violation","capability":…,"method":…,"request":{…},"response":{…},"server":{…}}`,
//! and with `--reconnect`
//! `{"event":"reconnect","reason":"exited",…,"attempt":1,"maxAttempts":5,"delayMs":…}`.
//! Ctrl-C ends the watch cleanly: `resources/unsubscribe` (or the listen stream is
//! cancelled) before the server is closed.
//!
//! `--reconnect` keeps watching through a server that crashes or a connection that
//! breaks: the server is started (or connected) again by the restart rule a host uses
//! ([`capable::internal::restart`]: doubling delays with jitter, at most `--max-restarts`
//! in a row, counted anew after `--healthy-after` of being up). What a restart cannot
//! cure — a refused version, a contract violation, a missing subscription — ends the
//! watch as without it.

use std::time::{Duration, Instant};

use capable::internal::restart::{Decision, GiveUpReason, RestartPolicy, Restarts};
use capable::internal::watch::WatchMode;
use capable::internal::{Flag, Refusal};
use capable::{Error, ResourceRead, Session, WatchEvent, WatchPolicy};
use serde_json::json;

use super::Context;
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output;

/// What `capable watch` was asked to do.
#[derive(Clone, Copy, Debug, Default)]
pub struct WatchArgs {
    /// Re-read on this schedule when there is no subscription.
    pub poll: Option<Duration>,
    /// Stop after this many revisions beyond the first.
    pub updates: Option<u64>,
    /// Restart a server that went away, by this policy.
    pub reconnect: Option<RestartPolicy>,
}

/// How one session's watch ended, when it ended well.
enum Ended {
    /// `--updates` reached, or Ctrl-C: the watch is over.
    Done,
}

pub async fn run(
    ctx: &Context,
    uri: &str,
    args: WatchArgs,
    server: &ServerArgs,
) -> Result<(), CliError> {
    let Some(policy) = args.reconnect else {
        let session = ctx.connect(server).await?;
        let mut revisions = 0;
        let result = watch(ctx, &session, uri, args, &mut revisions).await;
        session.close().await;
        return result.map(|Ended::Done| ());
    };
    let mut restarts = Restarts::new(policy, seed());
    // Revisions printed, across sessions: `--updates N` is N for the whole watch.
    let mut revisions: u64 = 0;
    loop {
        let outcome = match ctx.connect(server).await {
            Ok(session) => {
                restarts.ready(Instant::now());
                let result = watch(ctx, &session, uri, args, &mut revisions).await;
                session.close().await;
                result
            }
            Err(e) => Err(e),
        };
        let e = match outcome {
            Ok(Ended::Done) => return Ok(()),
            Err(e) => e,
        };
        // Only a failure of the server or the connection is worth a restart; a
        // refusal, a usage error or a signal ends the watch as it would without one.
        let CliError::Client(error) = &e else {
            return Err(e);
        };
        let failure = error.failure();
        match restarts.failed(Instant::now(), failure) {
            Decision::RetryAfter(delay) => {
                reconnect_notice(ctx, error, failure.name(), &restarts, delay)?;
                let interrupted = ctx.signals.received();
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    signal = interrupted => return match signal {
                        libc::SIGINT => Ok(()),
                        other => Err(CliError::Interrupted(other)),
                    },
                }
            }
            Decision::GiveUp { attempts, why } => {
                if let GiveUpReason::Exhausted { max_attempts } = why {
                    output::eprint_line(&format!(
                        "capable: giving up after {attempts} restarts in a row \
                         (--max-restarts {max_attempts}); the last failure follows"
                    ));
                }
                return Err(e);
            }
        }
    }
}

/// Says that the server went away and when it is tried again (stderr for people, a
/// JSON line with `--json`).
fn reconnect_notice(
    ctx: &Context,
    error: &Error,
    reason: String,
    restarts: &Restarts,
    delay: Duration,
) -> Result<(), CliError> {
    let attempt = restarts.attempts();
    let max = restarts.policy().max_attempts;
    if ctx.global.json {
        output::json_line(&json!({
            "event": "reconnect",
            "reason": reason,
            "error": error.to_string(),
            "attempt": attempt,
            "maxAttempts": max,
            "delayMs": delay.as_millis() as u64,
        }))?;
    } else {
        output::eprint_line(&format!(
            "capable: {error}; reconnecting in {:.1} s (restart {attempt} of at most {max} in a row)",
            delay.as_secs_f64()
        ));
    }
    Ok(())
}

/// A seed for the jitter that differs between processes started together.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

async fn watch(
    ctx: &Context,
    session: &Session,
    uri: &str,
    args: WatchArgs,
    revisions: &mut u64,
) -> Result<Ended, CliError> {
    let policy = WatchPolicy { poll: args.poll };
    let mut watch = session
        .watch(uri, policy)
        .map_err(|e| refused(session, e))?;
    let json = ctx.global.json;
    // How changes arrive, from the last mode event: said once the first revision is out.
    let mut arriving = None;
    let interrupted = ctx.signals.received();
    tokio::pin!(interrupted);
    let outcome = loop {
        let event = tokio::select! {
            event = watch.next() => event,
            // Ctrl-C is how a watch is ended (exit 0); TERM and HUP say why they came.
            signal = &mut interrupted => break match signal {
                libc::SIGINT => Ok(Ended::Done),
                other => Err(CliError::Interrupted(other)),
            },
        };
        match event {
            Ok(event) => {
                let is_revision = matches!(event, WatchEvent::Revision(_));
                if let WatchEvent::Mode { mode, .. } = &event {
                    arriving = Some(*mode);
                }
                if let Err(e) = print_event(json, uri, &event) {
                    break Err(e);
                }
                if is_revision {
                    *revisions += 1;
                    // The first revision, then N updates.
                    if args.updates.is_some_and(|n| *revisions > n) {
                        break Ok(Ended::Done);
                    }
                    if *revisions == 1 && !json {
                        output::eprint_line(&waiting(arriving, args.poll));
                    }
                }
            }
            Err(e) => break Err(CliError::Client(e)),
        }
    };
    // Unsubscribe (or cancel the listen stream) whatever ended the watch.
    let closed = watch.close().await;
    let ended = outcome?;
    closed.or_else(|e| match e {
        // A method marked broken is simply not sent again.
        Error::Refused(_) => Ok(()),
        e => Err(e),
    })?;
    Ok(ended)
}

/// Tells a person at the terminal, once the first revision is shown, that the
/// command has not hung: it waits for the next one (stderr; never with `--json`,
/// whose lines say the mode already).
fn waiting(mode: Option<WatchMode>, poll: Option<Duration>) -> String {
    let how = match (mode, poll) {
        (Some(WatchMode::Poll), Some(every)) => format!("re-reading every {}", shown(every)),
        (Some(WatchMode::Poll), None) => "re-reading".to_owned(),
        (Some(WatchMode::Subscribe | WatchMode::Listen), _) => {
            "the server says when it changes".to_owned()
        }
        (None, _) => "as the server offers".to_owned(),
    };
    format!("capable: waiting for changes ({how}); Ctrl-C stops")
}

/// `5 s`, `250 ms`.
fn shown(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// A refused watch, in words that say what the server declared and what to pass.
pub fn refused(session: &Session, e: Error) -> CliError {
    match e {
        Error::Refused(Refusal::FlagNotDeclared {
            flag: Flag::Subscribe,
            declared,
            method,
            ..
        }) => CliError::NotOffered(format!(
            "cannot watch without a re-read policy: the server declared `\"resources\": {declared}` \
             (no `subscribe`), so there is no {method} to follow; pass --poll DURATION to re-read \
             on a schedule (nothing was sent beyond the handshake)"
        )),
        Error::Refused(Refusal::MarkedBroken { method }) => CliError::NotOffered(format!(
            "{method} was refused by {} earlier in this session although declared; \
             pass --poll DURATION to re-read on a schedule",
            session.server_info()
        )),
        e => CliError::Client(e),
    }
}

fn print_event(json: bool, uri: &str, event: &WatchEvent) -> Result<(), CliError> {
    if json {
        return output::json_line(&capable::watch::event_json(uri, event));
    }
    match event {
        WatchEvent::Mode { mode, reason, .. } => {
            output::print(&format!("mode      {} — {reason}\n", mode.as_str()))?;
        }
        WatchEvent::Revision(read) => output::print(&human_revision(read))?,
        WatchEvent::Violation(v) => {
            output::print(&format!(
                "VIOLATION {} {} declared `{}` but answered {} with -32601 (method not found)\n          request  {}\n          response {}\n",
                v.server.name, v.server.version, v.capability, v.method, v.request, v.response
            ))?;
        }
    }
    Ok(())
}

fn human_revision(read: &ResourceRead) -> String {
    let mut out = format!(
        "revision  {}  read at {}\n",
        read.revision(),
        read.read_at_rfc3339()
    );
    for line in read.text().lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_says_how_changes_arrive() {
        let poll = waiting(Some(WatchMode::Poll), Some(Duration::from_secs(5)));
        assert_eq!(
            poll,
            "capable: waiting for changes (re-reading every 5 s); Ctrl-C stops"
        );
        let poll = waiting(Some(WatchMode::Poll), Some(Duration::from_millis(250)));
        assert!(poll.contains("every 250 ms"), "{poll}");
        let listen = waiting(Some(WatchMode::Listen), None);
        assert!(
            listen.contains("the server says when it changes"),
            "{listen}"
        );
    }
}
