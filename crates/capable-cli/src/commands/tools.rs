//! `capable tools` and `capable tools call NAME --args JSON [--task] [--save DIR]`
//! (`tools show NAME` is [`super::tools_show`]).
//!
//! A call knows the tool before it is made: from the on-disk cache while the server's
//! last `tools/list` is fresh, else by listing first (when the server offers tools).
//! So the `Mcp-Param-*` headers its `x-mcp-header` annotations ask for go out, and
//! its `structuredContent` is checked against its `outputSchema`.

use std::path::Path;
use std::time::Duration;

use capable::internal::model::{CallToolResult, Task, Tool};
use capable::internal::{Method, Notification};
use capable::{Error, RequestOptions, Session, TaskWait, ToolCall};

use super::{parse_args, with_session, Context};
use crate::disk_cache::ServerCache;
use crate::exit::CliError;
use crate::flags::{Command, Global, ServerArgs, ToolsAction};
use crate::media::{self, Binary};
use crate::output::{self, one_line, Table};

/// `tools call SERVER/TOOL` (or `tools show SERVER/TOOL`) without a server given (no `--`, --url or --server):
/// the server of the config named before the first `/`, the rest its tool's name (the
/// host's naming rule, [`capable::host::split`]).
pub fn address_across_config(global: &mut Global, command: &mut Command) {
    let Command::Tools {
        action:
            Some(
                ToolsAction::Call {
                    name,
                    server: inner,
                    ..
                }
                | ToolsAction::Show {
                    name,
                    server: inner,
                },
            ),
        server,
        ..
    } = command
    else {
        return;
    };
    let given = global.server.is_some()
        || global.url.is_some()
        || !server.command.is_empty()
        || !inner.command.is_empty();
    if given {
        return;
    }
    if let Some((server, tool)) = capable::host::split(name) {
        global.server = Some(server.to_owned());
        *name = tool.to_owned();
    }
}

pub async fn list(ctx: &Context, args: &ServerArgs) -> Result<(), CliError> {
    let cache = ctx.cache(args)?;
    let session = ctx.connect(args).await?;
    with_session(ctx, session, async |s: &Session| {
        let tools = list_and_keep(s, &cache).await?;
        if ctx.global.json {
            output::json(&tools)?;
        } else {
            let mut t = Table::new(&["tool", "ui", "description"]);
            for tool in &tools {
                let ui = match (tool.ui_resource(), tool.is_app_only()) {
                    (Some(uri), true) => format!("{uri} (app only)"),
                    (Some(uri), false) => uri.to_owned(),
                    (None, _) => String::new(),
                };
                t.row(vec![
                    tool.name.clone(),
                    ui,
                    one_line(tool.description.as_deref().unwrap_or(""), 80),
                ]);
            }
            output::print(&t.render())?;
        }
        Ok(())
    })
    .await
}

/// Every page of `tools/list` (within the session's list bounds); kept on disk when
/// the server says for how long.
pub async fn list_and_keep(s: &Session, cache: &ServerCache) -> Result<Vec<Tool>, CliError> {
    let (tools, hint) = s.list_tools_with_hint().await?;
    let ttl = hint.ttl_ms.and_then(capable::internal::time::ttl);
    let scope = hint.cache_scope.as_deref().unwrap_or("private");
    cache.keep_tools(&tools, ttl, scope);
    Ok(tools)
}

/// What `tools call` was asked to do.
pub struct Call<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
    pub task: bool,
    pub task_timeout: Option<Duration>,
    /// `--save DIR`: where the result's images, audio and blobs are written.
    pub save: Option<&'a Path>,
}

pub async fn call(ctx: &Context, call: Call<'_>, args: &ServerArgs) -> Result<(), CliError> {
    let arguments = parse_args(call.arguments)?;
    let cache = ctx.cache(args)?;
    let known = cache.fresh_tools()?;
    // The command handles tasks (it polls them, Ctrl-C cancels them): it says so.
    let mut options = ctx.options().with_tasks();
    if let Some(tools) = &known {
        options = options.with_known_tools(tools.clone());
    }
    let session = ctx.connect_with(args, options).await?;
    let quiet = ctx.global.json;
    // Not `with_session`: a signal during a task cancels the task first (`follow`).
    let work = async |s: &Session| -> Result<(), CliError> {
        let mut notifications = s.notifications();
        if known.is_none() && s.check(Method::ListTools).is_ok() {
            list_and_keep(s, &cache).await?;
        }
        let options = RequestOptions {
            on_progress: Some(Box::new(move |p| {
                if !quiet {
                    let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
                    let msg = p.message.as_deref().unwrap_or("");
                    output::eprint_line(&format!("progress {}{total} {msg}", p.progress));
                }
            })),
            ..RequestOptions::default()
        };
        let started = s.call_tool_or_task(call.name, Some(&arguments), options, call.task);
        let outcome = tokio::select! {
            outcome = started => outcome,
            signal = ctx.signals.received() => return Err(CliError::Interrupted(signal)),
        };
        let result = match outcome {
            Err(e) => {
                if matches!(&e, Error::Rpc { .. }) && known.is_some() {
                    // Maybe the kept list is out of date: list again next time.
                    cache.forget_tools();
                }
                return Err(e.into());
            }
            Ok(ToolCall::Complete(result)) => result,
            Ok(ToolCall::Task(task)) => follow(ctx, s, *task, call.task_timeout, quiet).await?,
        };
        if let Some(rx) = notifications.as_mut() {
            while let Ok(n) = rx.try_recv() {
                if n.kind == Notification::ToolsListChanged {
                    cache.forget_tools();
                }
            }
        }
        let failed = if ctx.global.json {
            output::json(&result)?;
            let items = binaries(&result.content);
            call.save.and_then(|dir| media::save_quietly(items, dir))
        } else {
            let (text, failed) = human_result(&result, call.save);
            output::print(&text)?;
            failed
        };
        // The result is the output either way; the exit code says the tool failed.
        if result.is_error == Some(true) {
            return Err(CliError::ToolError {
                tool: call.name.to_owned(),
            });
        }
        failed.map_or(Ok(()), |why| Err(media::save_failed(why)))
    };
    let outcome = work(&session).await;
    session.close().await;
    outcome
}

/// The binary items among a result's content blocks (images, audio, blobs).
fn binaries(content: &[serde_json::Value]) -> impl Iterator<Item = Binary<'_>> {
    content
        .iter()
        .enumerate()
        .filter_map(|(i, block)| Binary::from_block(i + 1, block))
}

/// A tool's result for people: each text block as it is, each image, audio or blob
/// as one summary line (saved first with `--save`), anything else as its JSON, then
/// the structured content. Also returns the first failure to save.
fn human_result(result: &CallToolResult, save: Option<&Path>) -> (String, Option<String>) {
    let mut text = String::new();
    let mut failed = None;
    for (i, block) in result.content.iter().enumerate() {
        if let Some(item) = Binary::from_block(i + 1, block) {
            let shown = media::show(&item, save);
            text.push_str(&shown.line);
            failed = failed.or(shown.failed);
        } else {
            match block.get("text").and_then(|t| t.as_str()) {
                Some(t) => text.push_str(t),
                None => text.push_str(&block.to_string()),
            }
        }
        text.push('\n');
    }
    if let Some(structured) = &result.structured_content {
        text.push_str(&format!("structured: {structured}\n"));
    }
    (text, failed)
}

/// Follows a task to its end, its status on stderr; Ctrl-C cancels it with
/// `tasks/cancel` (never `notifications/cancelled`).
async fn follow(
    ctx: &Context,
    s: &Session,
    task: Task,
    deadline: Option<Duration>,
    quiet: bool,
) -> Result<capable::internal::model::CallToolResult, CliError> {
    let id = task.task_id.clone();
    let wait = TaskWait {
        on_status: Some(Box::new(move |t: &Task| {
            if !quiet {
                let msg = t
                    .status_message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                output::eprint_line(&format!("task {} {}{msg}", t.task_id, t.status));
            }
        })),
        deadline,
    };
    tokio::select! {
        outcome = s.await_task(task, wait) => Ok(outcome?),
        signal = ctx.signals.received() => {
            if !quiet {
                output::eprint_line(&format!("cancelling task {id}"));
            }
            s.cancel_task(&id).await?;
            Err(CliError::Interrupted(signal))
        }
    }
}
