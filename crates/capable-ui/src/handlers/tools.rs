//! Tool calls: the arguments checked against the tool's `inputSchema` before anything
//! is sent, the call run (progress and task statuses on the stream, see `calls.rs`),
//! its result with the check of its `structuredContent` against the tool's
//! `outputSchema`; and cancel.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use capable::internal::model::{JsonObject, Tool};
use capable::internal::Notice;
use capable::Session;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::calls::{Cancel, Ended};
use crate::error::ApiError;
use crate::extract::{Answer, Command, Deadline, Reply};
use crate::schema_check;
use crate::state::AppState;

/// `{server, tool, arguments?, call?, task?}`.
#[derive(Deserialize)]
pub struct Call {
    server: String,
    tool: String,
    arguments: Option<JsonObject>,
    /// The page's id for the call (to cancel it, to match its progress); made up when
    /// missing.
    call: Option<String>,
    /// Ask for the call to run as a task (where the tool allows it).
    #[serde(default)]
    task: bool,
}

/// `POST /api/call {server, tool, arguments, call?, task?}`: `{call, result,
/// outputCheck}`, or `{call, cancelled: true, task?}` when it was cancelled.
pub async fn call(
    State(app): State<Arc<AppState>>,
    Deadline(timeout): Deadline,
    Command(c): Command<Call>,
) -> Result<Response, ApiError> {
    app.servers
        .not_withheld(capable::host::ListKind::Tools, &c.server, &c.tool)?;
    let session = app.servers.session(&c.server)?;
    let tool = app
        .servers
        .tools(&c.server)
        .into_iter()
        .find(|t| t.name == c.tool);
    if let Some(tool) = &tool {
        let instance = Value::Object(c.arguments.clone().unwrap_or_default());
        let problems = schema_check::check(tool.input_schema.get(), &instance);
        if !problems.is_empty() {
            return Err(ApiError::usage(
                "the arguments do not match the tool's inputSchema; nothing was sent",
            )
            .with_status(StatusCode::UNPROCESSABLE_ENTITY)
            .with("invalid", json!(problems)));
        }
    }
    let id = app.calls.id(c.call);
    let before = session.notices().len();
    let ended = app
        .calls
        .run(
            &c.server,
            session.clone(),
            &id,
            c.tool.clone(),
            c.arguments,
            c.task,
            timeout,
        )
        .await?;
    match ended {
        Ended::Done(result) => {
            let check = output_check(&session, tool.as_ref(), &c.tool, before);
            let reply = Reply(json!({"call": id, "result": result, "outputCheck": check}));
            Ok(crate::history::tool_reply(reply, &result))
        }
        Ended::Cancelled { task } => {
            let mut answer = json!({"call": id, "cancelled": true});
            if let Some(task) = task {
                answer["task"] = json!(task);
            }
            let mut response = Reply(answer).into_response();
            response
                .extensions_mut()
                .insert(crate::history::CallCancelled);
            Ok(response)
        }
    }
}

/// What the session found checking the result against the tool's `outputSchema`.
fn output_check(session: &Session, tool: Option<&Tool>, name: &str, before: usize) -> Value {
    let Some(schema) = tool.and_then(|t| t.output_schema.as_ref()) else {
        return json!({"declared": false});
    };
    let schema: Value = serde_json::from_str(schema.get()).unwrap_or(Value::Null);
    for notice in session.notices().iter().skip(before) {
        match notice {
            Notice::OutputSchemaMismatch { tool, errors, .. } if tool == name => {
                return json!({"declared": true, "schema": schema, "ok": false, "errors": errors});
            }
            Notice::OutputSchemaUnchecked { tool, why } if tool == name => {
                return json!({"declared": true, "schema": schema, "ok": null, "errors": [why]});
            }
            _ => {}
        }
    }
    json!({"declared": true, "schema": schema, "ok": true, "errors": []})
}

/// `{call}`.
#[derive(Deserialize)]
pub struct CancelCall {
    call: String,
}

/// `POST /api/cancel {call}`: a plain call stops being waited for, which sends
/// `notifications/cancelled`; a task is cancelled with `tasks/cancel`, and its call
/// ends when the server says it is cancelled.
pub async fn cancel(State(app): State<Arc<AppState>>, Command(c): Command<CancelCall>) -> Answer {
    let id = c.call;
    Ok(Reply(match app.calls.cancel(&id).await? {
        Cancel::NotRunning => json!({"call": id, "cancelled": false}),
        Cancel::Dropped => json!({"call": id, "cancelled": true}),
        Cancel::Task(task) => json!({"call": id, "cancelled": true, "task": task}),
    }))
}
