//! A legacy server's questions to a 2026-07-28 host, which takes no requests: each goes
//! to the host in an `input_required` round, the answer to a request of the host's
//! waiting on the server, and the host's retry brings the answers back and carries the
//! exchange on. The core decides and carries it out (its
//! [`Connection`](capable::internal::bridge::Connection): whose each question is, what
//! is kept, which request is whose retry, what a retry gets, deadlines); this file
//! spends a retry's `requestState` in the store replicas share before the core takes it.
//!
//! | what happens | what the bridge does |
//! |---|---|
//! | the server asks | a question naming a task the bridge fetches is that task's (`task_input.rs`); else it goes to the host's oldest request waiting on that server (of many, the one that asks) that may take one (a call, a prompt, a read); failing that, it is kept for the round the host holds |
//! | questions arrive together | one round carries them all (several keys in `inputRequests`) |
//! | the host retries | each answer goes to its question; the retry gets the next round, the server's answer if it came meanwhile, or waits for it |
//! | the server withdraws a question, or answers while the host holds the round | see the core's rules; ignored answers are audit notices |
//! | the host never comes back | at the round's deadline its questions fail, the exchange is cancelled at the server, and the audit says so |
//! | a retry of a spent round, or of another request's (another method, tool, prompt, URI or arguments) | refused (-32602), never passed to the server |
//! | with a seal key (`Relay::seal_rounds`): a retry of another replica's round | its sealed `requestState` opened by the core (refused as above when it does not open), the request sent to the server again, the questions it asks again answered from the retry (the core's `sealed_rounds`) |

use std::time::Instant;

use capable::internal::server::ClientRequest;
use serde_json::Value;

use super::Relay;

impl Relay {
    /// A 2026-07-28 host's request that is the retry of one of the bridge's rounds
    /// (`None`: taken, refused, or its state being spent in the shared store first),
    /// or a request to pass on: the core's
    /// [`Relay::retry`](capable::internal::bridge::Relay::retry) decides.
    pub(super) fn round_answered(&mut self, request: ClientRequest) -> Option<ClientRequest> {
        let Some((store, remembered)) = self.spend.clone() else {
            return self.take_round(request);
        };
        // Behind a 2026-07-28 server, every requestState is the server's to spend.
        if self.servers.era() == Some(capable::internal::Era::Modern) {
            return self.take_round(request);
        }
        let params: Value = request.params.decode().unwrap_or_default();
        let state = self.core.state();
        let Some(state) = state.spendable_round(request.method, &params, Instant::now()) else {
            return self.take_round(request);
        };
        let spend = store.spend_once(&crate::store::key("spent", &[state]), remembered);
        self.queue
            .push(async move { super::Event::Spent(request, spend.await) });
        None
    }

    /// The shared store's word on a retry's `requestState`: spent already elsewhere,
    /// refused; else (the first, or the store not answering: this relay still spends
    /// it once) taken here.
    pub(super) fn spent(
        &mut self,
        request: ClientRequest,
        spent: Result<bool, crate::store::StoreError>,
    ) {
        match spent {
            Ok(false) => {
                let why = super::invalid_params(
                    "this requestState was spent already (a round is answered once, whichever \
                     replica its retry reaches)",
                    None,
                );
                self.core.respond_error(&request.id, &why);
            }
            Ok(true) => self.take_then_forward(request),
            Err(e) => {
                let notice = format!("{e}: a requestState spent in this replica alone");
                self.audit.host_round("warning", &notice);
                self.take_then_forward(request);
            }
        }
    }

    /// A retry taken, or passed on when it is none of the relay's rounds'.
    fn take_then_forward(&mut self, request: ClientRequest) {
        if let Some(request) = self.take_round(request) {
            self.forward(request);
        }
    }

    /// The core's retry: taken (its answers to their questions' waiters, its next
    /// round or the answer kept: the core's commands), refused, or passed on (`Some`).
    fn take_round(&mut self, request: ClientRequest) -> Option<ClientRequest> {
        let behind = self.servers.era();
        self.core.retry(request, behind, Instant::now())
    }
}
