//! `capable pins`: the pinned definitions of the config's servers (the lock file
//! beside the config, `NAME.pins.json`, or `--file`).
//!
//! - `show` (the default) lists what is pinned: server, kind, name, digest;
//! - `diff` starts every server, judges what each lists now, and shows each definition
//!   that differs from its pin field by field (nothing written); exit 6 when one does;
//! - `accept [SERVER[/NAME]…]` starts every server and pins what differs (or is held)
//!   as it is now.
//!
//! `--json` prints the lock file's content (`show`) or the pending definitions with
//! both sides (`diff`, `accept`).

use std::path::PathBuf;

use capable::config::ConfigFile;
use capable::host::{Host, Pending, PinKind, PinPolicy, PinStore};
use serde_json::Value;

use super::config_host::{with_config_host, Pinning};
use super::Context;
use crate::exit::CliError;
use crate::flags::PinsAction;
use crate::output::{self, one_line, Table};

pub async fn run(
    ctx: &Context,
    action: Option<PinsAction>,
    file: Option<PathBuf>,
) -> Result<(), CliError> {
    match action.unwrap_or(PinsAction::Show) {
        PinsAction::Show => show(ctx, file),
        PinsAction::Diff => diff(ctx, file).await,
        PinsAction::Accept { names } => accept(ctx, file, &names).await,
    }
}

fn show(ctx: &Context, file: Option<PathBuf>) -> Result<(), CliError> {
    let path = match file {
        Some(path) => path,
        None => {
            let config = ConfigFile::load(ctx.global.config.as_deref())?;
            PinStore::beside(std::path::Path::new(&config.path))
        }
    };
    let store = PinStore::open(&path, PinPolicy::default())
        .map_err(|e| CliError::Usage(format!("pinned definitions: {e}")))?;
    let pins = store.pins();
    if ctx.global.json {
        return output::json(&pins);
    }
    let mut t = Table::new(&["server", "kind", "name", "digest", "description"]);
    for (server, of) in &pins.servers {
        let kinds = [
            (PinKind::Tool, &of.tools),
            (PinKind::Prompt, &of.prompts),
            (PinKind::ResourceTemplate, &of.resource_templates),
        ];
        for (kind, pinned) in kinds {
            for (name, pin) in pinned {
                let description = pin.definition["description"].as_str().unwrap_or("");
                t.row(vec![
                    server.clone(),
                    kind.said().to_owned(),
                    one_line(name, 60),
                    pin.digest.chars().take(19).collect(),
                    one_line(description, 60),
                ]);
            }
        }
    }
    output::print(&t.render())?;
    output::print(&format!("pinned in {}\n", path.display()))
}

async fn diff(ctx: &Context, file: Option<PathBuf>) -> Result<(), CliError> {
    let pending = with_config_host(
        ctx,
        "pins diff",
        Pinning::Look(file),
        async |host: &Host| {
            // Templates are judged only when read: read them.
            host.templates().await;
            Ok(host.pins().map(|p| p.pending()).unwrap_or_default())
        },
    )
    .await?;
    if ctx.global.json {
        output::json(&pending)?;
    } else if pending.is_empty() {
        output::print("every listed definition is as pinned\n")?;
    } else {
        for p in &pending {
            output::print(&format!("{}\n", describe(p)))?;
        }
    }
    match pending.iter().any(|p| matches!(p, Pending::Changed(_))) {
        true => Err(CliError::Violations(
            "definitions changed since they were pinned".into(),
        )),
        false => Ok(()),
    }
}

async fn accept(ctx: &Context, file: Option<PathBuf>, names: &[String]) -> Result<(), CliError> {
    let wanted = |server: &str, name: &str| {
        names.is_empty()
            || names.iter().any(|n| match n.split_once('/') {
                Some((s, rest)) => s == server && rest == name,
                None => n == server,
            })
    };
    let accepted = with_config_host(
        ctx,
        "pins accept",
        Pinning::Look(file),
        async |host: &Host| {
            let Some(store) = host.pins() else {
                return Ok(Vec::new());
            };
            host.templates().await;
            store
                .accept(wanted)
                .map_err(|e| CliError::Usage(format!("pinned definitions: {e}")))
        },
    )
    .await?;
    if ctx.global.json {
        return output::json(&accepted);
    }
    if accepted.is_empty() {
        return output::print("nothing to accept\n");
    }
    for p in &accepted {
        let (server, kind, name) = p.key();
        output::print(&format!("accepted {} {server}/{name}\n", kind.said()))?;
    }
    Ok(())
}

/// A pending definition, field by field.
fn describe(p: &Pending) -> String {
    let (server, kind, name) = p.key();
    match p {
        Pending::Changed(change) => {
            let mut text = format!(
                "{} {server}/{name} differs from its pin ({} → {}):",
                kind.said(),
                short(&change.pinned.digest),
                short(&change.now.digest)
            );
            let fields = |v: &Value| v.as_object().cloned().unwrap_or_default();
            let (before, after) = (
                fields(&change.pinned.definition),
                fields(&change.now.definition),
            );
            for field in kind.fields() {
                let (b, a) = (before.get(*field), after.get(*field));
                if b != a {
                    let shown = |v: Option<&Value>| {
                        v.map_or_else(|| "(none)".to_owned(), |v| one_line(&v.to_string(), 400))
                    };
                    text.push_str(&format!("\n  {field}\n  - {}\n  + {}", shown(b), shown(a)));
                }
            }
            text
        }
        _ => format!(
            "{} {server}/{name} is new and held until accepted",
            kind.said()
        ),
    }
}

fn short(digest: &str) -> String {
    digest.chars().take(19).collect()
}
