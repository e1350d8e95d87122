//! The host on stdio: the bridge is the host's stdio server. One task reads the host's
//! lines, acts on whatever the relay has to act on, and writes everything written for
//! the host since the last write in one write: once something woke it, it takes in
//! every line already read and every answer already there before it writes, so that
//! a burst of requests and their answers cross in a few writes, not one each.
//!
//! The host closing its end ends the bridge in order (exit 0): what is in flight is
//! cancelled at the server, which is then shut down (its whole process group).

use std::sync::Arc;

use capable::transport::stdio::LineSource;
use futures_util::FutureExt;
use tokio::io::AsyncWriteExt;

use super::host::{Host, Target};
use crate::exit::CliError;

/// Serves the target's server to the host on stdin/stdout, until the host closes its
/// end or a signal comes.
pub async fn serve(target: Arc<Target>) -> Result<(), CliError> {
    let signals = target.ctx.signals.clone();
    // Dropped last: stdin and stdout get their blocking mode back.
    let mut stdio = super::pipes::Stdio::open();
    let mut lines = LineSource::new(&mut stdio.input, target.ctx.global.max_message);
    let stdout = &mut stdio.output;
    let mut host = Host::new(target.clone(), false);
    // One write's bytes; its room is kept from write to write.
    let mut bytes = Vec::new();
    let stopped = loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => host.line(line).await,
                Ok(None) => break None,
                Err(e) => {
                    target.audit.record("host_failed", serde_json::json!({"error": e.to_string()}));
                    break None;
                }
            },
            wake = host.next() => host.on(wake),
            signal = signals.received() => break Some(signal),
        }
        ready(&mut lines, &mut host).await;
        host.drain_output(&mut bytes);
        if !bytes.is_empty()
            && stdout
                .write_all(&bytes)
                .await
                .and(stdout.flush().await)
                .is_err()
        {
            // The host stopped reading: it is gone.
            break None;
        }
        bytes.clear();
    };
    host.close().await;
    target.stopped(stopped)
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
