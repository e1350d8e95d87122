//! The handlers, one file per area of the page. Each takes the shared
//! [`AppState`](crate::state::AppState) and a typed [`Command`](crate::extract::Command)
//! body, and answers a [`Reply`](crate::extract::Reply) or an
//! [`ApiError`](crate::error::ApiError); none calls another's.

pub mod apps;
pub mod audit;
pub mod elicit;
pub mod events;
pub mod prompts;
pub mod resources;
pub mod servers;
pub mod skills;
pub mod tasks;
pub mod tools;
