//! `capable bridge`: capable between a host and a server. The host (a desktop app, an
//! editor, an agent) starts `capable bridge` as its stdio server; behind it is the
//! server the flags name — `--url URL` (Streamable HTTP or HTTP+SSE, either era, OAuth
//! from the token store), `--server NAME` from a config, or a stdio command after `--`.
//!
//! What the host sees is exactly what the server declared; every request passes the
//! gating table on both sides (the engine facing the host refuses what the server did
//! not declare, the session facing the server what was not negotiated); only declared
//! notifications reach the host; violations, notices and what was withheld go to
//! stderr as JSON lines (and `--audit-log FILE`).
//!
//! | file | concern |
//! |---|---|
//! | `stdio.rs` | the host on stdin/stdout: read, relay, write in one write |
//! | `pipes.rs` | stdin and stdout on the reactor (a pipe, a socket), not the blocking pool |
//! | `host.rs` | one host's side: the greeter until it says who it is, then the relay |
//! | `relay.rs` | one host ⇄ the server behind: forwarding, cancellation, progress, questions, notifications, listen streams |
//! | `upstream.rs` | the server behind, connected declaring what the host declared |
//! | `behind.rs` | the server behind while it is up, and its restarts |
//! | `forward.rs` | a request's params on the way there, its failure on the way back |
//! | `listen/` | the host over Streamable HTTP (`--listen`): sessions, streams, the gate |
//! | `audit.rs` | the JSON lines of what the host did not see |

mod audit;
mod audit_limit;
mod behind;
mod forward;
mod host;
mod listen;
mod many;
mod pipes;
mod relay;
mod run_task;
mod stdio;
mod upstream;

use std::sync::Arc;

use capable::config::{ConfigFile, ServerTarget};

use crate::commands::Context;
use crate::exit::CliError;
use crate::flags::{BridgeArgs, LoginFlag};

/// Runs the bridge until the host leaves or a signal comes.
pub async fn run(ctx: &Context, args: &BridgeArgs) -> Result<(), CliError> {
    if ctx.global.auth.login == LoginFlag::Paste {
        return Err(CliError::Usage(
            "--login paste reads the browser's address from stdin, which is the host's here: \
             use --login browser or headless, or log in first with `capable auth login`"
                .into(),
        ));
    }
    let audit = Arc::new(audit::Audit::open(args.audit_log.as_deref())?);
    // What a flood held back is said once its window has passed.
    let flushing = Arc::downgrade(&audit);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(audit_limit::WINDOW).await;
            match flushing.upgrade() {
                Some(audit) => audit.flush(false),
                None => return,
            }
        }
    });
    let g = &ctx.global;
    let one = g.server.is_some() || g.url.is_some() || !args.server.command.is_empty();
    let (name, many) = match one {
        // The server's name in the audit: its config name, else its URL (credentials
        // left out) or its program.
        true => {
            let name = match (&g.server, ctx.target(&args.server)?) {
                (Some(name), _) => name.clone(),
                (None, ServerTarget::Http { url, .. }) => {
                    capable::core::http::redact::redact_unparsed(&url)
                }
                (None, ServerTarget::Stdio(command)) => command.program,
            };
            (name, None)
        }
        false => {
            let mut file = ConfigFile::load(g.config.as_deref())?;
            for entry in &mut file.servers {
                match &mut entry.target {
                    Ok(ServerTarget::Stdio(command)) => command.inherit_env = g.inherit_env,
                    Ok(target) => crate::secrets::keep_target(target),
                    Err(_) => {}
                }
            }
            if let Some(unknown) = args
                .only
                .iter()
                .find(|o| !file.servers.iter().any(|e| &e.name == *o))
            {
                return Err(CliError::Usage(format!(
                    "--only {unknown}: {} has no such server",
                    file.path
                )));
            }
            ("bridge".to_owned(), Some((file, args.only.clone())))
        }
    };
    let target = Arc::new(host::Target {
        ctx: Context {
            global: ctx.global.clone(),
            signals: ctx.signals.clone(),
        },
        server: args.server.clone(),
        name,
        audit,
        many,
        pass_notifications: args.pass_notifications.clone().into(),
    });
    match args.listen {
        Some(addr) => listen::serve(target, args, addr).await,
        None => stdio::serve(target).await,
    }
}

/// `N` random bytes as hex (visible ASCII: a session id, the prefix of the bridge's own
/// task ids).
fn random_hex<const N: usize>() -> String {
    random::<N>().iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` random bytes (a session id, the secret of a relay's rounds); without randomness,
/// the time, which still tells them apart.
fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_le_bytes();
        let n = N.min(nanos.len());
        bytes[..n].copy_from_slice(&nanos[..n]);
    }
    bytes
}
