//! Legacy server requests (elicitation, sampling, roots), answered by the host's
//! handlers: one task per request, so a slow answer (a person typing) never blocks
//! reading. A request the server cancels (`notifications/cancelled`) has its task
//! dropped: the handler's future with it, and no answer is sent. The same task tells
//! a legacy server when the host changes its roots (`notifications/roots/list_changed`),
//! for as long as the session reads.

use std::collections::HashMap;
use std::sync::Arc;

use capable_core::internal::input_kind::InputKind;
use capable_core::internal::method::ClientNotificationMethod;
use capable_core::RequestId;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::Driver;

/// What the reader hands the input task, in the order it read it.
#[derive(Debug)]
pub(crate) enum Input {
    /// A request from the server that the host handles (legacy era), answered by the
    /// host's [`InputHandlers`](crate::input::InputHandlers).
    Request(Box<ServerRequest>),
    /// The server cancelled its request by this id.
    Withdrawn(RequestId),
}

/// A request from the server for the host's handlers.
#[derive(Debug)]
pub(crate) struct ServerRequest {
    pub(crate) id: RequestId,
    pub(crate) kind: InputKind,
    pub(crate) method: String,
    pub(crate) params: Value,
    /// The client's request it is about, when the transport knows (the request on
    /// whose stream it came): read by the handler with
    /// [`related_request`](crate::input::related_request).
    pub(crate) related: crate::input::Related,
}

/// Answers the server's requests until the reader ends; with `tell_roots` (a legacy
/// session given changeable roots), each change of the roots is a
/// `notifications/roots/list_changed`.
pub(crate) async fn run_input(
    shared: Arc<Driver>,
    mut inputs: mpsc::UnboundedReceiver<Input>,
    handlers: crate::input::InputHandlers,
    tell_roots: bool,
) {
    let mut running: HashMap<RequestId, AbortHandle> = HashMap::new();
    let mut roots = handlers
        .roots
        .as_ref()
        .filter(|_| tell_roots)
        .map(|r| r.changes());
    loop {
        let changed = async {
            match roots.as_mut() {
                Some(changes) => changes.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        let input = tokio::select! {
            input = inputs.recv() => input,
            still = changed => {
                if !still {
                    roots = None;
                    continue;
                }
                shared.write_with(|st| {
                    if st.closed.is_none() {
                        let method = ClientNotificationMethod::RootsListChanged.as_str();
                        st.out.write_notification::<Value>(method, None);
                    }
                });
                continue;
            }
        };
        let Some(input) = input else { return };
        running.retain(|_, task| !task.is_finished());
        let req = match input {
            Input::Request(req) => req,
            Input::Withdrawn(id) => {
                if let Some(task) = running.remove(&id) {
                    task.abort();
                }
                continue;
            }
        };
        let shared = shared.clone();
        let handlers = handlers.clone();
        let id = req.id.clone();
        let task = tokio::spawn(async move {
            let asked = handlers.answer(req.kind, &req.method, req.params);
            let answer = crate::input::RELATED.scope(req.related, asked).await;
            shared.write_with(|st| match &answer {
                Ok(result) => st.conn.respond(&req.id, result, &mut st.out),
                Err(error) => st.conn.respond_error(&req.id, error, &mut st.out),
            });
        });
        running.insert(id, task.abort_handle());
    }
}
