//! Modern `input_required` results, as decisions with no I/O: what a result's
//! `resultType` means, which questions the server asks, how the retry is built, and
//! when to stop asking.
//!
//! In 2026-07-28 a `tools/call`, `prompts/get` or `resources/read` may be answered
//! with `resultType: "input_required"`: the server's questions (`inputRequests`, each a
//! `{method, params}` the host's handlers answer) and an opaque `requestState`. The
//! client retries the request with a new id, the answers under the same keys
//! (`inputResponses`) and the `requestState` echoed exactly — at most
//! [`MAX_INPUT_ROUNDS`] times for one request.
//!
//! | `resultType` | for | means |
//! |---|---|---|
//! | absent, `complete` | any | the result: [`Round::Complete`] |
//! | `task` | `tools/call` of a client that declared the tasks extension | the result (a task that will produce it): [`Round::Complete`] |
//! | `task` | anything else | [`RoundError::Malformed`] |
//! | `input_required` | `tools/call`, `prompts/get`, `resources/read` | [`Round::Input`], unless it asks nothing and keeps no state |
//! | anything else | any | [`RoundError::Malformed`] |
//!
//! ```
//! use capable_core::internal::input_rounds::{InputRounds, Round};
//! use capable_core::{Method, Payload};
//! use serde_json::json;
//!
//! let mut rounds = InputRounds::new(Method::CallTool, false);
//! let asked = Payload::from_json(r#"{"resultType":"input_required","requestState":"s1",
//!   "inputRequests":{"name":{"method":"elicitation/create","params":{"message":"Name?"}}}}"#);
//! let Ok(Round::Input(input)) = rounds.handle_answer(&asked) else { panic!() };
//! let questions = input.questions();
//! assert_eq!((questions[0].key.as_str(), questions[0].method.as_str()), ("name", "elicitation/create"));
//! // The host answered: the retry carries the answers and the state, as given.
//! let mut answers = serde_json::Map::new();
//! answers.insert("name".into(), json!({"action": "accept", "content": {"name": "Ada"}}));
//! let retry = input.retry(json!({"name": "greet"}), answers);
//! assert_eq!(retry["requestState"], "s1");
//! assert_eq!(retry["inputResponses"]["name"]["content"]["name"], "Ada");
//! ```

use serde::Deserialize;
use serde_json::Value;

use crate::input_kind::InputKind;
use crate::jsonrpc::Payload;
use crate::method::Method;
use crate::model::JsonObject;
use crate::version::Era;

/// The most `input_required` rounds answered for one request.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// Whether answers in `era` may ask for input: only modern ones (2026-07-28). A legacy
/// server asks with requests of its own while the call is open, and a `resultType`
/// it writes is a member the legacy schema does not define: its answer is the result.
pub fn applies_to(era: Era) -> bool {
    era == Era::Modern
}

/// Whether a request of `method` may be answered with `input_required` (2026-07-28:
/// `tools/call`, `prompts/get` and `resources/read` only, the method table's column
/// [`crate::method::MethodProps::may_ask_for_input`]), and so whether a relay may put
/// a server's questions in a round of it.
pub fn may_ask_for_input(method: Method) -> bool {
    method.props().may_ask_for_input()
}

/// What an answer to a request means, as far as input goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Round {
    /// Final: the result itself (or, for a `tools/call` of a client that declared the
    /// tasks extension, a task that will produce it).
    Complete,
    /// The server asks for input: answer [`InputRequest::questions`], then retry with
    /// [`InputRequest::retry`].
    Input(InputRequest),
}

/// Why the rounds stop without a result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// The answer's `resultType` is not one the request may have, or its
    /// `input_required` is unreadable.
    #[error("{detail}")]
    Malformed {
        /// What is wrong.
        detail: String,
    },
    /// The server asked for input once more after [`MAX_INPUT_ROUNDS`] rounds.
    #[error("the server asked for input {rounds} times; stopped")]
    TooManyRounds {
        /// How many rounds were answered.
        rounds: usize,
    },
}

/// One question of an `inputRequests` map (of an `input_required` result or a task).
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    /// Its key: the answer goes under the same one.
    pub key: String,
    /// What the server asks for (`elicitation/create`, `sampling/createMessage`,
    /// `roots/list`; empty when it named none).
    pub method: String,
    /// The same, read ([`InputKind::Other`] for a method no client handles).
    pub kind: InputKind,
    /// Its params (`null` when absent).
    pub params: Value,
}

/// The questions of an `inputRequests` map, in its order.
pub fn questions(requests: &JsonObject) -> Vec<Question> {
    requests
        .iter()
        .map(|(key, request)| {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            Question {
                key: key.clone(),
                kind: InputKind::of(&method, &params),
                method,
                params,
            }
        })
        .collect()
}

/// An `input_required` result: what the server asks, and the state to echo.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequest {
    #[serde(default)]
    input_requests: JsonObject,
    #[serde(default)]
    request_state: Option<String>,
}

impl InputRequest {
    /// The server's questions.
    pub fn questions(&self) -> Vec<Question> {
        questions(&self.input_requests)
    }

    /// The retry of the request whose params were `params`: the same params, with
    /// `responses` as `inputResponses` (left out when empty) and the server's
    /// `requestState` echoed exactly (any a previous round put in are replaced).
    pub fn retry(self, mut params: Value, responses: JsonObject) -> Value {
        if let Some(obj) = params.as_object_mut() {
            obj.remove("inputResponses");
            obj.remove("requestState");
            if !responses.is_empty() {
                obj.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = self.request_state {
                obj.insert("requestState".into(), Value::String(state));
            }
        }
        params
    }
}

/// The input rounds of one request. See the module documentation.
#[derive(Clone, Debug)]
pub struct InputRounds {
    method: Method,
    tasks: bool,
    rounds: usize,
}

impl InputRounds {
    /// The rounds of a `method` request; `tasks`: whether the client declared the
    /// tasks extension (a `tools/call` may then become a task).
    pub fn new(method: Method, tasks: bool) -> InputRounds {
        InputRounds {
            method,
            tasks,
            rounds: 0,
        }
    }

    /// How many rounds were answered so far.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The answer to the request (or to its last retry) arrived: what it means.
    pub fn handle_answer(&mut self, payload: &Payload) -> Result<Round, RoundError> {
        let method = self.method;
        let malformed = |detail: String| RoundError::Malformed { detail };
        let result_type = payload
            .result_type()
            .map_err(|e| malformed(e.to_string()))?;
        match result_type.as_deref() {
            None | Some("complete") => Ok(Round::Complete),
            Some("task") if method == Method::CallTool && self.tasks => Ok(Round::Complete),
            Some("task") => Err(malformed(match method {
                Method::CallTool => "the server answered with a task, but this client did not declare the tasks extension".into(),
                _ => format!("the server answered {method} with a task; only tools/call may become one"),
            })),
            Some("input_required") if may_ask_for_input(method) => {
                let input: InputRequest = payload
                    .decode()
                    .map_err(|e| malformed(format!("input_required result: {e}")))?;
                if input.input_requests.is_empty() && input.request_state.is_none() {
                    return Err(malformed(
                        "input_required without inputRequests or requestState".into(),
                    ));
                }
                if self.rounds == MAX_INPUT_ROUNDS {
                    return Err(RoundError::TooManyRounds {
                        rounds: MAX_INPUT_ROUNDS,
                    });
                }
                self.rounds += 1;
                Ok(Round::Input(input))
            }
            Some(other) => Err(malformed(format!("unknown resultType {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(result: Value) -> Payload {
        Payload::from_json(result.to_string())
    }

    fn asked(state: &str) -> Payload {
        payload(
            json!({"resultType": "input_required", "requestState": state,
            "inputRequests": {"q": {"method": "roots/list"}}}),
        )
    }

    #[test]
    fn only_modern_answers_ask_for_input() {
        assert!(applies_to(Era::Modern));
        assert!(!applies_to(Era::Legacy));
    }

    #[test]
    fn a_complete_result_ends_the_rounds_at_once() {
        for result in [
            json!({"content": []}),
            json!({"resultType": "complete", "content": []}),
        ] {
            let mut r = InputRounds::new(Method::CallTool, false);
            assert_eq!(r.handle_answer(&payload(result)), Ok(Round::Complete));
            assert_eq!(r.rounds(), 0);
        }
    }

    #[test]
    fn only_a_tools_call_of_a_client_that_declared_tasks_may_become_a_task() {
        let task = payload(json!({"resultType": "task", "taskId": "t"}));
        assert_eq!(
            InputRounds::new(Method::CallTool, true).handle_answer(&task),
            Ok(Round::Complete)
        );
        for (method, tasks, says) in [
            (
                Method::CallTool,
                false,
                "did not declare the tasks extension",
            ),
            (Method::GetPrompt, true, "only tools/call may become one"),
        ] {
            match InputRounds::new(method, tasks).handle_answer(&task) {
                Err(RoundError::Malformed { detail }) => assert!(detail.contains(says), "{detail}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn input_is_asked_of_three_methods_only_and_must_ask_something() {
        for method in [Method::CallTool, Method::GetPrompt, Method::ReadResource] {
            let mut r = InputRounds::new(method, false);
            assert!(matches!(r.handle_answer(&asked("s")), Ok(Round::Input(_))));
            assert_eq!(r.rounds(), 1);
        }
        assert!(matches!(
            InputRounds::new(Method::ListTools, false).handle_answer(&asked("s")),
            Err(RoundError::Malformed { detail }) if detail.contains("unknown resultType")
        ));
        let empty = payload(json!({"resultType": "input_required"}));
        assert!(matches!(
            InputRounds::new(Method::CallTool, false).handle_answer(&empty),
            Err(RoundError::Malformed { detail }) if detail.contains("without inputRequests")
        ));
        // State alone is a round (the server may only want the retry).
        let state_only = payload(json!({"resultType": "input_required", "requestState": "s"}));
        let Ok(Round::Input(input)) =
            InputRounds::new(Method::CallTool, false).handle_answer(&state_only)
        else {
            panic!("a round")
        };
        assert!(input.questions().is_empty());
        let retry = input.retry(json!({"name": "x"}), JsonObject::new());
        assert_eq!(retry, json!({"name": "x", "requestState": "s"}));
        let bad = payload(json!({"resultType": "input_required", "inputRequests": []}));
        assert!(matches!(
            InputRounds::new(Method::CallTool, false).handle_answer(&bad),
            Err(RoundError::Malformed { .. })
        ));
    }

    #[test]
    fn the_retry_replaces_the_last_rounds_answers_and_echoes_the_state() {
        let mut r = InputRounds::new(Method::GetPrompt, false);
        let Ok(Round::Input(input)) = r.handle_answer(&asked("second")) else {
            panic!("a round")
        };
        let before = json!({"name": "p", "inputResponses": {"old": 1}, "requestState": "first"});
        let mut answers = JsonObject::new();
        answers.insert("q".into(), json!({"roots": []}));
        let retry = input.retry(before, answers);
        assert_eq!(
            retry,
            json!({"name": "p", "inputResponses": {"q": {"roots": []}}, "requestState": "second"})
        );
    }

    #[test]
    fn the_rounds_stop_after_the_bound() {
        let mut r = InputRounds::new(Method::CallTool, false);
        for round in 1..=MAX_INPUT_ROUNDS {
            assert!(matches!(r.handle_answer(&asked("s")), Ok(Round::Input(_))));
            assert_eq!(r.rounds(), round);
        }
        assert_eq!(
            r.handle_answer(&asked("s")),
            Err(RoundError::TooManyRounds {
                rounds: MAX_INPUT_ROUNDS
            })
        );
        // A complete answer is still one, however many rounds it took.
        assert_eq!(
            r.handle_answer(&payload(json!({"content": []}))),
            Ok(Round::Complete)
        );
    }

    #[test]
    fn questions_keep_their_keys_methods_and_params() {
        let requests = json!({
            "a": {"method": "elicitation/create", "params": {"message": "?"}},
            "b": {"params": {}},
            "c": "not an object"
        });
        let got = questions(requests.as_object().unwrap());
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].method, "elicitation/create");
        assert_eq!(got[0].params, json!({"message": "?"}));
        assert_eq!((got[1].method.as_str(), got[1].key.as_str()), ("", "b"));
        assert_eq!(got[2].params, Value::Null);
    }
}
