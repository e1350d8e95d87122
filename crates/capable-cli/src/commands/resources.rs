//! `capable resources [--templates]`.

use capable::Session;

use super::{with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output::{self, one_line, Table};

pub async fn run(ctx: &Context, templates: bool, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        if templates {
            let list = s.list_resource_templates().await?;
            if ctx.global.json {
                output::json(&list)?;
            } else {
                let mut t = Table::new(&["template", "name", "description"]);
                for r in &list {
                    t.row(vec![
                        r.uri_template.clone(),
                        r.name.clone(),
                        one_line(r.description.as_deref().unwrap_or(""), 60),
                    ]);
                }
                output::print(&t.render())?;
            }
        } else {
            let list = s.list_resources().await?;
            if ctx.global.json {
                output::json(&list)?;
            } else {
                let mut t = Table::new(&["uri", "name", "type", "description"]);
                for r in &list {
                    t.row(vec![
                        r.uri.clone(),
                        r.title.clone().unwrap_or_else(|| r.name.clone()),
                        r.mime_type.clone().unwrap_or_default(),
                        one_line(r.description.as_deref().unwrap_or(""), 60),
                    ]);
                }
                output::print(&t.render())?;
            }
        }
        Ok(())
    })
    .await
}
