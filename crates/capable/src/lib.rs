//! # capable
//!
//! A strict, fast MCP client on tokio. It reads a server's capabilities exactly, calls
//! only what was negotiated (an undeclared method is refused locally and nothing is
//! sent), records a server that breaks its own declarations, and speaks both protocol
//! eras.
//!
//! ```no_run
//! # async fn demo() -> Result<(), capable::Error> {
//! use capable::{connect_stdio, ClientOptions, ServerCommand};
//!
//! let server = ServerCommand::new("node", ["server.js"]);
//! let session = connect_stdio(&server, ClientOptions::default()).await?;
//! println!("{} speaks {}", session.server_info(), session.protocol_version());
//! if session.check(capable::Method::ReadResource).is_ok() {
//!     let read = session.read_resource("docs://manual/current").await?;
//!     println!("{} (revision {}, read {})", read.text(), read.revision(), read.read_at_rfc3339());
//! }
//! session.close().await;
//! # Ok(()) }
//! ```
//!
//! The protocol logic lives in the sans-IO crate [`capable_core`]; this crate moves
//! bytes and keeps time. With the `audit` feature (on by default), [`audit`] checks a
//! server's every declared capability against what it does.
//!
//! The core's types this API names are re-exported here: the protocol's vocabulary at
//! the root ([`Method`], [`ProtocolVersion`], [`ServerCapabilities`], [`Notice`], …), the
//! MCP payloads in [`model`], and the rest in the module whose API names them
//! ([`auth::Token`], [`host::RestartPolicy`], [`transport::Outbox`]). A host needs no
//! other path into the core; the hidden `internal` module is the workspace's own door
//! and not part of the stable API.
//!
//! ```compile_fail
//! // The core is no longer re-exported whole…
//! use capable::core::server::ServerConnection; // a private path
//! ```
//!
//! ```
//! // …what this crate's API names is here.
//! use capable::auth::Token;
//! use capable::host::RestartPolicy;
//! use capable::model::{CallToolResult, Tool};
//! use capable::{Method, Notice, RpcError};
//! ```

#![deny(missing_docs)]

// `capable::…` paths work inside the crate too, so code reads the same on both sides of
// the API (the config module is shared with the CLI).
extern crate self as capable;

/// The README's examples, compiled as doctests: the first code a host author copies
/// must build.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[cfg(feature = "audit")]
pub mod audit;
pub mod auth;
pub mod config;
mod connect;
mod driver;
pub mod error;
pub mod events;
pub mod file;
pub mod host;
pub mod input;
pub mod options;
mod output_schema;
pub mod read;
mod resume;
mod session;
pub mod tap;
pub mod transport;
pub mod watch;

pub use capable_core::model;
pub use capable_core::{
    CachePolicy, Capability, ClientCapabilities, ClientConfig, Era, Extension, Flag, GatePolicy,
    InputKind, ListenFilter, Method, Negotiated, NegotiationError, Notice, Notification, Params,
    Payload, ProtocolChoice, ProtocolVersion, Refusal, RequestId, Revision, RpcError,
    ServerCapabilities, Timeouts, Violation,
};
pub use connect::{connect, connect_http, connect_stdio};
pub use error::{Error, ErrorKind};
pub use events::{ServerNotification, SessionEvent};
pub use input::{ElicitationPolicy, InputHandlers, Root, Roots};
pub use options::ClientOptions;
pub use output_schema::compile_schema;
pub use read::ResourceRead;
pub use resume::{Resumption, MAX_SESSION_ID};
pub use session::{
    ListenEvent, Listener, LoadedSkill, ProgressCallback, RequestOptions, Session, TaskObserver,
    TaskWait, ToolCall, MAX_INPUT_ROUNDS,
};
pub use tap::{Direction, Tap};
pub use transport::http::{HttpConfig, HttpTransport, Reconnect};
pub use transport::stdio::{BurstPauses, ServerCommand, StdioLimits, StdioTransport};
pub use watch::{Watch, WatchEvent, WatchMode, WatchPolicy};

/// The workspace's own door to the core: **not part of the stable API; may change in
/// any release.**
///
/// capable's sister crates (the bridge, the inspector, the CLI, benchmarks, interop
/// tests) reach the core through here: its root items and its internal modules, by the
/// path they have inside the core (`capable::internal::server::Engine` is
/// `capable_core::internal::server::Engine`). A host author uses the items at this
/// crate's root, [`model`] and the public modules instead.
#[doc(hidden)]
pub mod internal {
    pub use capable_core::internal::*;
    pub use capable_core::*;
}
