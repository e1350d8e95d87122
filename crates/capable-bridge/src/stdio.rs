//! The host on stdio: the bridge is the host's stdio server. One task reads the host's
//! lines, acts on whatever the relay has to act on, and writes everything written for
//! the host since the last write in one write: once something woke it, it takes in
//! every line already read and every answer already there before it writes, so that
//! a burst of requests and their answers cross in a few writes, not one each.
//!
//! The host closing its end ends the bridge in order (exit 0): what is in flight is
//! cancelled at the server, which is then shut down (its whole process group). A host
//! that breaks the transport (a line past `--max-message`) ends it the same way, with
//! an error that names the host (exit 3). A signal ends it whatever the host does with
//! its pipes — also while a write waits for a host that stopped reading.

use std::sync::Arc;

use capable::transport::stdio::LineSource;
use futures_util::FutureExt;
use tokio::io::AsyncWriteExt;

use super::host::{Host, Target};
use crate::BridgeError;

/// Why serving the host ended.
enum End {
    /// The host closed its end, or stopped reading.
    Left,
    /// A signal came.
    Signal(i32),
    /// The host broke the transport.
    Broke(String),
}

/// Serves the target's server to the host on stdin/stdout, until the host closes its
/// end or a signal comes.
pub async fn serve(target: Arc<Target>) -> Result<(), BridgeError> {
    let stop = target.stop.clone();
    // Dropped last: stdin and stdout get their blocking mode back.
    let mut stdio = super::pipes::Stdio::open();
    let mut lines = LineSource::new(&mut stdio.input, target.max_message());
    let stdout = &mut stdio.output;
    let mut host = Host::new(target.clone(), false);
    // One write's bytes; its room is kept from write to write.
    let mut bytes = Vec::new();
    let end = loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => host.line(line).await,
                Ok(None) => break End::Left,
                Err(e) => break End::Broke(host_failure(&e)),
            },
            wake = host.next() => host.on(wake),
            signal = stop.stopped() => break End::Signal(signal),
        }
        ready(&mut lines, &mut host).await;
        host.drain_output(&mut bytes);
        if !bytes.is_empty() {
            let write = async {
                stdout.write_all(&bytes).await?;
                stdout.flush().await
            };
            tokio::select! {
                written = write => if written.is_err() {
                    // The host stopped reading: it is gone.
                    break End::Left;
                },
                // A host that reads nothing holds the write for ever: a signal still
                // ends the bridge.
                signal = stop.stopped() => break End::Signal(signal),
            }
        }
        bytes.clear();
    };
    host.close().await;
    target.flush_traces().await;
    match end {
        End::Left => target.stopped(None),
        End::Signal(signal) => target.stopped(Some(signal)),
        End::Broke(why) => {
            target
                .audit
                .record("host_failed", serde_json::json!({"error": why}));
            target.stopped(None)?;
            Err(BridgeError::Host(why))
        }
    }
}

/// What the host did wrong, in words that name the host (the transport's own words
/// speak of "the server", the peer it usually reads).
fn host_failure(e: &capable::transport::TransportError) -> String {
    match e {
        capable::transport::TransportError::MessageTooLarge { limit } => format!(
            "the host sent a line longer than --max-message ({}): the bridge cannot read it",
            capable::internal::text::size(*limit)
        ),
        other => format!("reading the host's messages failed: {other}"),
    }
}

/// Takes in what is there already: the lines read and not yet handled, what the relay
/// has to act on now; until neither has anything.
async fn ready<R: tokio::io::AsyncRead + Unpin>(lines: &mut LineSource<R>, host: &mut Host) {
    loop {
        let mut more = false;
        // An error is left for the next read, which reports it.
        while let Ok(Some(line)) = lines.buffered_line() {
            host.line(line).await;
            more = true;
        }
        while let Some(wake) = host.next().now_or_never() {
            host.on(wake);
            more = true;
        }
        if !more {
            return;
        }
    }
}
