//! `capable watch URI [--poll DURATION] [--updates N]`: each revision of a resource
//! with its read time, through the server's own subscription when it declares one, or
//! by re-reading only when the user asked for it.
//!
//! `--json` prints JSON lines:
//! `{"event":"mode","mode":"subscribe"|"listen"|"poll",…}`,
//! `{"event":"revision","revision":…,"readAt":…,"contents":…}`,
//! `{"event":"violation","capability":…,"method":…,"request":{…},"response":{…},"server":{…}}`.
//! Ctrl-C ends the watch cleanly: `resources/unsubscribe` (or the listen stream is
//! cancelled) before the server is closed.

use std::time::Duration;

use capable::core::{Flag, Refusal};
use capable::{Error, ResourceRead, Session, Violation, WatchEvent, WatchPolicy};
use serde_json::{json, Value};

use super::Context;
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output;

pub async fn run(
    ctx: &Context,
    uri: &str,
    poll: Option<Duration>,
    updates: Option<u64>,
    args: &ServerArgs,
) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    let result = watch(ctx, &session, uri, poll, updates).await;
    session.close().await;
    result
}

async fn watch(
    ctx: &Context,
    session: &Session,
    uri: &str,
    poll: Option<Duration>,
    updates: Option<u64>,
) -> Result<(), CliError> {
    let policy = WatchPolicy { poll };
    let mut watch = session
        .watch(uri, policy)
        .map_err(|e| refused(session, e))?;
    let json = ctx.global.json;
    let mut revisions: u64 = 0;
    let interrupted = ctx.signals.received();
    tokio::pin!(interrupted);
    let outcome = loop {
        let event = tokio::select! {
            event = watch.next() => event,
            // Ctrl-C is how a watch is ended (exit 0); TERM and HUP say why they came.
            signal = &mut interrupted => break match signal {
                libc::SIGINT => Ok(()),
                other => Err(CliError::Interrupted(other)),
            },
        };
        match event {
            Ok(event) => {
                let is_revision = matches!(event, WatchEvent::Revision(_));
                if let Err(e) = print_event(json, uri, &event) {
                    break Err(e);
                }
                if is_revision {
                    if updates.is_some_and(|n| revisions >= n) {
                        break Ok(());
                    }
                    revisions += 1;
                }
            }
            Err(e) => break Err(CliError::Client(e)),
        }
    };
    // Unsubscribe (or cancel the listen stream) whatever ended the watch.
    let closed = watch.close().await;
    outcome?;
    closed.or_else(|e| match e {
        // A method marked broken is simply not sent again.
        Error::Refused(_) => Ok(()),
        e => Err(e),
    })?;
    Ok(())
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
    match event {
        WatchEvent::Mode {
            mode,
            reason,
            interval,
        } => {
            if json {
                let mut v =
                    json!({"event": "mode", "mode": mode.as_str(), "uri": uri, "reason": reason});
                if let Some(i) = interval {
                    v["intervalMs"] = json!(i.as_millis() as u64);
                }
                output::json_line(&v)?;
            } else {
                output::print(&format!("mode      {} — {reason}\n", mode.as_str()))?;
            }
        }
        WatchEvent::Revision(read) => {
            if json {
                output::json_line(&revision_json(read))?;
            } else {
                output::print(&human_revision(read))?;
            }
        }
        WatchEvent::Violation(v) => {
            if json {
                output::json_line(&violation_json(v))?;
            } else {
                output::print(&format!(
                    "VIOLATION {} {} declared `{}` but answered {} with -32601 (method not found)\n          request  {}\n          response {}\n",
                    v.server.name, v.server.version, v.capability, v.method, v.request, v.response
                ))?;
            }
        }
    }
    Ok(())
}

pub fn revision_json(read: &ResourceRead) -> Value {
    let mut v = json!({
        "event": "revision",
        "uri": read.uri,
        "revision": read.revision().as_str(),
        "readAt": read.read_at_rfc3339(),
        "contents": read.contents,
    });
    if let Some(ttl) = read.ttl_ms {
        v["ttlMs"] = json!(ttl);
    }
    v
}

/// A violation event: `{"event": "violation"}` and the evidence.
pub fn violation_json(v: &Violation) -> Value {
    let mut line = serde_json::Map::new();
    line.insert("event".into(), "violation".into());
    if let Value::Object(evidence) = output::violation(v) {
        line.extend(evidence);
    }
    Value::Object(line)
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
