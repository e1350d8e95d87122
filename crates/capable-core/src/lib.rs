//! # capable-core
//!
//! The sans-IO core of capable, a strict MCP client: everything that decides what
//! goes on the wire and what a received message means, with no I/O, no clock reads and
//! no async runtime. The async crate `capable` moves the bytes; this crate is tested
//! deterministically by feeding it scripted server messages.
//!
//! The life of a connection, in types:
//!
//! 1. [`Negotiating::start`] writes the first message (`server/discover` or
//!    `initialize`). Feed it every server message with [`Negotiating::handle`] until it
//!    returns [`Step::Ready`] or [`Step::Failed`].
//! 2. [`Connection::new`] turns the settled handshake into the ready state. Every
//!    request passes the [gating table](gating) first: a method the server did not
//!    declare is refused locally and nothing is written.
//! 3. [`Connection::handle`] routes each answer to its waiter by id, answers `ping`,
//!    and records [contract violations](Violation).
//!
//! 4. Everything written goes into an [`Outbox`]: each message's bytes, and beside
//!    them a typed record of what it is ([`Outgoing`]), for transports that decide
//!    per message (HTTP) without reading the bytes back.
//!
//! 5. Time is given, never read: every step takes `now`, and the core says when it
//!    wants to be woken ([`Negotiating::poll_timeout`], [`Connection::poll_timeout`])
//!    for the probe timeout, the handshake timeout and each request's deadline.
//!
//! ```
//! use std::time::Instant;
//! use capable_core::{ClientConfig, Connection, Incoming, Method, Negotiating, Outbox, ProtocolChoice, Step, Timing};
//!
//! let config = ClientConfig { protocol: ProtocolChoice::Legacy, ..Default::default() };
//! let now = Instant::now();
//! let mut out = Outbox::new();
//! let negotiating = Negotiating::start(config, now, &mut out);
//! assert!(String::from_utf8_lossy(&out).contains("\"initialize\""));
//! out.clear();
//!
//! let answer = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25",
//!   "capabilities":{"resources":{}},"serverInfo":{"name":"docs","version":"1.0"}}}"#;
//! let Step::Ready(established) = negotiating.handle(Incoming::parse(answer.to_vec()).unwrap(), now, &mut out)
//! else { panic!("not ready") };
//! assert!(String::from_utf8_lossy(&out).contains("notifications/initialized"));
//!
//! let (mut conn, _early) = Connection::<&str>::new(*established);
//! out.clear();
//! // `resources: {}` allows reading…
//! let read = serde_json::json!({"uri": "docs://a"});
//! assert!(conn.request(Method::ReadResource, &read, Timing::new(), "read", now, &mut out).is_ok());
//! // …but not subscribing: refused locally, nothing written.
//! let before = out.len();
//! assert!(conn.request(Method::Subscribe, &read, Timing::new(), "sub", now, &mut out).is_err());
//! assert_eq!(out.len(), before);
//!
//! // The read is due within the default timeout; past it, it fails and is cancelled.
//! let due = conn.poll_timeout().expect("a read is timed");
//! let expired = conn.handle_timeout(due, &mut out);
//! assert_eq!(expired[0].waiter, "read");
//! assert!(String::from_utf8_lossy(&out).contains("notifications/cancelled"));
//! ```

#![deny(missing_docs)]

pub mod auth;
pub mod bridge;
pub mod cache;
pub mod capabilities;
pub mod config;
pub mod connection;
pub mod extensions;
pub mod gating;
pub mod http;
pub mod input_kind;
pub mod input_rounds;
mod json;
pub mod jsonrpc;
pub mod method;
pub mod model;
pub mod negotiation;
pub mod notice;
pub mod notification;
pub mod outbox;
pub mod restart;
pub mod revision;
pub mod secrets;
pub mod server;
pub mod skills;
pub mod stderr;
pub mod task_bridge;
pub mod task_call;
pub mod task_questions;
pub mod task_started;
pub mod task_wait;
pub mod text;
pub mod time;
pub mod version;
pub mod violation;
pub mod watch;

pub use capabilities::{Capability, ClientCapabilities, Declared, Flag, ServerCapabilities};
pub use config::{ClientConfig, GatePolicy, ProtocolChoice, Timeouts};
pub use connection::{
    Answered, Connection, Event, Listened, LogLevel, NotSent, ResponseError, TimedOut, Timeout,
    Timing,
};
pub use extensions::Extension;
pub use gating::{ListenFilter, Refusal, Requirement};
pub use jsonrpc::{Incoming, Params, Payload, RequestId, RpcError};
pub use method::Method;
pub use negotiation::{
    AfterFailure, Established, Negotiated, Negotiating, NegotiationError, RequestFailure, Step,
};
pub use notice::Notice;
pub use notification::{Notification, NotificationMethod};
pub use outbox::{Outbox, Outgoing};
pub use revision::Revision;
pub use time::Now;
pub use version::{Era, ProtocolVersion};
pub use violation::Violation;
