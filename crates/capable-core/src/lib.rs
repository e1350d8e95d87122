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
//!    request passes the gating table first: a method the server did not declare is
//!    refused locally ([`Refusal`]) and nothing is written.
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
//!
//! ## What is stable
//!
//! The items at this crate's root and the payload types in [`model`]: the sans-IO
//! client above and the types its API names. The core's modules are private, so its
//! layout can change without a breaking release; the hidden `internal` module opens them
//! to capable's own crates and is not part of the stable API.
//!
//! ```compile_fail
//! // A module of the core is not a path a host can name…
//! use capable_core::connection::Connection; // a private path
//! ```
//!
//! ```
//! // …the root is.
//! use capable_core::{Connection, Method, ResponseCache};
//! use capable_core::model::Tool;
//! ```

#![deny(missing_docs)]

mod auth;
mod bridge;
mod cache;
mod capabilities;
mod config;
mod connection;
mod extensions;
mod gating;
mod http;
mod input_kind;
mod input_rounds;
mod json;
mod jsonrpc;
mod method;
pub mod model;
mod negotiation;
mod notice;
mod notification;
mod outbox;
mod pins;
mod restart;
mod revision;
mod seal;
mod secrets;
mod server;
mod skills;
mod stderr;
mod task_bridge;
mod task_call;
mod task_questions;
mod task_started;
mod task_wait;
mod text;
mod time;
mod version;
mod violation;
mod watch;

pub use cache::{CacheHint, CacheKey, CachePolicy, CacheScope, Cached, ResponseCache};
pub use capabilities::{Capability, ClientCapabilities, Declared, Flag, ServerCapabilities};
pub use config::{ClientConfig, GatePolicy, ProtocolChoice, Timeouts};
pub use connection::{
    Answered, Connection, Event, Listened, LogLevel, NotSent, ResponseError, TimedOut, Timeout,
    Timing,
};
pub use extensions::{Extension, LegacyTasks, TaskFeature};
pub use gating::{ListenFilter, Refusal, Requirement};
pub use input_kind::InputKind;
pub use jsonrpc::{FramingError, Incoming, Params, Payload, RequestId, RpcError};
pub use method::{Method, MethodProps, TaskRole};
pub use negotiation::{
    AfterFailure, Established, Negotiated, Negotiating, NegotiationError, RequestFailure, Step,
};
pub use notice::Notice;
pub use notification::{LogMessage, Notification, NotificationMethod};
pub use outbox::{Outbox, Outgoing, OutgoingRequest, Target as RequestTarget};
pub use pins::{
    Judged, Pin, PinChange, PinKind, PinPolicy, Pins, PinsError, ServerPins, PINS_VERSION,
};
pub use revision::Revision;
pub use server::ServerMethod;
pub use time::Now;
pub use version::{Era, ProtocolVersion, UnknownVersion};
pub use violation::Violation;

/// The workspace's own door to the core's modules: **not part of the stable API; may
/// change in any release.**
///
/// capable's sister crates (the async client, the bridge, the inspector, the CLI, the
/// fixture server, benchmarks, fuzz targets and tests) reach the core's parts through
/// here, one module each, by the path the module has inside the core
/// (`capable_core::internal::server::Engine` is `crate::server::Engine`). A host author
/// uses the items at the crate root and [`model`] instead; what is here moves whenever
/// the core's layout does.
#[doc(hidden)]
#[allow(missing_docs)]
pub mod internal {
    pub mod auth {
        pub use crate::auth::*;
    }
    pub mod bridge {
        pub use crate::bridge::*;
    }
    pub mod cache {
        pub use crate::cache::*;
    }
    pub mod capabilities {
        pub use crate::capabilities::*;
    }
    pub mod config {
        pub use crate::config::*;
    }
    pub mod connection {
        pub use crate::connection::*;
    }
    pub mod extensions {
        pub use crate::extensions::*;
    }
    pub mod gating {
        pub use crate::gating::*;
    }
    pub mod http {
        pub use crate::http::*;
    }
    pub mod input_kind {
        pub use crate::input_kind::*;
    }
    pub mod input_rounds {
        pub use crate::input_rounds::*;
    }
    pub mod jsonrpc {
        pub use crate::jsonrpc::*;
    }
    pub mod method {
        pub use crate::method::*;
    }
    pub mod negotiation {
        pub use crate::negotiation::*;
    }
    pub mod notice {
        pub use crate::notice::*;
    }
    pub mod notification {
        pub use crate::notification::*;
    }
    pub mod outbox {
        pub use crate::outbox::*;
    }
    pub mod pins {
        pub use crate::pins::*;
    }
    pub mod restart {
        pub use crate::restart::*;
    }
    pub mod revision {
        pub use crate::revision::*;
    }
    pub mod seal {
        pub use crate::seal::*;
    }
    pub mod secrets {
        pub use crate::secrets::*;
    }
    pub mod server {
        pub use crate::server::*;
    }
    pub mod skills {
        pub use crate::skills::*;
    }
    pub mod stderr {
        pub use crate::stderr::*;
    }
    pub mod task_bridge {
        pub use crate::task_bridge::*;
    }
    pub mod task_call {
        pub use crate::task_call::*;
    }
    pub mod task_questions {
        pub use crate::task_questions::*;
    }
    pub mod task_started {
        pub use crate::task_started::*;
    }
    pub mod task_wait {
        pub use crate::task_wait::*;
    }
    pub mod text {
        pub use crate::text::*;
    }
    pub mod time {
        pub use crate::time::*;
    }
    pub mod version {
        pub use crate::version::*;
    }
    pub mod violation {
        pub use crate::violation::*;
    }
    pub mod watch {
        pub use crate::watch::*;
    }
}
