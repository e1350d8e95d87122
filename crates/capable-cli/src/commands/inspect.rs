//! `capable inspect`: what the server declares, and what a host may therefore call.

use capable::{Capability, Flag, Session};

use super::{with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output::{self, yes_no, Table};

pub async fn run(ctx: &Context, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        if ctx.global.json {
            output::json(&s.description())?;
        } else {
            output::print(&human(s))?;
        }
        Ok(())
    })
    .await
}

/// The server's extensions for people: each by identifier, with what capable makes
/// of it and its settings as declared; 2025-11-25 core tasks too.
pub fn extensions(caps: &capable::ServerCapabilities) -> String {
    let mut t = Table::new(&["extension", "capable", "settings"]);
    for (id, settings) in caps.extensions().into_iter().flatten() {
        let known = match capable::Extension::from_id(id) {
            Some(capable::Extension::Tasks) => "tasks (tools call, capable tasks)",
            Some(capable::Extension::Skills) => "skills (capable skills)",
            Some(capable::Extension::Ui) => "MCP Apps (kept, not rendered)",
            None => "unknown (ignored)",
        };
        t.row(vec![id.clone(), known.into(), settings.to_string()]);
    }
    let tasks = caps.legacy_tasks();
    if tasks.present {
        let members: Vec<&str> = [
            (tasks.list, "list"),
            (tasks.cancel, "cancel"),
            (tasks.tool_calls, "requests.tools.call"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
        t.row(vec![
            "tasks (2025-11-25 core)".into(),
            "tasks (tools call --task, capable tasks)".into(),
            members.join(", "),
        ]);
    }
    match t.len() {
        0 => String::new(),
        _ => t.render(),
    }
}

/// The capability matrix for people.
pub fn matrix(caps: &capable::ServerCapabilities) -> String {
    let mut t = Table::new(&["capability", "present", "subscribe", "listChanged"]);
    for c in Capability::ALL {
        let d = caps.get(c);
        let flag = |f: Flag| {
            if !c.flags().contains(&f) {
                "".to_string()
            } else if !d.present {
                "-".to_string()
            } else {
                yes_no(d.flag(f))
            }
        };
        t.row(vec![
            c.key().into(),
            yes_no(d.present),
            flag(Flag::Subscribe),
            flag(Flag::ListChanged),
        ]);
    }
    t.render()
}

fn human(s: &Session) -> String {
    let info = s.server_info();
    let mut out = String::new();
    let title = info
        .title
        .as_deref()
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    out.push_str(&format!(
        "server    {} {}{title}\n",
        info.name, info.version
    ));
    out.push_str(&format!(
        "protocol  {} ({} era)\n\n",
        s.protocol_version(),
        s.era()
    ));
    out.push_str(&matrix(s.capabilities()));
    let ext = extensions(s.capabilities());
    if !ext.is_empty() {
        out.push('\n');
        out.push_str(&ext);
    }
    // `extensions` and `tasks` have their table above.
    let other: Vec<&str> = s
        .capabilities()
        .other_keys()
        .filter(|k| !matches!(*k, "extensions" | "tasks"))
        .collect();
    if !other.is_empty() {
        out.push_str(&format!("other declared keys: {}\n", other.join(", ")));
    }
    out.push_str(&format!(
        "\nthe server declared: {}\n",
        serde_json::to_string(s.capabilities()).unwrap_or_default()
    ));
    let actions: Vec<&str> = s.actions().iter().map(|m| m.as_str()).collect();
    out.push_str(&format!(
        "a host may call: {}\n",
        if actions.is_empty() {
            "nothing".into()
        } else {
            actions.join(", ")
        }
    ));
    if let Some(i) = s.instructions() {
        out.push_str(&format!("\ninstructions:\n{}\n", i.trim_end()));
    }
    out
}
