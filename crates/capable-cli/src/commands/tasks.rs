//! `capable tasks list|get ID|cancel ID`: the server's tasks.
//!
//! The command declares the tasks extension (2026-07-28 servers answer tasks methods
//! only to a client that does). `list` needs a 2025-11-25 server that declares
//! `tasks.list`: 2026-07-28 has no way to list tasks, and says so (exit 5).

use capable::internal::model::Task;
use capable::Session;

use super::{with_session, Context};
use crate::exit::CliError;
use crate::flags::ServerArgs;
use crate::output::{self, one_line, Table};

fn table(tasks: &[Task]) -> String {
    let mut t = Table::new(&["task", "status", "updated", "message"]);
    for task in tasks {
        t.row(vec![
            task.task_id.clone(),
            task.status.to_string(),
            task.last_updated_at.clone().unwrap_or_default(),
            one_line(task.status_message.as_deref().unwrap_or(""), 60),
        ]);
    }
    t.render()
}

pub async fn list(ctx: &Context, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect_with(args, ctx.options().with_tasks()).await?;
    with_session(ctx, session, async |s: &Session| {
        let tasks = s.list_tasks().await?;
        if ctx.global.json {
            output::json(&tasks)?;
        } else {
            output::print(&table(&tasks))?;
        }
        Ok(())
    })
    .await
}

pub async fn get(ctx: &Context, id: &str, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect_with(args, ctx.options().with_tasks()).await?;
    with_session(ctx, session, async |s: &Session| {
        let task = s.get_task(id).await?;
        if ctx.global.json {
            output::json(&task)?;
        } else {
            let mut out = table(std::slice::from_ref(&task));
            if let Some(result) = &task.result {
                out.push_str(&format!("result: {result}\n"));
            }
            if let Some(error) = &task.error {
                out.push_str(&format!("error: {error}\n"));
            }
            output::print(&out)?;
        }
        Ok(())
    })
    .await
}

pub async fn cancel(ctx: &Context, id: &str, args: &ServerArgs) -> Result<(), CliError> {
    let session = ctx.connect_with(args, ctx.options().with_tasks()).await?;
    with_session(ctx, session, async |s: &Session| {
        s.cancel_task(id).await?;
        if ctx.global.json {
            output::json(&serde_json::json!({"taskId": id, "cancelRequested": true}))?;
        } else {
            output::print(&format!("asked the server to cancel task {id} (cancellation is cooperative: `capable tasks get {id}` shows where it is)\n"))?;
        }
        Ok(())
    })
    .await
}
