//! `capable prompts` and `capable prompts get NAME --args JSON`.

use capable::Session;

use super::{parse_args, with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output::{self, one_line, Table};

pub async fn list(ctx: &Context, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let prompts = s.list_prompts().await?;
        if ctx.global.json {
            output::json(&prompts)?;
        } else {
            let mut t = Table::new(&["prompt", "arguments", "description"]);
            for p in &prompts {
                let args: Vec<String> = p
                    .arguments
                    .iter()
                    .map(|a| {
                        if a.required == Some(true) {
                            a.name.clone()
                        } else {
                            format!("[{}]", a.name)
                        }
                    })
                    .collect();
                t.row(vec![
                    p.name.clone(),
                    args.join(" "),
                    one_line(p.description.as_deref().unwrap_or(""), 60),
                ]);
            }
            output::print(&t.render())?;
        }
        Ok(())
    })
    .await
}

pub async fn get(
    ctx: &Context,
    name: &str,
    arguments: &str,
    args: &ServerArgs,
) -> Result<(), CliError> {
    let arguments = parse_args(arguments)?;
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let result = s.get_prompt(name, Some(&arguments)).await?;
        if ctx.global.json {
            output::json(&result)?;
        } else {
            if let Some(d) = &result.description {
                output::print(&format!("{d}\n\n"))?;
            }
            for m in &result.messages {
                let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("?");
                let text = m
                    .pointer("/content/text")
                    .and_then(|t| t.as_str())
                    .map(str::to_owned)
                    .unwrap_or_else(|| m.get("content").map(|c| c.to_string()).unwrap_or_default());
                output::print(&format!("{role}: {text}\n"))?;
            }
        }
        Ok(())
    })
    .await
}
