//! A server's requests for input (`elicitation/create`, form mode) answered in the
//! page: each is put on the stream as an `elicit` event with the server's message and
//! its `requestedSchema`, the page shows it as a form (the same form a tool's
//! arguments get), and `POST /api/elicit` carries the person's answer back — accept
//! with the content, decline or cancel. An unanswered request is cancelled after
//! [`PATIENCE`], so a server is never left waiting on a closed tab forever.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capable::input::Handler;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::bus::Bus;

/// How long a request waits for the person before it is cancelled.
pub const PATIENCE: Duration = Duration::from_secs(600);

/// The requests waiting for an answer.
#[derive(Clone)]
pub struct Elicitations {
    bus: Bus,
    next: Arc<AtomicU64>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
}

/// Why an answer was not taken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// No request of that id is waiting (answered already, or timed out).
    #[error("no request for input {0} is waiting (answered already, or cancelled)")]
    NotWaiting(u64),
    /// The action is not one of accept, decline, cancel.
    #[error("the action must be accept, decline or cancel, not {0:?}")]
    Action(String),
}

impl Elicitations {
    /// None waiting.
    pub fn new(bus: Bus) -> Elicitations {
        Elicitations {
            bus,
            next: Arc::new(AtomicU64::new(1)),
            waiting: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The handler for server `server`'s sessions.
    pub fn handler(&self, server: String) -> Handler {
        let this = self.clone();
        Arc::new(move |params: Value| {
            let this = this.clone();
            let server = server.clone();
            Box::pin(async move { Ok(this.ask(&server, params).await) })
        })
    }

    async fn ask(&self, server: &str, params: Value) -> Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        self.bus.publish(
            "elicit",
            json!({"server": server, "id": id, "state": "pending", "params": params}),
        );
        let answer = match tokio::time::timeout(PATIENCE, rx).await {
            Ok(Ok(answer)) => answer,
            _ => {
                self.lock().remove(&id);
                json!({"action": "cancel"})
            }
        };
        let action = answer["action"].clone();
        self.bus.publish(
            "elicit",
            json!({"server": server, "id": id, "state": "answered", "action": action}),
        );
        answer
    }

    /// The person's answer to request `id`.
    pub fn answer(&self, id: u64, action: &str, content: Option<Value>) -> Result<(), AnswerError> {
        let answer = match action {
            "accept" => json!({"action": "accept", "content": content.unwrap_or(json!({}))}),
            "decline" | "cancel" => json!({"action": action}),
            other => return Err(AnswerError::Action(other.to_owned())),
        };
        let waiting = self.lock().remove(&id).ok_or(AnswerError::NotWaiting(id))?;
        // The request may have timed out just now: then the answer has nowhere to go.
        waiting
            .send(answer)
            .map_err(|_| AnswerError::NotWaiting(id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Value>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_from_the_page_reaches_the_waiting_request() {
        let bus = Bus::new(16, 1 << 20, Default::default());
        let e = Elicitations::new(bus.clone());
        let handler = e.handler("s".into());
        let asked = tokio::spawn(handler(json!({"message": "ok?"})));
        // The request is on the stream before anyone answers it.
        let id = loop {
            if let Some(ev) = bus.since(0).into_iter().find(|ev| ev.kind == "elicit") {
                let v: Value = serde_json::from_str(&ev.data).unwrap();
                break v["id"].as_u64().unwrap();
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(
            e.answer(id, "maybe", None),
            Err(AnswerError::Action("maybe".into()))
        );
        e.answer(id, "accept", Some(json!({"ok": true}))).unwrap();
        let answer = asked.await.unwrap().unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": {"ok": true}}));
        assert_eq!(
            e.answer(id, "accept", None),
            Err(AnswerError::NotWaiting(id))
        );
    }
}
