//! `capable servers`: every server of the config checked at once, one row each.
//!
//! Each server is connected concurrently (each handshake bounded by `--timeout`), its
//! lists read, then everything is shut down. A broken entry is a row with its error
//! like any other; it never hides the rest. The exit code is 0 when every server is
//! ready with its lists read, else the highest exit code among the others (so a
//! contract violation, 6, outranks a crash, 3; a broken entry is 2). A tool or prompt
//! whose definition changed since it was pinned (the lock file beside the config;
//! nothing is written here) is named in its server's row, and the exit code is 6.

use std::time::Instant;

use capable::host::{Host, Pending, ServerStatus};
use serde_json::{json, Value};

use super::config_host::{pins_verdict, trouble, with_config_host, worst_code, Pinning};
use super::Context;
use crate::exit::CliError;
use crate::output::{self, one_line, Table};

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let started = Instant::now();
    // Judged against the pins (nothing written): a definition changed since it was
    // pinned makes its server unhealthy, as a contract violation does.
    let look = Pinning::Look(None);
    let (servers, pending) = with_config_host(ctx, "capable servers", look, async |host: &Host| {
        let pending = host.pins().map(|p| p.pending()).unwrap_or_default();
        Ok((host.servers(), pending))
    })
    .await?;
    let changed = |name: &str| -> Vec<String> {
        pending
            .iter()
            .filter(|p| matches!(p, Pending::Changed(_)) && p.key().0 == name)
            .map(|p| p.key().2.to_owned())
            .collect()
    };
    let elapsed = started.elapsed();
    if ctx.global.json {
        let rows = servers.iter().map(|s| {
            let mut row = row_json(s);
            row["withheld"] = json!(changed(&s.name));
            row
        });
        output::json(&rows.collect::<Vec<_>>())?;
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
                match (trouble(s), changed(&s.name)) {
                    (Some(e), _) => one_line(&e.to_string(), 200),
                    (None, names) if !names.is_empty() => one_line(
                        &format!(
                            "changed since pinned, withheld: {} (capable pins diff)",
                            names.join(", ")
                        ),
                        200,
                    ),
                    (None, _) => String::new(),
                },
            ]);
        }
        output::print(&t.render())?;
        let ready = servers
            .iter()
            .filter(|s| trouble(s).is_none() && changed(&s.name).is_empty())
            .count();
        output::print(&format!(
            "{ready} of {} healthy, checked in {} ms\n",
            servers.len(),
            elapsed.as_millis()
        ))?;
    }
    match worst_code(&servers) {
        0 => pins_verdict(&pending).map_or(Ok(()), Err),
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
