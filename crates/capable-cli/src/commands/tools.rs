//! `capable tools` and `capable tools call NAME --args JSON`.

use capable::{RequestOptions, Session};

use super::{parse_args, with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output::{self, one_line, Table};

pub async fn list(ctx: &Context, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let tools = s.list_tools().await?;
        if ctx.global.json {
            output::json(&tools)?;
        } else {
            let mut t = Table::new(&["tool", "description"]);
            for tool in &tools {
                t.row(vec![
                    tool.name.clone(),
                    one_line(tool.description.as_deref().unwrap_or(""), 80),
                ]);
            }
            output::print(&t.render())?;
        }
        Ok(())
    })
    .await
}

pub async fn call(
    ctx: &Context,
    name: &str,
    arguments: &str,
    args: &ServerArgs,
) -> Result<(), CliError> {
    let arguments = parse_args(arguments)?;
    let session = ctx.connect(args).await?;
    let quiet = ctx.global.json;
    with_session(ctx, session, async |s: &Session| {
        let options = RequestOptions {
            timeout: None,
            on_progress: Some(Box::new(move |p| {
                if !quiet {
                    let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
                    let msg = p.message.as_deref().unwrap_or("");
                    output::eprint_line(&format!("progress {}{total} {msg}", p.progress));
                }
            })),
        };
        let result = s.call_tool_with(name, Some(&arguments), options).await?;
        if ctx.global.json {
            output::json(&result)?;
        } else {
            let mut text = String::new();
            for block in &result.content {
                match block.get("text").and_then(|t| t.as_str()) {
                    Some(t) => text.push_str(t),
                    None => text.push_str(&block.to_string()),
                }
                text.push('\n');
            }
            output::print(&text)?;
            if let Some(structured) = &result.structured_content {
                output::print(&format!("structured: {structured}\n"))?;
            }
            if result.is_error == Some(true) {
                output::eprint_line("the tool reported an error");
            }
        }
        Ok(())
    })
    .await
}
