//! `capable servers`: every server of the config checked at once, one row each.
//!
//! Each server is connected concurrently (each handshake bounded by `--timeout`), its
//! lists read, then everything is shut down. A broken entry is a row with its error
//! like any other; it never hides the rest. The exit code is 0 when every server is
//! ready with its lists read, else the highest exit code among the others (so a
//! contract violation, 6, outranks a crash, 3; a broken entry is 2).

use std::time::Instant;

use capable::host::{Host, ServerStatus};
use serde_json::{json, Value};

use super::config_host::{trouble, with_config_host, worst_code, Pinning};
use super::Context;
use crate::exit::CliError;
use crate::output::{self, one_line, Table};

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let started = Instant::now();
    let servers = with_config_host(ctx, "capable servers", Pinning::Off, async |host: &Host| {
        Ok(host.servers())
    })
    .await?;
    let elapsed = started.elapsed();
    if ctx.global.json {
        output::json(&servers.iter().map(row_json).collect::<Vec<_>>())?;
    } else {
        let mut t = Table::new(&[
            "server",
            "state",
            "era",
            "version",
            "tools",
            "resources",
            "prompts",
            "handshake(ms)",
            "error",
        ]);
        for s in &servers {
            let count = |n: Option<usize>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
            t.row(vec![
                one_line(&s.name, 40),
                s.state.name().to_owned(),
                s.era.map(|e| e.to_string()).unwrap_or_else(|| "-".into()),
                s.protocol_version
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                count(s.tools),
                count(s.resources),
                count(s.prompts),
                s.handshake
                    .map(|h| h.as_millis().to_string())
                    .unwrap_or_else(|| "-".into()),
                trouble(s).map_or_else(String::new, |e| one_line(&e.to_string(), 200)),
            ]);
        }
        output::print(&t.render())?;
        let ready = servers.iter().filter(|s| trouble(s).is_none()).count();
        output::print(&format!(
            "{ready} of {} healthy, checked in {} ms\n",
            servers.len(),
            elapsed.as_millis()
        ))?;
    }
    match worst_code(&servers) {
        0 => Ok(()),
        code => {
            let unhealthy = servers.iter().filter(|s| trouble(s).is_some()).count();
            Err(CliError::Unhealthy {
                summary: format!("{unhealthy} of {} servers are not healthy", servers.len()),
                code,
            })
        }
    }
}

/// One server for `--json`: the table's fields, with the error's kind and exit code,
/// and `cause`, the line of an exited server's stderr that names its error.
fn row_json(s: &ServerStatus) -> Value {
    let error = trouble(s).map(|e| {
        let mut error =
            json!({"kind": e.kind(), "message": e.to_string(), "exitCode": e.exit_code()});
        if let CliError::Client(client) = &e {
            if let Some(cause) = client.stderr_cause() {
                error["cause"] = json!(cause.trim());
            }
        }
        error
    });
    json!({
        "server": s.name,
        "state": s.state.name(),
        "era": s.era.map(|e| e.to_string()),
        "protocolVersion": s.protocol_version.map(|v| v.to_string()),
        "serverInfo": s.server_info,
        "tools": s.tools,
        "resources": s.resources,
        "prompts": s.prompts,
        "handshakeMs": s.handshake.map(|h| h.as_micros() as f64 / 1000.0),
        "restarts": s.restarts,
        "error": error,
    })
}
