//! The `survey` profile: its `survey` tool asks several questions within one call, as a
//! legacy server may — `elicitation/create` requests all at once (one write), or with
//! `"oneByOne": true` each after the last was answered; `"questions"` says how many (2
//! unless said, at most 5). The call answers once every question is, with each answer
//! in the order asked: `survey answered: 1=yes, 2=no` — `"answerAfterMs"` later, when
//! given (a server that works on after its last question).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capable_core::internal::jsonrpc::{Payload, RequestId, RpcError};
use capable_core::internal::server::ServerMethod;
use serde_json::{json, Value};

use super::{answers, Fixture, Profile};

/// One `survey` call: the questions out (server id, number) and the answers so far.
struct Survey {
    call: RequestId,
    total: usize,
    one_by_one: bool,
    answer_after: Option<Duration>,
    out: Vec<(i64, usize)>,
    answers: Vec<Option<String>>,
}

/// The surveys under way (one fixture per process).
static SURVEYS: Mutex<Vec<Survey>> = Mutex::new(Vec::new());

/// Answers what the `survey` profile adds; `true` when it answered.
pub(super) fn handle(f: &Arc<Fixture>, id: &RequestId, method: &str, params: &Value) -> bool {
    if f.profile != Profile::Survey {
        return false;
    }
    match method {
        "tools/list" => {
            let mut tools = answers::tools();
            tools.push(json!({
                "name": "survey",
                "description": "Asks several questions within one call (elicitation).",
                "inputSchema": {"type": "object", "properties": {
                    "questions": {"type": "integer", "minimum": 1, "maximum": 5},
                    "oneByOne": {"type": "boolean"},
                    "answerAfterMs": {"type": "integer", "minimum": 0}
                }}
            }));
            f.result(id, &json!({"tools": tools}));
            true
        }
        "tools/call" if params.get("name").and_then(Value::as_str) == Some("survey") => {
            let args = params.get("arguments");
            let total = args
                .and_then(|a| a.get("questions"))
                .and_then(Value::as_u64)
                .map_or(2, |n| n.clamp(1, 5) as usize);
            let one_by_one = args
                .and_then(|a| a.get("oneByOne"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let answer_after = args
                .and_then(|a| a.get("answerAfterMs"))
                .and_then(Value::as_u64)
                .map(Duration::from_millis);
            let first = if one_by_one { 1 } else { total };
            let (asked, bytes) = f.engine(|s, out| {
                (1..=first)
                    .map(|n| {
                        s.request(
                            ServerMethod::Elicit,
                            &form(n, total),
                            None,
                            id.clone(),
                            Instant::now(),
                            out,
                        )
                        .map(|q| (q, n))
                        .map_err(|(why, _)| why)
                    })
                    .collect::<Result<Vec<_>, _>>()
            });
            match asked {
                Ok(out) => {
                    lock().push(Survey {
                        call: id.clone(),
                        total,
                        one_by_one,
                        answer_after,
                        out,
                        answers: vec![None; total],
                    });
                    f.write(&bytes);
                }
                Err(_) => f.result(
                    id,
                    &json!({"content": [{"type": "text", "text": "this client cannot be asked for input"}], "isError": true}),
                ),
            }
            true
        }
        _ => false,
    }
}

/// The client's answer to question `question` of the server's: taken when it is a
/// survey's (the next question asked, or the call answered); otherwise given back.
pub(super) fn answered(
    f: &Arc<Fixture>,
    question: i64,
    call: &RequestId,
    outcome: Result<Payload, RpcError>,
) -> Option<Result<Payload, RpcError>> {
    let mut surveys = lock();
    let Some(at) = surveys
        .iter()
        .position(|s| s.out.iter().any(|(q, _)| *q == question))
    else {
        return Some(outcome);
    };
    let survey = &mut surveys[at];
    let n = survey
        .out
        .iter()
        .find(|(q, _)| *q == question)
        .map_or(0, |(_, n)| *n);
    survey.out.retain(|(q, _)| *q != question);
    let answer = match outcome.map(|a| a.decode::<Value>().unwrap_or(Value::Null)) {
        Ok(a) => match a.pointer("/content/answer").and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => a
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned(),
        },
        Err(e) => format!("error ({})", e.message),
    };
    survey.answers[n - 1] = Some(answer);
    if survey.one_by_one && n < survey.total {
        let next = n + 1;
        let (asked, bytes) = f.engine(|s, out| {
            s.request(
                ServerMethod::Elicit,
                &form(next, survey.total),
                None,
                call.clone(),
                Instant::now(),
                out,
            )
        });
        if let Ok(q) = asked {
            survey.out.push((q, next));
            f.write(&bytes);
            return None;
        }
    }
    if !survey.out.is_empty() {
        return None;
    }
    let survey = surveys.remove(at);
    drop(surveys);
    let text: Vec<String> = survey
        .answers
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{}={}", i + 1, a.as_deref().unwrap_or("unasked")))
        .collect();
    let result = json!({"content": [{"type": "text", "text": format!("survey answered: {}", text.join(", "))}]});
    match survey.answer_after {
        Some(after) => {
            let f = f.clone();
            std::thread::spawn(move || {
                std::thread::sleep(after);
                f.result(&survey.call, &result);
            });
        }
        None => f.result(&survey.call, &result),
    }
    None
}

/// Question `n` of `total`: a form with one string.
fn form(n: usize, total: usize) -> Value {
    json!({
        "mode": "form",
        "message": format!("Question {n} of {total}?"),
        "requestedSchema": {
            "type": "object",
            "properties": {"answer": {"type": "string", "title": "Answer"}},
            "required": ["answer"]
        }
    })
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Survey>> {
    SURVEYS.lock().unwrap_or_else(|e| e.into_inner())
}
