//! Legacy server requests (elicitation, sampling, roots), answered by the host's
//! handlers: one task per request, so a slow answer (a person typing) never blocks
//! reading.

use std::sync::Arc;

use capable_core::input_kind::InputKind;
use capable_core::RequestId;
use serde_json::Value;
use tokio::sync::mpsc;

use super::Driver;

/// A request from the server that the host handles (legacy era), answered by the
/// host's [`InputHandlers`](crate::input::InputHandlers).
#[derive(Debug)]
pub(crate) struct ServerRequest {
    pub(crate) id: RequestId,
    pub(crate) kind: InputKind,
    pub(crate) method: String,
    pub(crate) params: Value,
}

pub(crate) async fn run_input(
    shared: Arc<Driver>,
    mut requests: mpsc::UnboundedReceiver<Box<ServerRequest>>,
    handlers: crate::input::InputHandlers,
) {
    while let Some(req) = requests.recv().await {
        let shared = shared.clone();
        let handlers = handlers.clone();
        tokio::spawn(async move {
            let answer = handlers.answer(req.kind, &req.method, req.params).await;
            shared.write_with(|st| match &answer {
                Ok(result) => st.conn.respond(&req.id, result, &mut st.out),
                Err(error) => st.conn.respond_error(&req.id, error, &mut st.out),
            });
        });
    }
}
