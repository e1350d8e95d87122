//! `capable tools show NAME`: one tool for people — its name, title and description,
//! then its arguments as a table (type, required, description, choices, default), the
//! fields of nested objects indented under them ([`crate::schema_outline`]). With
//! `--json`, the tool exactly as the server listed it.
//!
//! The tool comes from the on-disk cache while the server's last `tools/list` is
//! fresh, else from listing (and the list is kept), as for `tools call`.

use capable::internal::model::Tool;
use capable::Session;

use super::{with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output::{self, Table};
use crate::schema_outline;

pub async fn run(ctx: &Context, name: &str, args: &ServerArgs) -> Result<(), CliError> {
    let cache = ctx.cache(args)?;
    let known = cache.fresh_tools()?;
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let tools = match known {
            Some(tools) if tools.iter().any(|t| t.name == name) => tools,
            _ => super::tools::list_and_keep(s, &cache).await?,
        };
        let Some(tool) = tools.iter().find(|t| t.name == name) else {
            return Err(not_listed(name, &tools));
        };
        if ctx.global.json {
            output::json(tool)?;
        } else {
            output::print(&human(tool))?;
        }
        Ok(())
    })
    .await
}

/// A name the server does not list: what it does list instead.
fn not_listed(name: &str, tools: &[Tool]) -> CliError {
    let names: Vec<&str> = tools.iter().take(20).map(|t| t.name.as_str()).collect();
    let listed = match names.len() {
        0 => "it lists no tools".to_owned(),
        n if n < tools.len() => format!("it lists {}, …", names.join(", ")),
        _ => format!("it lists {}", names.join(", ")),
    };
    CliError::Usage(format!("the server lists no tool {name:?}: {listed}"))
}

/// The tool for people.
fn human(tool: &Tool) -> String {
    let mut out = format!("tool         {}\n", tool.name);
    if let Some(title) = tool.title.as_deref().filter(|t| !t.is_empty()) {
        out.push_str(&format!("title        {title}\n"));
    }
    if let Some(description) = tool.description.as_deref().filter(|d| !d.trim().is_empty()) {
        let mut lines = description.trim().lines();
        out.push_str(&format!("description  {}\n", lines.next().unwrap_or("")));
        for line in lines {
            out.push_str(&format!("             {line}\n"));
        }
    }
    out.push('\n');
    let rows = schema_outline::arguments(&tool.input_schema_value());
    if rows.is_empty() {
        out.push_str("no arguments\n");
        return out;
    }
    let mut t = Table::new(&["argument", "type", "required", "description"]);
    for row in rows {
        t.row(vec![
            format!("{}{}", "  ".repeat(row.depth), row.name),
            row.kind,
            if row.required { "yes" } else { "" }.to_owned(),
            row.notes,
        ]);
    }
    out.push_str(&t.render());
    out
}
