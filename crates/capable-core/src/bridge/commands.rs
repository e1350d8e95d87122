//! What goes into a host connection's relay from the server's side ([`Upstream`], a
//! [`Question`] of the server's) and what comes out for the shell to run
//! ([`Command`]): the vocabulary of [`Connection`](super::Connection)'s
//! `handle_upstream` and `poll_upstream`.

use std::sync::Arc;

use serde_json::Value;

use super::exchanges::Exchange;
use crate::jsonrpc::{RequestId, RpcError};
use crate::model::ProgressParams;
use crate::server::{ClientNotice, ClientRequest, Interest, ServerMethod};

/// Something of the server's for the relay ([`Connection::handle_upstream`](super::Connection::handle_upstream)); the
/// token says whose.
#[derive(Debug)]
#[non_exhaustive]
pub enum Upstream<Q, A> {
    /// The server's answer to exchange `token` (or why there is none).
    Answer(A),
    /// Progress of exchange `token`.
    Progress(ProgressParams),
    /// The server asks the host question `token`.
    Asked(Question<Q>),
    /// The server's question `token` is over there (withdrawn, or its handler ended).
    Withdrawn,
    /// The bridge's `tasks/result` under `token` ([`Command::Fetch`]) ended.
    Fetched,
}

/// A question of the server's for the host ([`Upstream::Asked`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Question<Q> {
    /// The server of many that asks (`None`: the one server behind).
    pub server: Option<Arc<str>>,
    /// Its method.
    pub method: ServerMethod,
    /// Its params, as the server sent them.
    pub params: Value,
    /// Where the host's answer goes.
    pub waiter: Q,
    /// The request it is about (it came on that request's stream), when the server's
    /// transport says.
    pub related: Option<Related>,
}

/// The request a server's question says it is about: it came on that request's stream
/// (Streamable HTTP). The shell's client hands back the token the relay gave the
/// request as it sent it (a tag kept with the request: nothing done per request to
/// know it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Related {
    /// A host request's exchange, by its token.
    Exchange(u64),
    /// A request that is no exchange of the host's (the bridge's own: a task polled,
    /// a subscription's stream): nobody's here.
    Other,
}

impl<Q> Question<Q> {
    /// Question `method` (`params`) of server `server`, answered through `waiter`.
    pub fn new(server: Option<Arc<str>>, method: ServerMethod, params: Value, waiter: Q) -> Self {
        Question {
            server,
            method,
            params,
            waiter,
            related: None,
        }
    }

    /// The question, about request `related` (see [`Question::related`]).
    pub fn about(mut self, related: Option<Related>) -> Self {
        self.related = related;
        self
    }
}

/// What the shell must run ([`Connection::poll_upstream`](super::Connection::poll_upstream)), in order.
#[derive(Debug)]
pub enum Command<H, Q, A> {
    /// A host request past the engine: the bridge's own answers first (the era's
    /// [`local`](super::local)), else sent on as an exchange ([`Connection::reserve`](super::Connection::reserve),
    /// [`Connection::open`](super::Connection::open)).
    Request(ClientRequest),
    /// What the host wants to hear of, now: keep it open at the servers.
    Follow(Interest),
    /// The exchange of this handle is over (the host cancelled it, or never came back
    /// to its round): cancel it at the server.
    Cancel(H),
    /// The host's answer to a question of the server's (or why there is none): to its
    /// waiter.
    Reply {
        /// The question's waiter.
        waiter: Q,
        /// The answer.
        answer: Result<Value, RpcError>,
    },
    /// The server's answer to host request `id`: the shell finishes it (tasks carried,
    /// the policy, the audit) and writes it with [`Connection::respond_answer`](super::Connection::respond_answer) or
    /// [`Connection::respond_error`](super::Connection::respond_error).
    Answer {
        /// The host request.
        id: RequestId,
        /// Its exchange, over.
        exchange: Exchange<H>,
        /// The answer.
        answer: A,
    },
    /// Open `tasks/result` for task `task_id` under `token`; its end is
    /// [`Upstream::Fetched`].
    Fetch {
        /// The fetch's token.
        token: u64,
        /// The task.
        task_id: String,
    },
    /// Drop the `tasks/result` under `token` (cancelled at the server).
    Abandon {
        /// The fetch's token.
        token: u64,
    },
    /// What the host did that the engine tolerated or refused, for the audit.
    HostNotice(ClientNotice),
    /// What happened to a round or a question of the server's, for the audit at
    /// `level` (`info` or `warning`).
    RoundNotice {
        /// The audit's level.
        level: &'static str,
        /// What happened.
        notice: String,
    },
}
