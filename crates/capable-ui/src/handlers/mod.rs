//! The handlers, one file per area of the page. Each takes the shared
//! [`AppState`](crate::state::AppState) and a typed [`Command`](crate::extract::Command)
//! body, and answers a [`Reply`](crate::extract::Reply) or an
//! [`ApiError`](crate::error::ApiError); none calls another's.

pub mod apps;
pub mod asks;
pub mod audit;
pub mod events;
pub mod logging;
pub mod login;
pub mod prompts;
pub mod report;
pub mod resources;
pub mod roots;
pub mod servers;
pub mod skills;
pub mod tasks;
pub mod tools;
