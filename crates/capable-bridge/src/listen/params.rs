//! A 2026-07-28 host's `tools/call` held to its `Mcp-Param-*` headers (SEP-2243, the
//! rules in [`ParamRules`]): a proxy in front of the bridge may route by them, so the
//! bridge refuses (`400`, `-32020`) a call whose headers and arguments disagree before
//! the server sees it.
//!
//! The bridge learns its tools' `x-mcp-header` annotations from every `tools/list`
//! answer it relays. A call of a tool it has not yet seen listed (a host that kept its
//! list from earlier) makes the bridge list the tools itself first, through the same
//! host's task and declaration, so that no call escapes the check for want of a
//! listing. A tool whose annotations changed since is held to the rules last seen
//! until the next listing; the spec's host lists again on `-32020` and retries.

use std::sync::Mutex;

use axum::body::Bytes;
use axum::http::HeaderMap;
use capable::internal::jsonrpc::{Incoming, RpcError};
use capable::internal::server::ParamRules;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::pool::Commands;
use super::session::{Command, Posted};

/// The most pages of its own `tools/list` the bridge reads to learn the rules.
const MOST_PAGES: usize = 16;

/// The rules learnt so far, shared by every host of the listener (a tool's schema is
/// the server's, the same for all).
#[derive(Default)]
pub struct Params(Mutex<ParamRules>);

impl Params {
    fn rules(&self) -> std::sync::MutexGuard<'_, ParamRules> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Learns from a relayed answer to `tools/list` (one JSON-RPC message).
    pub fn learn(&self, answer: &[u8]) {
        if let Ok(answer) = serde_json::from_slice::<Value>(answer) {
            if let Some(result) = answer.get("result") {
                self.rules().learn(result);
            }
        }
    }

    /// Holds `message`, a 2026-07-28 `tools/call` of the tool `name` POSTed with
    /// `headers`, to its `Mcp-Param-*` headers; lists the tools through `tx` first if
    /// the rules for it are not known.
    pub async fn check(
        &self,
        tx: &Commands,
        name: &str,
        message: &Incoming,
        headers: &HeaderMap,
    ) -> Result<(), RpcError> {
        let Incoming::Request { params, .. } = message else {
            return Ok(());
        };
        // A tool known to have no annotations (most): its params are never read.
        if self.rules().knows_none(name) {
            return Ok(());
        }
        let params: Value = params
            .raw_value()
            .ok()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null);
        if !self.rules().knows(name) {
            self.list(tx, params.pointer("/_meta")).await;
        }
        let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        self.rules().check(name, params.get("arguments"), header)
    }

    /// Lists the tools through the host's task (under the host's own `_meta`
    /// envelope), learning each page.
    async fn list(&self, tx: &Commands, meta: Option<&Value>) {
        let mut cursor: Option<String> = None;
        for _ in 0..MOST_PAGES {
            let mut params = json!({"_meta": meta.cloned().unwrap_or(Value::Null)});
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let request = json!({"jsonrpc": "2.0", "id": "capable-tools", "method": "tools/list",
                "params": params});
            let Ok(message) = Incoming::parse(Bytes::from(request.to_string())) else {
                return;
            };
            let (reply, posted) = oneshot::channel();
            if tx.send(Command::Post { message, reply }).is_err() {
                return;
            }
            let Ok(Posted::Stream { mut events, .. }) = posted.await else {
                return;
            };
            let last = loop {
                match events.events.recv().await {
                    Some(event) if event.ends => break event.data,
                    Some(_) => continue,
                    None => return,
                }
            };
            let Ok(answer) = serde_json::from_slice::<Value>(&last) else {
                return;
            };
            let Some(result) = answer.get("result") else {
                return;
            };
            self.rules().learn(result);
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return,
            }
        }
    }
}
