//! Modern `input_required` results: a `tools/call`, `prompts/get` or `resources/read`
//! answered with `resultType: "input_required"` carries the server's questions
//! (`inputRequests`). The host's handlers answer them, and the request is retried with
//! a new id, the answers (`inputResponses`) and the server's `requestState` echoed
//! exactly — at most [`MAX_INPUT_ROUNDS`] times.

use capable_core::{Method, Params, Payload};

use crate::driver::Answer;
use crate::error::Error;

use super::exchange::RequestOptions;
use super::Session;

/// The most `input_required` rounds answered for one request.
pub const MAX_INPUT_ROUNDS: usize = 8;

enum ResultType {
    /// Final: `complete` (or absent), or — for a `tools/call` of a client that
    /// declared the tasks extension — a task that will produce the result.
    Complete,
    InputRequired(InputRequired),
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired {
    #[serde(default)]
    input_requests: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    request_state: Option<String>,
}

/// Reads `resultType` (modern era). Absent means `complete`; only `tools/call`,
/// `prompts/get` and `resources/read` may ask for input; only a `tools/call` of a
/// client that declared the tasks extension may become a `task`; anything else is
/// invalid.
fn result_type(method: Method, payload: &Payload, tasks: bool) -> Result<ResultType, Error> {
    let result_type = payload.result_type().map_err(|e| Error::MalformedResult {
        method,
        detail: e.to_string(),
    })?;
    match result_type.as_deref() {
        None | Some("complete") => Ok(ResultType::Complete),
        Some("task") if method == Method::CallTool && tasks => Ok(ResultType::Complete),
        Some("task") => Err(Error::MalformedResult {
            method,
            detail: match method {
                Method::CallTool => "the server answered with a task, but this client did not declare the tasks extension".into(),
                _ => format!("the server answered {method} with a task; only tools/call may become one"),
            },
        }),
        Some("input_required")
            if matches!(
                method,
                Method::CallTool | Method::GetPrompt | Method::ReadResource
            ) =>
        {
            let input: InputRequired = payload.decode().map_err(|e| Error::MalformedResult {
                method,
                detail: format!("input_required result: {e}"),
            })?;
            if input.input_requests.is_empty() && input.request_state.is_none() {
                return Err(Error::MalformedResult {
                    method,
                    detail: "input_required without inputRequests or requestState".into(),
                });
            }
            Ok(ResultType::InputRequired(input))
        }
        Some(other) => Err(Error::MalformedResult {
            method,
            detail: format!("unknown resultType {other:?}"),
        }),
    }
}

impl Session {
    /// Follows `input_required` rounds until the answer is complete.
    pub(super) async fn complete_input<P: Params + ?Sized>(
        &self,
        method: Method,
        params: &P,
        mut answer: Answer,
        options: &mut RequestOptions,
    ) -> Result<Answer, Error> {
        let tasks = self
            .shared
            .lock()
            .conn
            .config()
            .capabilities
            .has_extension(capable_core::Extension::Tasks);
        for round in 0..=MAX_INPUT_ROUNDS {
            match result_type(method, &answer.payload, tasks)? {
                ResultType::Complete => return Ok(answer),
                ResultType::InputRequired(input) => {
                    if round == MAX_INPUT_ROUNDS {
                        break;
                    }
                    let retry = self.answer_input(method, params, input).await?;
                    answer = self.exchange(method, &retry, options).await?;
                }
            }
        }
        Err(Error::TooManyInputRounds {
            method,
            rounds: MAX_INPUT_ROUNDS,
        })
    }

    /// Builds the retry of an `input_required` request: the same params plus
    /// `inputResponses` and the server's `requestState`, echoed exactly.
    async fn answer_input<P: Params + ?Sized>(
        &self,
        method: Method,
        params: &P,
        input: InputRequired,
    ) -> Result<serde_json::Value, Error> {
        let responses = self.answer_requests(method, input.input_requests).await?;
        let mut retry = params.to_value().map_err(|e| Error::MalformedResult {
            method,
            detail: e.to_string(),
        })?;
        if let Some(obj) = retry.as_object_mut() {
            obj.remove("inputResponses");
            obj.remove("requestState");
            if !responses.is_empty() {
                obj.insert(
                    "inputResponses".into(),
                    serde_json::Value::Object(responses),
                );
            }
            if let Some(state) = input.request_state {
                obj.insert("requestState".into(), serde_json::Value::String(state));
            }
        }
        Ok(retry)
    }

    /// Answers a server's `inputRequests` (of an `input_required` result, or of a
    /// task) with the host's handlers: the `inputResponses`, under the same keys.
    pub(super) async fn answer_requests(
        &self,
        method: Method,
        requests: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
        let mut responses = serde_json::Map::new();
        for (key, request) in requests {
            let name = request
                .get("method")
                .and_then(|m| m.as_str())
                .unwrap_or("")
                .to_owned();
            let params = request
                .get("params")
                .cloned()
                .unwrap_or(serde_json::Value::Null);
            let answer = self
                .options
                .handlers
                .answer(&name, params)
                .await
                .map_err(|error| Error::InputUnanswered {
                    method,
                    input: name.clone(),
                    error: Box::new(error),
                })?;
            responses.insert(key, answer);
        }
        Ok(responses)
    }
}
