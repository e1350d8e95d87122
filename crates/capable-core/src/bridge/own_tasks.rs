//! A host's carried task requests before anything is sent and their answers after,
//! sans-IO: what the bridge answers itself about the tasks it made for a legacy host
//! ([`own_task`]), and what a carried answer becomes for the host ([`carried`]). The tasks
//! themselves are kept in [`Started`]; the requests in between are
//! [`TaskCarry`](super::TaskCarry)'s.
//!
//! | what happens | what the bridge decides |
//! |---|---|
//! | a legacy host's `tasks/get`, `tasks/result` or `tasks/cancel` of a task of the bridge's | answered from [`Started`]; nothing is sent |
//! | … of a task of the bridge's another replica made (its sealed id says it is the bridge's) | [`OwnTask::Elsewhere`]: answered from the store replicas share ([`kept_tasks`](super::kept_tasks)), or unknown without one; nothing is sent |
//! | … of any other task, or with params the bridge cannot read | sent on (the server refuses what is malformed, as it would have) |
//! | a legacy host's task call | sent on; the `ttl` it asked for kept (a negative or absurd one saturates) |
//! | a 2026-07-28 host's `tasks/update` | the relay's to answer (its answers go to the task's questions) |
//! | the answer to a legacy host's task call: a task the server made | kept for the host's `tasks/list` ([`Carried::Recorded`], to be listed by other replicas too) |
//! | … a result the server gave at once | a task of the bridge's, already over: the host gets its `{task}` ([`Carried::Made`], to be kept for other replicas) |
//! | the answer to a 2026-07-28 host's `tasks/get`, or a task its call made | shown with the questions the task asks ([`Carried::WithQuestions`]) |

use std::time::{Instant, SystemTime};

use serde::Deserialize;
use serde_json::Value;

use crate::jsonrpc::{Payload, RpcError};
use crate::task_bridge::Carry;
use crate::task_call;
use crate::task_started::Started;
use crate::time::rfc3339;
use crate::Method;

/// What a carried host request comes to before anything is sent ([`own_task`]).
#[derive(Debug, PartialEq)]
pub enum OwnTask {
    /// About a task of the bridge's: the host is answered with this, nothing sent.
    Answered(Result<Value, RpcError>),
    /// A 2026-07-28 host's `tasks/update`: the relay answers it from the task's
    /// questions.
    Update,
    /// About a task of the bridge's that another replica made: answered from what
    /// the store replicas share keeps of it ([`kept_tasks`](super::kept_tasks)).
    Elsewhere {
        /// The task's id.
        task_id: String,
    },
    /// It goes on; a legacy host's task call asked for this `ttl` (ms).
    Send {
        /// The `ttl` asked for.
        ttl: Option<u64>,
    },
}

/// What a carried answer is for the host ([`carried`]).
#[derive(Debug)]
pub enum Carried {
    /// This.
    Answer(Payload),
    /// The `{task}` of a task the bridge made, already over (a result given at once),
    /// whose id is this.
    Made {
        /// The answer the host gets.
        answer: Payload,
        /// The task's id.
        task_id: String,
    },
    /// The `{task}` of a task the server made for a legacy host, kept for its
    /// `tasks/list` (its id given too, to be listed by other replicas).
    Recorded {
        /// The answer the host gets (as it came: the relay's form follows).
        answer: Payload,
        /// The server's task id.
        task_id: String,
    },
    /// A legacy task a 2026-07-28 host sees: shown with the questions it asks (the
    /// relay's `TaskQuestions`), which may need its `tasks/result` opened.
    WithQuestions(Payload),
}

/// The members of a legacy host's task request the bridge reads itself.
#[derive(Deserialize)]
struct Asked {
    #[serde(rename = "taskId")]
    task_id: Option<String>,
    task: Option<TaskAsked>,
}

#[derive(Deserialize)]
struct TaskAsked {
    ttl: Option<f64>,
}

/// A host request `method` (`params`) carried as `carry`, before anything is sent, at
/// `now`: see [`OwnTask`]. `own`: the task id it names was sealed as one of the
/// bridge's own (any replica's).
pub fn own_task(
    started: &mut Started,
    carry: Carry,
    method: Method,
    params: &Payload,
    now: Instant,
    own: bool,
) -> OwnTask {
    use Carry::*;
    if carry == UpdateForModern {
        return OwnTask::Update;
    }
    let asks_ttl = carry == CallForLegacy { asked: true };
    if !asks_ttl && !matches!(carry, GetForLegacy | ResultForLegacy | CancelForLegacy) {
        return OwnTask::Send { ttl: None };
    }
    // Malformed params are the server's to refuse, as they would have been.
    let Ok(Some(asked)) = params.decode_or_default::<Option<Asked>>() else {
        return OwnTask::Send { ttl: None };
    };
    if asks_ttl {
        // A negative or absurd ttl saturates (`Started` caps it).
        let ttl = asked.task.and_then(|t| t.ttl).map(|t| t as u64);
        return OwnTask::Send { ttl };
    }
    match asked.task_id {
        Some(task_id) if started.owns(&task_id) => {
            OwnTask::Answered(started.answer(method, &task_id, now))
        }
        Some(task_id) if own => OwnTask::Elsewhere { task_id },
        _ => OwnTask::Send { ttl: None },
    }
}

/// The server's `answer` to a host request carried as `carry`, whose task call asked
/// for `ttl`, at `now` (`wall`: the same instant on the wall
/// clock, for a task the bridge makes): see [`Carried`].
pub fn carried(
    started: &mut Started,
    carry: Carry,
    ttl: Option<u64>,
    answer: Payload,
    now: Instant,
    wall: SystemTime,
) -> Carried {
    match carry {
        Carry::CallForLegacy { asked: true } => {}
        Carry::GetForModern => return Carried::WithQuestions(answer),
        Carry::CallForModern { declared: true } => {
            return match task_call::started_task(&answer) {
                Ok(Some(_)) => Carried::WithQuestions(answer),
                _ => Carried::Answer(answer),
            };
        }
        _ => return Carried::Answer(answer),
    }
    match task_call::started_task(&answer) {
        Ok(Some(task)) => {
            started.record(task.task_id.clone());
            return Carried::Recorded {
                answer,
                task_id: task.task_id,
            };
        }
        Ok(None) => {
            let Ok(result) = answer.decode::<Value>() else {
                return Carried::Answer(answer);
            };
            let made = started.settle(result, ttl, now, &rfc3339(wall));
            let task_id = made["task"]["taskId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let answer = Payload::from_json(made.to_string().into_bytes());
            return Carried::Made { answer, task_id };
        }
        // Malformed: the relay's check says so as it answers.
        Err(_) => {}
    }
    Carried::Answer(answer)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::task_started::Listed;

    fn payload(value: Value) -> Payload {
        Payload::from_json(value.to_string().into_bytes())
    }

    fn answer(after: Carried) -> Value {
        match after {
            Carried::Answer(p)
            | Carried::Made { answer: p, .. }
            | Carried::Recorded { answer: p, .. } => p.decode().expect("JSON"),
            Carried::WithQuestions(p) => panic!("not a task with questions: {p:?}"),
        }
    }

    #[test]
    fn a_result_given_at_once_to_a_legacy_task_call_is_a_task_of_the_bridges_answered_by_it() {
        let mut started = Started::new("bridge-ab".into());
        let t0 = Instant::now();
        let call = payload(json!({"name": "x", "task": {"ttl": 60000}}));
        let how = Carry::CallForLegacy { asked: true };
        let OwnTask::Send { ttl } = own_task(&mut started, how, Method::CallTool, &call, t0, false)
        else {
            panic!("a call goes on");
        };
        assert_eq!(ttl, Some(60000));
        let result = payload(json!({"content": [{"type": "text", "text": "hi"}]}));
        let made = answer(carried(
            &mut started,
            how,
            ttl,
            result,
            t0,
            SystemTime::now(),
        ));
        let task_id = made["task"]["taskId"].as_str().expect("a task").to_owned();
        assert!(task_id.starts_with("bridge-ab-"), "{made}");
        assert_eq!(made["task"]["status"], "completed");
        assert_eq!(made["task"]["ttl"], 60000);

        // Its tasks/result is the bridge's: nothing is sent.
        let asked = payload(json!({"taskId": task_id}));
        let later = t0 + Duration::from_secs(59);
        let got = own_task(
            &mut started,
            Carry::ResultForLegacy,
            Method::TaskResult,
            &asked,
            later,
            false,
        );
        let OwnTask::Answered(Ok(result)) = got else {
            panic!("answered by the bridge: {got:?}");
        };
        assert_eq!(result["content"][0]["text"], "hi");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            task_id
        );
        // Past its ttl it is unknown, as a server's expired task is.
        let expired = t0 + Duration::from_secs(61);
        let got = own_task(
            &mut started,
            Carry::GetForLegacy,
            Method::GetTask,
            &asked,
            expired,
            false,
        );
        assert!(matches!(got, OwnTask::Answered(Err(_))), "{got:?}");
    }

    #[test]
    fn a_task_the_server_made_is_kept_for_the_list_and_asked_about_at_the_server() {
        let mut started = Started::new("bridge-ab".into());
        let t0 = Instant::now();
        let how = Carry::CallForLegacy { asked: true };
        let made = payload(json!({"resultType": "task", "taskId": "s1", "status": "working"}));
        let recorded = carried(
            &mut started.clone(),
            how,
            None,
            made.clone(),
            t0,
            SystemTime::now(),
        );
        assert!(
            matches!(&recorded, Carried::Recorded { task_id, .. } if task_id == "s1"),
            "its id given, to be listed for other replicas: {recorded:?}"
        );
        let same = answer(carried(
            &mut started,
            how,
            None,
            made,
            t0,
            SystemTime::now(),
        ));
        assert_eq!(
            same["taskId"], "s1",
            "passed as it came (the relay's form follows)"
        );
        assert_eq!(started.listing(t0), [Listed::AtServer("s1".into())]);
        let asked = payload(json!({"taskId": "s1"}));
        let got = own_task(
            &mut started,
            Carry::GetForLegacy,
            Method::GetTask,
            &asked,
            t0,
            false,
        );
        assert_eq!(
            got,
            OwnTask::Send { ttl: None },
            "the server's task: asked there"
        );
    }

    #[test]
    fn what_is_not_the_bridges_goes_on_and_a_modern_hosts_tasks_are_shown_with_questions() {
        let mut started = Started::new("bridge-ab".into());
        let t0 = Instant::now();
        let unreadable = payload(json!({"taskId": 7}));
        let got = own_task(
            &mut started,
            Carry::GetForLegacy,
            Method::GetTask,
            &unreadable,
            t0,
            false,
        );
        assert_eq!(got, OwnTask::Send { ttl: None }, "the server refuses it");
        let update = payload(json!({"taskId": "t", "inputResponses": {}}));
        let got = own_task(
            &mut started,
            Carry::UpdateForModern,
            Method::UpdateTask,
            &update,
            t0,
            false,
        );
        assert_eq!(got, OwnTask::Update);

        let task = payload(json!({"resultType": "task", "taskId": "t", "status": "working"}));
        let declared = Carry::CallForModern { declared: true };
        let wall = SystemTime::now();
        let shown = carried(&mut started, declared, None, task.clone(), t0, wall);
        assert!(matches!(shown, Carried::WithQuestions(_)));
        let plain = payload(json!({"content": []}));
        let shown = carried(&mut started, declared, None, plain, t0, wall);
        assert!(
            matches!(shown, Carried::Answer(_)),
            "a plain result asks nothing"
        );
        let get = Carry::GetForModern;
        assert!(matches!(
            carried(&mut started, get, None, task, t0, wall),
            Carried::WithQuestions(_)
        ));
        assert!(
            started.listing(t0).is_empty(),
            "a 2026-07-28 host's tasks are not listed"
        );
    }
}
