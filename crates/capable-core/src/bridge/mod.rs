//! The bridge's relay, sans-IO: what a bridge between hosts and servers decides, with
//! no I/O — which host request each exchange at a server belongs to, who may cancel
//! it, where its progress and its answer go, and which request a server's question
//! belongs to. The bridge's shell (`capable-bridge`) runs the exchanges; every decision
//! about them is made here and tested with scripted events.
//!
//! One host connection's relay is one object, [`Connection`], driven as quinn-proto
//! drives a QUIC connection: the host's messages, the server's answers, progress and
//! questions, and the clock in; the host's bytes, the commands the shell runs and the
//! next deadline out. It owns the engine that faces the host (the core's
//! `server::ServerConnection`) and the host's output; the shell owns the sessions' I/O,
//! the policy, the audit and the traces, runs the commands and feeds the events.
//!
//! Not here yet: how a host request is sent on (the policy, a task carried, the
//! session it goes to) is the shell's, on [`connection::Command::Request`]; many
//! servers' subscriptions ([`Subscriptions`]) and the one server's listen stream
//! ([`Follow`]) are machines of their own the shell drives beside it; how tasks cross
//! the eras is decided in the core's `task_bridge`, `task_questions` and
//! `task_started`.
//!
//! | file | concern |
//! |---|---|
//! | `connection.rs` | [`Connection`]: one host connection's relay, events in and commands out — `handle_host` / `poll_host` (the host's engine and output, owned), `handle_upstream` / `poll_upstream` (the server's answers, progress and questions in; what the shell runs out), `handle_timeout` / `poll_timeout` (the engine's questions, the rounds, the tasks' fetches), with scripted tests (`connection_tests.rs`: two hosts through one shared relay among them) |
//! | `commands.rs` | what goes in ([`Upstream`](connection::Upstream), a [`Question`](connection::Question) of the server's) and comes out ([`Command`](connection::Command)) of a [`Connection`] |
//! | `era.rs` | across the eras: what the bridge answers itself ([`local`]), in which form a result goes back |
//! | `follow.rs` | [`Follow`] (its [`FollowStep`]s and [`Outcome`](follow::Outcome)s in [`follow`]): what the one server behind keeps open for what its host wants to hear of, in the server's era — the listen stream by token (one that fails or ends opened again at the next change), subscribes that fail, a restart |
//! | `forwarding.rs` | what goes to a server with a host's request: its params kept for a round's retry, `input_required` passed, the log level told ([`forwarding`], [`tell_log_level`]) |
//! | `exchanges.rs` | [`Exchanges`]: the host requests at the server, by the bridge's token; ownership of cancels, progress, answers and questions |
//! | `subscribing.rs` | [`Subscribing`]: many servers, a legacy host's subscribe requests waiting for the server that owns each URI, and what each is answered |
//! | `subscriptions.rs` | [`Subscriptions`] (its [`Command`](subscriptions::Command)s, [`Outcome`](subscriptions::Outcome)s and [`Routes`](subscriptions::Routes) in [`subscriptions`]): many servers' resource subscriptions for one host — what each server is asked, in its era, the checks before, the host's requests answered by their own server's outcome, the acknowledgement's bound, which updates are the host's |
//! | `own_tasks.rs` | a host's carried task requests before anything is sent (the tasks the bridge made for a legacy host answered by it, [`own_task`]) and their answers after (a result given at once made a task of the bridge's, [`carried`]) |
//! | `task_carry.rs` | [`TaskCarry`]: one host request carried across the eras' tasks — the requests it takes at the server, in order ([`Command`]), their outcomes ([`Upstream`]), the host's answer, a legacy host's `tasks/result` bounded |
//! | `task_ids.rs` | [`TaskIds`]: with a seal key, the task ids handed to hosts sealed (server, the server's id, the caller, an expiry) and those hosts send opened — which members of which messages name a task, one task one id, a refusal answered as an unknown task |
//! | `task_input.rs` | [`TaskInput`] (its [`Command`](task_input::Command)s and [`Outcome`](task_input::Outcome)s in [`task_input`]): a legacy task's questions for a 2026-07-28 host — the `tasks/result` the bridge opens to bring them and its bound, which of the server's questions are a task's, what the host's `tasks/update` answers |
//! | `sealed_rounds.rs` | rounds that move between replicas: a round's `requestState` sealed ([`Sealing`]), and the retry of another replica's round carried on — the request sent again, the questions the server asks again answered from the retry |
//! | `relay.rs` | [`Relay`]: the relay's state inside a [`Connection`] (exchanges, a legacy server's rounds for a 2026-07-28 host and the retries that answer them, the questions put to a legacy host, the log level followed) and its decisions, with scripted tests (`relay_tests.rs`) |

mod commands;
pub mod connection;
mod era;
mod exchanges;
pub mod follow;
mod forwarding;
pub mod kept_tasks;
mod own_tasks;
mod relay;
mod sealed_rounds;
#[cfg(test)]
mod sealed_rounds_tests;
mod subscribing;
pub mod subscriptions;
mod task_carry;
pub mod task_ids;
pub mod task_input;

pub use connection::Connection;
pub use era::{answer_form, local, Local};
pub use exchanges::{Asker, Exchange, Exchanges};
pub use follow::{Follow, FollowStep};
pub use forwarding::{forwarding, tell_log_level, Forwarding, Tell};
pub use own_tasks::{carried, own_task, Carried, OwnTask};
pub use relay::{Answered, Cancelled, Lapse, Relay, Retried, Taken, Then, Whose, Withdrawn};
pub use sealed_rounds::{question_digest, request_digest, Sealing};
pub use subscribing::{refusal, Outcome, Subscribing};
pub use subscriptions::Subscriptions;
pub use task_carry::{Command, Failure, Known, TaskCarry, Upstream};
pub use task_ids::TaskIds;
pub use task_input::TaskInput;
