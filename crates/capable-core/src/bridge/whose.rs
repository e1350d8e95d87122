//! Whose a server's question is, as the relay decides it ([`Relay::whose_question`],
//! [`Relay::about`]): the request whose stream it came on when the server's transport
//! says (Streamable HTTP), exactly; else the rules for a question that names none —
//! never a guess among hosts a shared session cannot tell apart, but for the one rule
//! sealed rounds need.

use super::super::commands::Related;
use super::super::exchanges::Asker;
use super::Relay;
use crate::jsonrpc::RequestId;
use crate::server::ServerMethod;

/// Whose a legacy server's question to a 2026-07-28 host is ([`Relay::whose_question`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Whose {
    /// The exchange of this token's: keep it for its round ([`Relay::keep_question`]).
    Exchange(u64),
    /// Nobody's, on purpose: the server is told why, and the audit says so at `level`.
    PutToNone {
        /// The audit's level: `info` or `warning`.
        level: &'static str,
        /// Why.
        why: String,
    },
    /// No request of the host's that may be asked one waits on the server.
    Nobody,
}

impl<H, Q, A> Relay<H, Q, A> {
    /// The host request a legacy host's question of server `from` (`None`: the one
    /// server behind) is about: the one it names (`related`, the request whose stream
    /// it came on), else the oldest that may be asked one there. A legacy session is
    /// one host's.
    pub fn about(&self, from: Option<&str>, related: Option<Related>) -> Option<RequestId> {
        let named = match related {
            Some(Related::Exchange(token)) => self.exchanges.related(from, token),
            _ => None,
        };
        if let Some(token) = named {
            return self.exchanges.progress_to(token).cloned();
        }
        match self.exchanges.asker(from, false, |_| false) {
            Asker::To(token) => self.exchanges.progress_to(token).cloned(),
            _ => None,
        }
    }

    /// A question of the server's for a 2026-07-28 host that is nobody's whatever is in
    /// flight ([`Whose::PutToNone`]), before any request or task could claim it: roots
    /// are a legacy session's, asked as it starts or when they change, never about one
    /// request, and a `shared` session (of hosts the relay cannot tell apart) has no one
    /// host whose roots they are.
    pub fn never_asked(&self, method: ServerMethod, shared: bool) -> Option<Whose> {
        let why = "roots/list asks for a session's roots, and this server's session is \
                   shared by 2026-07-28 hosts the bridge cannot tell apart";
        (shared && method == ServerMethod::ListRoots).then(|| Whose::PutToNone {
            level: "info",
            why: why.to_owned(),
        })
    }

    /// Whose a question of server `from` (`None`: the one server behind) for a
    /// 2026-07-28 host is (after [`never_asked`](Self::never_asked), and after a task
    /// being fetched had its claim): `shared`, the requests may be several hosts' the
    /// relay cannot tell apart; `related`, the request the server said it is about
    /// (it came on that request's stream; the shell's client handed back its tag).
    ///
    /// A question that names its request is that exchange's, exactly, before any other
    /// rule; one that names a request that is no exchange of the host's (the bridge's
    /// own) is nobody's here (a task's, maybe: see the caller).
    ///
    /// With sealed rounds, whose exchanges here may be left to their deadline (the
    /// retry went to another replica), a question while exactly one request waits is
    /// that one's: a legacy server asks about the call it runs, and one whose round is
    /// out waits on its answer. That is the rule for a question that names no request
    /// (stdio, the standalone stream, HTTP+SSE), and for one that names a request whose
    /// round is out: a server that cannot tell which call it asks for (a gateway in
    /// front of a stdio server) may send it on an older call's stream, as the
    /// transport's "should" allows, and that call is blocked on the host's answer.
    pub fn whose_question(
        &self,
        from: Option<&str>,
        shared: bool,
        related: Option<Related>,
    ) -> Whose {
        let holds = |token| self.rounds.holds(token);
        let one_waiting = || match self.exchanges.waiting(from, holds) {
            (1, Some(token)) if shared && self.sealed.is_on() => Some(token),
            _ => None,
        };
        if let Some(related) = related {
            let token = match related {
                Related::Exchange(token) => self.exchanges.related(from, token),
                Related::Other => None,
            };
            return match token {
                Some(token) if holds(token) => Whose::Exchange(one_waiting().unwrap_or(token)),
                Some(token) => Whose::Exchange(token),
                None => Whose::Nobody,
            };
        }
        if let Some(token) = one_waiting() {
            return Whose::Exchange(token);
        }
        match self.exchanges.asker(from, shared, holds) {
            Asker::To(token) => Whose::Exchange(token),
            Asker::Ambiguous(candidates) => Whose::PutToNone {
                level: "warning",
                why: format!(
                    "{candidates} requests in flight could have asked it, of hosts the bridge \
                     cannot tell apart, and the server did not say which: it is put to none \
                     of them"
                ),
            },
            Asker::Nobody => Whose::Nobody,
        }
    }
}
