//! The host on stdio: the bridge is the host's stdio server. One task reads the host's
//! lines, acts on whatever the relay has to act on, and writes everything written for
//! the host since the last write in one write.
//!
//! Until the host says who it is (`initialize`, or a 2026-07-28 request's envelope)
//! there is no server behind yet: a greeter — the engine with nothing declared —
//! answers a `ping` and refuses anything else. The first word of the host's connects
//! the server behind, declaring what the host declared; should that fail (the server
//! does not start, authorization is needed and cannot be had here), that request is
//! answered with an error that says why and what to do, and the next one tries again.
//!
//! The host closing its end ends the bridge in order (exit 0): what is in flight is
//! cancelled at the server, which is then shut down (its whole process group).

use std::sync::Arc;

use capable::core::jsonrpc::Incoming;
use capable::core::model::Implementation;
use capable::core::server::{Hello, ServerConfig, ServerConnection};
use capable::core::Outbox;
use capable::transport::stdio::LineSource;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::audit::Audit;
use super::forward::unavailable;
use super::relay::{Relay, Wake};
use super::upstream;
use crate::commands::Context;
use crate::exit::CliError;
use crate::flags::ServerArgs;

/// The host's side before the server behind is connected, then the relay.
struct Host<'a> {
    ctx: &'a Context,
    server: &'a ServerArgs,
    name: String,
    audit: Arc<Audit>,
    greeter: ServerConnection<()>,
    out: Outbox,
    relay: Option<Relay>,
}

impl Host<'_> {
    /// One line from the host.
    async fn line(&mut self, line: bytes::Bytes) {
        let msg = match Incoming::parse(line.clone()) {
            Ok(msg) => msg,
            Err(e) => match &mut self.relay {
                Some(relay) => return relay.unreadable(&line, &e),
                None => {
                    let _ = self.greeter.handle_unreadable(&line, &e);
                    return self.audit_greeter();
                }
            },
        };
        if self.relay.is_none() {
            match Hello::read(&msg) {
                Some(hello) => self.connect(&hello, &msg).await,
                None => {
                    let _ = self.greeter.handle(msg, &mut self.out);
                    self.audit_greeter();
                    return;
                }
            }
        }
        if let Some(relay) = &mut self.relay {
            relay.receive(msg);
        }
    }

    /// Connects the server behind for a host that said `hello` in `msg`; on failure
    /// `msg` is answered with why.
    async fn connect(&mut self, hello: &Hello, msg: &Incoming) {
        let (asks_tx, asks) = mpsc::unbounded_channel();
        let options = upstream::options(self.ctx, hello, &asks_tx);
        self.audit
            .state(&self.name, "starting", serde_json::json!({}));
        match self.ctx.connect_with(self.server, options.clone()).await {
            Ok(session) => {
                let ask_timeout = self.ctx.options().config.timeouts.progress_cap;
                let audit = self.audit.clone();
                let connect = upstream::connector(self.ctx, self.server, options);
                let relay = Relay::new(&self.name, session, connect, asks, ask_timeout, audit);
                self.relay = Some(relay);
            }
            Err(e) => {
                self.audit.state(
                    &self.name,
                    "failed",
                    serde_json::json!({"kind": e.kind(), "error": e.to_string()}),
                );
                if let Incoming::Request { id, .. } = msg {
                    self.out.write_error(id, &unavailable(&e));
                }
            }
        }
    }

    fn audit_greeter(&mut self) {
        for notice in self.greeter.take_notices() {
            self.audit.host_notice(&notice);
        }
    }

    fn take_output(&mut self) -> Vec<u8> {
        let mut bytes = self.out.bytes().to_vec();
        self.out.clear();
        if let Some(relay) = &mut self.relay {
            bytes.extend_from_slice(&relay.take_output());
        }
        bytes
    }
}

/// The relay's next wake-up; pending for ever before there is a relay.
async fn next(relay: &mut Option<Relay>) -> Wake {
    match relay {
        Some(relay) => relay.next().await,
        None => std::future::pending().await,
    }
}

/// Serves the server `server` names to the host on stdin/stdout, until the host closes
/// its end or a signal comes.
pub async fn serve(
    ctx: &Context,
    server: &ServerArgs,
    name: String,
    audit: Arc<Audit>,
) -> Result<(), CliError> {
    let greeter = ServerConfig::new(
        Implementation::new("capable-bridge", env!("CARGO_PKG_VERSION")),
        serde_json::json!({}),
    );
    let mut host = Host {
        ctx,
        server,
        name,
        audit,
        greeter: ServerConnection::new(greeter),
        out: Outbox::new(),
        relay: None,
    };
    let mut lines = LineSource::new(tokio::io::stdin(), ctx.global.max_message);
    let mut stdout = tokio::io::stdout();
    let stopped = loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => host.line(line).await,
                Ok(None) => break None,
                Err(e) => {
                    host.audit.record("host_failed", serde_json::json!({"error": e.to_string()}));
                    break None;
                }
            },
            wake = next(&mut host.relay) => {
                if let Some(relay) = &mut host.relay {
                    relay.on(wake);
                }
            }
            signal = ctx.signals.received() => break Some(signal),
        }
        let bytes = host.take_output();
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
    };
    if let Some(relay) = host.relay.take() {
        relay.close().await;
    }
    host.audit
        .state(&host.name, "stopped", serde_json::json!({}));
    match stopped {
        Some(signal) => Err(CliError::Interrupted(signal)),
        None => Ok(()),
    }
}
