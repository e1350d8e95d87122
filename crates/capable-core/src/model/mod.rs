//! The MCP message payloads capable sends and reads, as plain serde types.
//!
//! Only what a host uses is typed; everything else a server sends is kept as JSON
//! (`extra`) so that nothing is lost on the way to the user.

mod completion;
mod discover;
mod implementation;
mod initialize;
mod listen;
mod notifications;
mod pagination;
mod prompts;
mod resources;
mod server_input;
mod shared_str;
mod skills;
mod tasks;
mod tools;

pub use completion::*;
pub use discover::*;
pub use implementation::*;
pub use initialize::*;
pub use listen::*;
pub use notifications::*;
pub use pagination::*;
pub use prompts::*;
pub use resources::*;
pub use server_input::*;
pub use shared_str::SharedStr;
pub use skills::*;
pub use tasks::*;
pub use tools::*;

/// A JSON object, for fields capable passes through without interpreting.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// An empty params or result object: `{}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Empty {}
