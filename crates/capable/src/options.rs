//! Client options: what the core needs ([`ClientConfig`]: identity, protocol, gating,
//! timeouts, the era hint) and what the shell needs (limits, handlers, a tap). Each
//! setting lives in one place; nothing a host sets is overwritten.

use std::time::Duration;

use capable_core::{ClientConfig, Era, GatePolicy, ProtocolChoice};

/// How a client behaves; every limit has a default.
///
/// ```
/// use std::time::Duration;
/// use capable::{ClientOptions, Era};
///
/// let options = ClientOptions::default()
///     .with_request_timeout(Duration::from_secs(10))
///     .with_era_hint(Some(Era::Legacy)); // this server spoke legacy last time
/// assert_eq!(options.config.timeouts.request, Duration::from_secs(10));
/// ```
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Identity, protocol choice, gate policy, timeouts, era hint. Its
    /// `capabilities` must be left to the handlers: the client declares exactly what
    /// [`ClientOptions::handlers`] handle, and refuses to connect if `capabilities`
    /// declares something no handler answers.
    pub config: ClientConfig,
    /// The largest message accepted from the server, in bytes, on any transport: a
    /// larger one ends the session with a clear error. Default 64 MiB.
    pub max_message_size: usize,
    /// stdio: how long shutdown waits after closing the server's stdin, and again
    /// after each signal. Default 2 s.
    pub shutdown_grace: Duration,
    /// stdio: whether the reader pauses within a long burst of answers so that the
    /// server works meanwhile ([`BurstPauses`](crate::transport::stdio::BurstPauses));
    /// by default when the server can run while the client does.
    pub burst_pauses: crate::transport::stdio::BurstPauses,
    /// How many server notifications are buffered for the host before new ones are
    /// dropped (memory stays bounded; [`Session::dropped_notifications`] counts
    /// them). Default 1024.
    ///
    /// [`Session::dropped_notifications`]: crate::Session::dropped_notifications
    pub notification_capacity: usize,
    /// The most pages a list helper collects. Default 1000.
    pub max_pages: usize,
    /// The most items a list helper collects. Default 100,000.
    pub max_list_items: usize,
    /// The most bytes of answers a list helper reads, all pages together. Default 256 MiB.
    pub max_list_bytes: usize,
    /// Handlers for server input (elicitation, sampling, roots). The client declares
    /// exactly the capabilities of the handlers installed here.
    pub handlers: crate::input::InputHandlers,
    /// Sees every message sent and received, when set.
    pub tap: Option<crate::tap::Tap>,
    /// Extensions the host handles, declared on every request (modern) or in
    /// `initialize` (legacy). Set them with [`ClientOptions::with_tasks`],
    /// [`ClientOptions::with_ui`] or [`ClientOptions::with_extension`]: each is a
    /// promise that the host handles what the server may then send.
    pub extensions: std::collections::BTreeMap<String, serde_json::Value>,
    /// Tools the host already knows (kept from an earlier `tools/list`): their
    /// `x-mcp-header` annotations give the `Mcp-Param-*` headers of their calls over
    /// HTTP, and their `outputSchema`s check their results, without listing first.
    /// A later `tools/list` in the session replaces them.
    pub known_tools: Vec<capable_core::model::Tool>,
    /// A legacy HTTP session to take up instead of negotiating one
    /// ([`ClientOptions::with_resume`]); [`connect_http`](crate::connect_http) only,
    /// and only once: the session's own options no longer carry it.
    pub resume: Option<crate::Resumption>,
    /// The legacy HTTP session is held by other clients at once — gateway replicas
    /// each continuing it ([`ClientOptions::with_shared_session`]).
    pub shared_session: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            config: ClientConfig::default(),
            max_message_size: 64 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
            burst_pauses: Default::default(),
            notification_capacity: 1024,
            max_pages: 1000,
            max_list_items: 100_000,
            max_list_bytes: 256 << 20,
            handlers: Default::default(),
            tap: None,
            extensions: Default::default(),
            known_tools: Vec::new(),
            resume: None,
            shared_session: false,
        }
    }
}

impl ClientOptions {
    /// Resume `session` rather than negotiate: what another client kept of it
    /// ([`Session::resumption`](crate::Session::resumption)). The declaration made then
    /// must be this one's (a renewal replays `initialize` from these options).
    pub fn with_resume(mut self, session: crate::Resumption) -> Self {
        self.resume = Some(session);
        self
    }

    /// The legacy HTTP session is held by other clients at once (gateway replicas,
    /// each continuing the one session as its host's requests reach it): its
    /// standalone stream opens only while
    /// [`Session::set_standalone_stream`](crate::Session::set_standalone_stream) asks
    /// for it — a server keeps one per session, so the client whose host listens must
    /// be the one holding it — and a `resources/subscribe` another of them made is
    /// the session's (its updates expected here). [`connect_http`](crate::connect_http)
    /// only.
    pub fn with_shared_session(mut self) -> Self {
        self.shared_session = true;
        self
    }

    /// How long a request may go unanswered (default 60 s).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.config.timeouts.request = timeout;
        self
    }

    /// How long the modern probe may go unanswered before falling back (default 3 s).
    pub fn with_probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.timeouts.probe = timeout;
        self
    }

    /// The most a request may take when progress keeps extending it (default 10 min).
    pub fn with_progress_cap(mut self, cap: Duration) -> Self {
        self.config.timeouts.progress_cap = cap;
        self
    }

    /// Which protocol versions to speak.
    pub fn with_protocol(mut self, protocol: ProtocolChoice) -> Self {
        self.config.protocol = protocol;
        self
    }

    /// Strict (the default) or lenient gating.
    pub fn with_gate_policy(mut self, policy: GatePolicy) -> Self {
        self.config.gate_policy = policy;
        self
    }

    /// The era the host remembers this server speaking (see
    /// [`ClientConfig::era_hint`]): it orders the handshake, never forbids the other.
    pub fn with_era_hint(mut self, era: Option<Era>) -> Self {
        self.config.era_hint = era;
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): the
    /// server may then answer any `tools/call` with a task. capable handles that:
    /// [`Session::call_tool`](crate::Session::call_tool) waits for the task's result
    /// (polling `tasks/get` at the server's interval), and
    /// [`Session::start_tool_call`](crate::Session::start_tool_call) hands the task
    /// to the host. Without it no server may create a task for this client.
    /// (2025-11-25 tasks need no declaration: the client asks per request.)
    pub fn with_tasks(self) -> Self {
        self.with_extension(capable_core::Extension::Tasks.id(), serde_json::json!({}))
    }

    /// Declares MCP Apps (`io.modelcontextprotocol/ui`) with the UI formats the host
    /// renders (`text/html;profile=mcp-app`). Only a host that renders them should:
    /// capable itself renders nothing, and always keeps `_meta.ui` of tools and
    /// `ui://` resources as the server sent them.
    pub fn with_ui(self, mime_types: &[&str]) -> Self {
        let settings = serde_json::json!({ "mimeTypes": mime_types });
        self.with_extension(capable_core::Extension::Ui.id(), settings)
    }

    /// Declares any extension, by identifier, with its settings. The host promises to
    /// handle what it brings.
    pub fn with_extension(mut self, id: &str, settings: serde_json::Value) -> Self {
        self.extensions.insert(id.to_owned(), settings);
        self
    }

    /// Tools the host knows already (see [`ClientOptions::known_tools`]).
    pub fn with_known_tools(mut self, tools: Vec<capable_core::model::Tool>) -> Self {
        self.known_tools = tools;
        self
    }

    /// A tap that sees every message.
    pub fn with_tap(mut self, tap: crate::tap::Tap) -> Self {
        self.tap = Some(tap);
        self
    }

    /// The core configuration a connection starts from: the host's, declaring the
    /// installed handlers' capabilities. Fails if the host declared a capability no
    /// handler answers.
    pub(crate) fn core_config(&self) -> Result<ClientConfig, crate::Error> {
        let handled = self.handlers.capabilities();
        let declared = &self.config.capabilities;
        let unhandled = [
            (declared.roots && !handled.roots, "roots"),
            (declared.sampling && !handled.sampling, "sampling"),
            (
                declared.elicitation_form && !handled.elicitation_form,
                "elicitation (form)",
            ),
            (
                declared.elicitation_url && !handled.elicitation_url,
                "elicitation (url)",
            ),
        ];
        let missing: Vec<&str> = unhandled
            .iter()
            .filter(|(m, _)| *m)
            .map(|(_, name)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(crate::Error::InvalidOptions(format!(
                "config.capabilities declares {} but no handler answers it; install the handler in ClientOptions.handlers instead",
                missing.join(", ")
            )));
        }
        let mut config = self.config.clone();
        config.capabilities = handled;
        config.capabilities.extensions = declared.extensions.clone();
        config
            .capabilities
            .extensions
            .extend(self.extensions.clone());
        Ok(config)
    }
}
