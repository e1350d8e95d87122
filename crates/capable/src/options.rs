//! Client options: timeouts and limits.

use std::time::Duration;

use capable_core::ClientConfig;

use crate::transport::stdio::StdioLimits;

/// How a client behaves; every limit has a default.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Identity, declared client capabilities, protocol choice, gate policy.
    pub config: ClientConfig,
    /// Default time a request may take (per request overridable). Default 60 s.
    pub request_timeout: Duration,
    /// The most a request may take when progress keeps extending it. Default 10 min.
    pub max_request_timeout: Duration,
    /// How long the modern probe (`server/discover`) may go unanswered before the
    /// client falls back to `initialize`. Default 3 s.
    pub probe_timeout: Duration,
    /// stdio limits (message size, shutdown grace).
    pub stdio: StdioLimits,
    /// How many server notifications are buffered for the host before new ones are
    /// dropped (memory stays bounded). Default 1024.
    pub notification_capacity: usize,
    /// The most pages a list helper collects. Default 1000.
    pub max_pages: usize,
    /// Handlers for server input (elicitation, sampling, roots). The client declares
    /// exactly the capabilities of the handlers installed here.
    pub handlers: crate::input::InputHandlers,
    /// Sees every message sent and received, when set.
    pub tap: Option<crate::tap::Tap>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            config: ClientConfig::default(),
            request_timeout: Duration::from_secs(60),
            max_request_timeout: Duration::from_secs(600),
            probe_timeout: Duration::from_secs(3),
            stdio: StdioLimits::default(),
            notification_capacity: 1024,
            max_pages: 1000,
            handlers: Default::default(),
            tap: None,
        }
    }
}
