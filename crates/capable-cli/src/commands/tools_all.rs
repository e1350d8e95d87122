//! `capable tools --all`: the tools of every server of the config in one table, each
//! under its host name `server/tool` (call one with `capable tools call SERVER/TOOL`).
//!
//! Servers that are not ready are named on stderr with their error, after the table;
//! the exit code is then that of `capable servers`. Definitions are judged against
//! their pins (the lock file beside the config: pinned on first sight): one that
//! differs is left out of the table, named on stderr, and the exit code is 6.

use capable::host::Host;

use super::config_host::{pins_verdict, trouble, with_config_host, worst_code, Pinning};
use super::Context;
use crate::exit::CliError;
use crate::output::{self, one_line, Table};

pub async fn run(ctx: &Context) -> Result<(), CliError> {
    let pinning = Pinning::Write(None);
    let (tools, servers, pending) =
        with_config_host(ctx, "tools --all", pinning, async |host: &Host| {
            let pending = host.pins().map(|p| p.pending()).unwrap_or_default();
            Ok((host.tools(), host.servers(), pending))
        })
        .await?;
    if ctx.global.json {
        output::json(&tools)?;
    } else {
        let mut t = Table::new(&["server", "tool", "ui", "description"]);
        for entry in &tools {
            let ui = entry.tool.ui_resource().unwrap_or_default().to_owned();
            t.row(vec![
                entry.server.clone(),
                entry.name.clone(),
                ui,
                one_line(entry.tool.description.as_deref().unwrap_or(""), 80),
            ]);
        }
        output::print(&t.render())?;
    }
    for s in &servers {
        if let Some(e) = trouble(s) {
            output::eprint_line(&format!("capable: server {}: {e}", s.name));
        }
    }
    let changed = pins_verdict(&pending);
    match worst_code(&servers) {
        0 => changed.map_or(Ok(()), Err),
        code => Err(CliError::Unhealthy {
            summary: "some servers are not healthy; their tools are missing above".into(),
            code,
        }),
    }
}
