//! What the relay forwards to: the one server behind (kept up by its restarts), or a
//! config's servers as one (`many.rs`).

use std::sync::Arc;

use capable::internal::jsonrpc::Payload;
use capable::internal::model::Implementation;
use capable::internal::server::ServerConfig;
use capable::internal::task_bridge::TaskBridge;
use capable::internal::{Era, Method, ProtocolVersion};
use capable::{Error, RequestOptions, Session};
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::Value;

use crate::behind::Behind;
use crate::forward::Forwarded;
use crate::many::Many;
use capable::internal::jsonrpc::WithMeta;

/// The server, or servers, behind the bridge.
pub enum Servers {
    /// One server.
    One(Behind),
    /// Many servers, as one.
    Many(Box<Many>),
}

impl Servers {
    /// How tasks cross between a host of version `host` and the one server behind
    /// (many servers: they pass as they are).
    pub fn task_bridge(&self, host: Option<ProtocolVersion>) -> TaskBridge {
        match (self, host) {
            (Servers::One(one), Some(host)) => {
                let negotiated = one.session().negotiated();
                TaskBridge::new(host, negotiated.version, &negotiated.capabilities)
            }
            _ => TaskBridge::Direct,
        }
    }

    /// What the host is offered: the one server's declaration (with the tasks `tasks`
    /// carries across, in the host's era's terms), name and instructions; or what the
    /// servers can do together.
    pub fn declaration(&self, tasks: TaskBridge) -> ServerConfig {
        match self {
            Servers::One(one) => {
                let negotiated = one.session().negotiated();
                let mut config = ServerConfig::new(negotiated.server_info.clone(), Value::Null);
                config.capabilities = tasks.declaration(&negotiated.capabilities);
                config.instructions = negotiated.instructions.clone();
                config
            }
            Servers::Many(many) => {
                let (capabilities, instructions) = many.declaration();
                let info = Implementation::new("capable-bridge", env!("CARGO_PKG_VERSION"));
                let mut config = ServerConfig::new(info, Value::Null);
                config.capabilities = capabilities;
                config.instructions = instructions;
                config
            }
        }
    }

    /// One host request on its way to the server: its answer, whether it comes in
    /// legacy form (what a 2026-07-28 host gets is added then), and which of many
    /// servers it went to.
    pub fn exchange(
        &self,
        method: Method,
        params: Forwarded,
        options: RequestOptions,
    ) -> (
        BoxFuture<'static, Result<Payload, Error>>,
        bool,
        Option<String>,
    ) {
        match self {
            Servers::One(one) => {
                let session = one.session().clone();
                let legacy = session.era() == Era::Legacy;
                let answer = async move {
                    match &params {
                        // The bridge's `_meta` put first as the line is written.
                        Forwarded::Traced { params, meta } => {
                            let params = WithMeta::unmerged(meta.as_slice(), params);
                            session.request_payload(method, &params, options).await
                        }
                        // Checked once: written as they are.
                        Forwarded::Plain(params) => {
                            session.request_payload(method, params, options).await
                        }
                        params => session.request_payload(method, params, options).await,
                    }
                }
                .boxed();
                (answer, legacy, None)
            }
            Servers::Many(many) => {
                let (answer, server) = many.exchange(method, params.into_map(), options);
                (answer, true, server)
            }
        }
    }

    /// The era of the one server behind (`None` for many).
    pub fn era(&self) -> Option<Era> {
        match self {
            Servers::One(one) => Some(one.session().era()),
            Servers::Many(_) => None,
        }
    }

    /// The one server's session (`None` for many).
    pub fn one(&self) -> Option<&Arc<Session>> {
        match self {
            Servers::One(one) => Some(one.session()),
            Servers::Many(_) => None,
        }
    }

    /// Every session behind that is up.
    pub fn sessions(&self) -> Vec<Arc<Session>> {
        match self {
            Servers::One(one) => vec![one.session().clone()],
            Servers::Many(many) => many.sessions(),
        }
    }

    /// The one server's name, shared (what a span keeps of it); `None` for many.
    pub fn one_name(&self) -> Option<&Arc<str>> {
        match self {
            Servers::One(one) => Some(one.shared_name()),
            Servers::Many(_) => None,
        }
    }

    /// The name in the audit of what is behind.
    pub fn name(&self) -> &str {
        match self {
            Servers::One(one) => one.name(),
            Servers::Many(_) => "bridge",
        }
    }

    /// The name the server knows a tool by: `tool` as the host named it, less what
    /// merging many servers' lists added (one server's tools keep their names).
    pub fn own_tool_name(&self, tool: String) -> String {
        match self {
            Servers::One(_) => tool,
            Servers::Many(many) => many.own_tool_name(&tool).unwrap_or(tool),
        }
    }

    /// Follows what the servers tell (notifications, events, restarts) on `queue`.
    pub fn follow(&mut self, queue: &mut super::Queue) {
        match self {
            Servers::One(one) => one.follow(queue),
            Servers::Many(many) => many.follow(queue),
        }
    }

    /// Shuts what is behind down, in order.
    pub async fn close(self) {
        match self {
            Servers::One(one) => {
                if let Ok(session) = Arc::try_unwrap(one.into_session()) {
                    session.close().await;
                }
            }
            Servers::Many(many) => many.shutdown().await,
        }
    }
}
