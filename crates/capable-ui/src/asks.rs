//! What a server asks of the person, answered in the page: a form to fill in
//! (`elicitation/create`, form mode) and a model's answer to give (`sampling/createMessage`).
//!
//! Each request is put on the stream — an `elicit` event with the server's message
//! and its `requestedSchema`, a `sample` event with the messages the server wants
//! answered — and waits; the page shows it (the form a tool's arguments get; the
//! conversation and an answer to edit) and carries the person's answer back
//! (`POST /api/elicit`: accept with the content, decline or cancel;
//! `POST /api/sample`: approve with the answer, or reject). An unanswered request
//! ends after [`PATIENCE`] (a form is cancelled, a sampling request refused), so a
//! server is never left waiting on a closed tab forever.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::input::Handler;
use capable::internal::RpcError;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::bus::Bus;

/// How long a request waits for the person.
pub const PATIENCE: Duration = Duration::from_secs(600);

/// The JSON-RPC error of a sampling request the person rejected (as MCP's examples
/// answer it).
const REJECTED: i64 = -1;

/// What a server asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A form (`elicitation/create`): the `elicit` event.
    Elicit,
    /// A model's answer (`sampling/createMessage`): the `sample` event.
    Sample,
}

impl Kind {
    fn event(self) -> &'static str {
        match self {
            Kind::Elicit => "elicit",
            Kind::Sample => "sample",
        }
    }
}

type Answer = Result<Value, RpcError>;

struct Waiting {
    kind: Kind,
    answer: oneshot::Sender<Answer>,
}

/// The requests waiting for the person.
#[derive(Clone)]
pub struct Asks {
    bus: Bus,
    next: Arc<AtomicU64>,
    waiting: Arc<Mutex<HashMap<u64, Waiting>>>,
}

/// Why an answer was not taken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// No request of that id and kind is waiting (answered already, or timed out).
    #[error("no request {0} of that kind is waiting (answered already, or ended)")]
    NotWaiting(u64),
    /// The action is not one this kind of request takes.
    #[error("{0:?} is not an answer to this request")]
    Action(String),
    /// An approved sampling answer that is no message (`role`, `content`, `model`).
    #[error("the answer is not a sampling result: {0}")]
    Result(&'static str),
}

impl Asks {
    /// None waiting.
    pub fn new(bus: Bus) -> Asks {
        Asks {
            bus,
            next: Arc::new(AtomicU64::new(1)),
            waiting: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The handler of `kind` for server `server`'s sessions.
    pub fn handler(&self, kind: Kind, server: String) -> Handler {
        let this = self.clone();
        Arc::new(move |params: Value| {
            let this = this.clone();
            let server = server.clone();
            Box::pin(async move { this.ask(kind, &server, params).await })
        })
    }

    async fn ask(&self, kind: Kind, server: &str, params: Value) -> Answer {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, Waiting { kind, answer: tx });
        self.bus.publish(
            kind.event(),
            json!({"server": server, "id": id, "state": "pending", "params": params}),
        );
        let answer = match tokio::time::timeout(PATIENCE, rx).await {
            Ok(Ok(answer)) => answer,
            _ => {
                self.lock().remove(&id);
                match kind {
                    Kind::Elicit => Ok(json!({"action": "cancel"})),
                    Kind::Sample => Err(rejected("nobody answered in the page in time")),
                }
            }
        };
        let said = match &answer {
            Ok(v) => v.get("action").cloned().unwrap_or(json!("approve")),
            Err(_) => json!("reject"),
        };
        self.bus.publish(
            kind.event(),
            json!({"server": server, "id": id, "state": "answered", "action": said}),
        );
        answer
    }

    /// The person's answer to form request `id`: accept (with `content`), decline,
    /// cancel.
    pub fn answer_form(
        &self,
        id: u64,
        action: &str,
        content: Option<Value>,
    ) -> Result<(), AnswerError> {
        let answer = match action {
            "accept" => json!({"action": "accept", "content": content.unwrap_or(json!({}))}),
            "decline" | "cancel" => json!({"action": action}),
            other => return Err(AnswerError::Action(other.to_owned())),
        };
        self.give(id, Kind::Elicit, Ok(answer))
    }

    /// The person's answer to sampling request `id`: approve with `result` (a
    /// `CreateMessageResult`: `role`, `content`, `model`), or reject.
    pub fn answer_sample(
        &self,
        id: u64,
        action: &str,
        result: Option<Value>,
    ) -> Result<(), AnswerError> {
        let answer = match action {
            "approve" => Ok(sampling_result(result)?),
            "reject" => Err(rejected("the person rejected the request")),
            other => return Err(AnswerError::Action(other.to_owned())),
        };
        self.give(id, Kind::Sample, answer)
    }

    fn give(&self, id: u64, kind: Kind, answer: Answer) -> Result<(), AnswerError> {
        let waiting = {
            let mut all = self.lock();
            match all.get(&id) {
                Some(w) if w.kind == kind => all.remove(&id),
                _ => None,
            }
        };
        let waiting = waiting.ok_or(AnswerError::NotWaiting(id))?;
        // The request may have timed out just now: then the answer has nowhere to go.
        waiting
            .answer
            .send(answer)
            .map_err(|_| AnswerError::NotWaiting(id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn rejected(why: &str) -> RpcError {
    RpcError {
        code: REJECTED,
        message: format!("sampling request rejected: {why}"),
        data: None,
    }
}

/// `result` if it has the shape of a `CreateMessageResult`: a `role` of `assistant`
/// or `user`, a `content` with a `type`, a `model` name.
fn sampling_result(result: Option<Value>) -> Result<Value, AnswerError> {
    let result = result.ok_or(AnswerError::Result("none was given"))?;
    if !matches!(result["role"].as_str(), Some("assistant" | "user")) {
        return Err(AnswerError::Result("its role is not assistant or user"));
    }
    let content_typed = |c: &Value| c.get("type").is_some_and(Value::is_string);
    let content = &result["content"];
    if !(content_typed(content)
        || content
            .as_array()
            .is_some_and(|a| a.iter().all(content_typed)))
    {
        return Err(AnswerError::Result("its content has no type"));
    }
    if !result["model"].is_string() {
        return Err(AnswerError::Result("it names no model"));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn asked(bus: &Bus, kind: &str) -> u64 {
        loop {
            if let Some(ev) = bus.since(0).into_iter().find(|ev| ev.kind == kind) {
                let v: Value = serde_json::from_str(&ev.data).unwrap();
                return v["id"].as_u64().unwrap();
            }
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn an_answer_from_the_page_reaches_the_waiting_request() {
        let bus = Bus::new(16, 1 << 20, Default::default());
        let asks = Asks::new(bus.clone());
        let handler = asks.handler(Kind::Elicit, "s".into());
        let waiting = tokio::spawn(handler(json!({"message": "ok?"})));
        // The request is on the stream before anyone answers it.
        let id = asked(&bus, "elicit").await;
        assert_eq!(
            asks.answer_form(id, "maybe", None),
            Err(AnswerError::Action("maybe".into()))
        );
        assert_eq!(
            asks.answer_sample(id, "reject", None),
            Err(AnswerError::NotWaiting(id)),
            "a form is not answered as a sampling request"
        );
        asks.answer_form(id, "accept", Some(json!({"ok": true})))
            .unwrap();
        let answer = waiting.await.unwrap().unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": {"ok": true}}));
        assert_eq!(
            asks.answer_form(id, "accept", None),
            Err(AnswerError::NotWaiting(id))
        );
    }

    #[tokio::test]
    async fn a_sampling_request_is_approved_with_a_message_or_rejected() {
        let bus = Bus::new(16, 1 << 20, Default::default());
        let asks = Asks::new(bus.clone());
        let handler = asks.handler(Kind::Sample, "s".into());
        let waiting = tokio::spawn(handler(json!({"messages": [], "maxTokens": 10})));
        let id = asked(&bus, "sample").await;
        assert!(matches!(
            asks.answer_sample(id, "approve", Some(json!({"role": "assistant"}))),
            Err(AnswerError::Result(_))
        ));
        let message = json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "person"});
        asks.answer_sample(id, "approve", Some(message.clone()))
            .unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), message);

        let again = tokio::spawn(asks.handler(Kind::Sample, "s".into())(json!({})));
        let id = loop {
            let ids: Vec<u64> = bus
                .since(0)
                .into_iter()
                .filter(|ev| ev.kind == "sample" && ev.data.contains("pending"))
                .filter_map(|ev| serde_json::from_str::<Value>(&ev.data).ok()?["id"].as_u64())
                .collect();
            if ids.len() == 2 {
                break ids[1];
            }
            tokio::task::yield_now().await;
        };
        asks.answer_sample(id, "reject", None).unwrap();
        let refused = again.await.unwrap().unwrap_err();
        assert_eq!(refused.code, REJECTED);
    }
}
