//! A 2025-11-25 task's questions, for a 2026-07-28 host: the server asks them on a
//! `tasks/result`, which such a host never calls; the bridge calls it, and the host
//! reads them in `tasks/get` and answers with `tasks/update`. Every decision — when a
//! `tasks/result` is opened and for how long, which question is a task's, what an
//! update answers — is the core's `TaskInput`, inside the core's relay (scripted tests
//! there); this file opens and drops the `tasks/result`s it asks for.
//!
//! | what happens | what the bridge does |
//! |---|---|
//! | the host's `tasks/get` (or the call that made the task) finds it `input_required` | opens `tasks/result` at the server, within `--progress-cap`; the host sees `working` until the questions come |
//! | the server asks, naming the task (`_meta[RELATED_TASK]`) | kept as the task's; failing a name, the task's when nothing else of the host's could take it and one task is being fetched |
//! | the host's `tasks/get` | the task `input_required`, the open questions in `inputRequests` |
//! | the host's `tasks/update` | each answer to its question (a key that names none is ignored, with an audit notice); `{}` |
//! | the bridge's `tasks/result` ends, or outlives its bound (dropped: cancelled at the server) | what is still open fails at the server; the host fetches the outcome with `tasks/get` as before |

use std::time::Instant;

use capable::internal::bridge::connection::Upstream;
use capable::internal::jsonrpc::{Payload, RequestId};
use capable::internal::Method;
use capable::RequestOptions;
use futures_util::future::abortable;
use futures_util::FutureExt;
use serde_json::{json, Value};

use super::{Event, Relay};

impl Relay {
    /// A task as a 2026-07-28 host is to see it (`answer`, from `tasks/get` or the call
    /// that made it), with the questions it asks; one the server reports
    /// `input_required` has its `tasks/result` opened.
    pub(super) fn with_questions(&mut self, answer: Payload) -> Payload {
        self.core.handle_task(answer, Instant::now())
    }

    /// A 2026-07-28 host's `tasks/update` (`id`, `params`): its answers go to the
    /// questions the server asked; answered by the core.
    pub(super) fn update_task(&mut self, id: &RequestId, params: &Payload) {
        self.core.handle_task_update(id, params);
    }

    /// The bridge's `tasks/result` under `token` ended.
    pub(super) fn fetched(&mut self, token: u64) {
        self.fetches.remove(&token);
        self.core
            .handle_upstream(token, Upstream::Fetched, Instant::now());
    }

    /// Opens `tasks/result` for `task_id` at the server under `token` (the core's
    /// [`Command::Fetch`](capable::internal::bridge::connection::Command::Fetch)): the
    /// task's questions come on it. Its end is [`Event::Fetched`]; dropped when the
    /// core abandons it (cancelled at the server; the task goes on).
    pub(super) fn fetch_questions(&mut self, token: u64, task_id: String) {
        let Some(session) = self.servers.one().cloned() else {
            // No one server to ask: over at once.
            return self
                .core
                .handle_upstream(token, Upstream::Fetched, Instant::now());
        };
        let (fetch, handle) = abortable(async move {
            let params = json!({ "taskId": task_id });
            let options = RequestOptions::default();
            // The outcome is the host's to fetch with tasks/get: only the end matters.
            let _ = session
                .request::<_, Value>(Method::TaskResult, &params, options)
                .await;
        });
        self.fetches.insert(token, handle);
        self.queue.push(fetch.map(move |ended| match ended {
            Ok(()) => Event::Fetched(token),
            Err(_aborted) => Event::Nothing,
        }));
    }
}
