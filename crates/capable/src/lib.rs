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
mod session;
pub mod tap;
pub mod transport;
pub mod watch;

pub use capable_core as core;
pub use capable_core::cache::CachePolicy;
pub use capable_core::Extension;
pub use capable_core::{
    Capability, ClientCapabilities, ClientConfig, Era, Flag, GatePolicy, ListenFilter, Method,
    Params, ProtocolChoice, ProtocolVersion, Refusal, Revision, ServerCapabilities, Timeouts,
    Violation,
};
pub use connect::{connect, connect_http, connect_stdio};
pub use error::{Error, ErrorKind};
pub use events::{ServerNotification, SessionEvent};
pub use input::{ElicitationPolicy, InputHandlers, Root, Roots};
pub use options::ClientOptions;
pub use output_schema::compile_schema;
pub use read::ResourceRead;
pub use session::{
    ListenEvent, Listener, LoadedSkill, ProgressCallback, RequestOptions, Session, TaskObserver,
    TaskWait, ToolCall, MAX_INPUT_ROUNDS,
};
pub use tap::{Direction, Tap};
pub use transport::http::{HttpConfig, HttpTransport, Reconnect};
pub use transport::stdio::{BurstPauses, ServerCommand, StdioLimits, StdioTransport};
pub use watch::{Watch, WatchEvent, WatchMode, WatchPolicy};
