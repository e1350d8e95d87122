//! Modern `input_required` results: a `tools/call`, `prompts/get` or `resources/read`
//! answered with `resultType: "input_required"` carries the server's questions
//! (`inputRequests`). The host's handlers answer them, and the request is retried with
//! a new id, the answers (`inputResponses`) and the server's `requestState` echoed
//! exactly — at most [`MAX_INPUT_ROUNDS`] times.
//!
//! What a result means, how the retry is built and when to stop are the core's
//! [`InputRounds`]; this file asks the handlers and sends the retries.

use capable_core::internal::input_rounds::{self, InputRounds, Round, RoundError};
use capable_core::model::JsonObject;
use capable_core::{Method, Params};

use crate::driver::Answer;
use crate::error::Error;

use super::exchange::RequestOptions;
use super::Session;

pub use capable_core::internal::input_rounds::MAX_INPUT_ROUNDS;

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
        let mut rounds = InputRounds::new(method, tasks);
        loop {
            let input = match rounds.handle_answer(&answer.payload) {
                Ok(Round::Complete) => return Ok(answer),
                Ok(Round::Input(input)) => input,
                Err(RoundError::TooManyRounds { rounds }) => {
                    return Err(Error::TooManyInputRounds { method, rounds })
                }
                Err(e) => {
                    return Err(Error::MalformedResult {
                        method,
                        detail: e.to_string(),
                    })
                }
            };
            let responses = self.answer_questions(method, input.questions()).await?;
            let params = params.to_value().map_err(|e| Error::MalformedResult {
                method,
                detail: e.to_string(),
            })?;
            let retry = input.retry(params, responses);
            answer = self.exchange(method, &retry, options).await?;
        }
    }

    /// Answers a server's `inputRequests` (of an `input_required` result, or of a
    /// task) with the host's handlers: the `inputResponses`, under the same keys.
    pub(super) async fn answer_requests(
        &self,
        method: Method,
        requests: JsonObject,
    ) -> Result<JsonObject, Error> {
        self.answer_questions(method, input_rounds::questions(&requests))
            .await
    }

    async fn answer_questions(
        &self,
        method: Method,
        questions: Vec<input_rounds::Question>,
    ) -> Result<JsonObject, Error> {
        let mut responses = JsonObject::new();
        for question in questions {
            let answer = self
                .options
                .handlers
                .answer(question.kind, &question.method, question.params)
                .await
                .map_err(|error| Error::InputUnanswered {
                    method,
                    input: question.method.clone(),
                    error: Box::new(error),
                })?;
            responses.insert(question.key, answer);
        }
        Ok(responses)
    }
}
