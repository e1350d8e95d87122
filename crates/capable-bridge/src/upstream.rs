//! The server behind the bridge, reached as the host would reach it: connected when the
//! host first says who it is, so that the bridge declares to the server exactly what
//! the host declared to the bridge — each question the server may ask (elicitation,
//! sampling, roots) is put to the host — proposing the host's version first, under the
//! host's name. A 2025-11-25 host's tasks are declared to a 2026-07-28 server as the
//! tasks extension (the bridge carries them across, `relay/tasks.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use capable::input::{Handler, InputHandlers};
use capable::internal::bridge::connection::Related;
use capable::internal::server::{Hello, ServerMethod};
use capable::internal::task_bridge::{self, TaskBridge};
use capable::internal::Extension;
use capable::internal::RpcError;
use capable::{ClientOptions, ProtocolChoice};
use serde_json::Value;
use tokio::sync::oneshot;

use super::behind::Connect;
use crate::relay::{Event, Inbox};
use crate::Connector;

tokio::task_local! {
    /// The task a legacy host's `tasks/result` waits for, while the bridge waits for it
    /// (`relay/tasks.rs`): the server's questions asked meanwhile are that task's, and
    /// say so (`_meta[RELATED_TASK]`, 2025-11-25).
    pub static FOR_TASK: String;
    /// The server of many that asks (see [`for_server`]).
    static FROM_SERVER: Arc<str>;
}

/// What the server behind does with a question for the host.
pub enum Asked {
    /// It asks.
    Ask(Ask),
    /// Question `token` ([`Ask::token`]) is over at the server: answered, or given up
    /// (the server cancelled it, the session ended).
    Over(u64),
}

/// A question of the server behind for the host, and where its answer goes.
pub struct Ask {
    /// Which question this is, for [`Asked::Over`].
    pub token: u64,
    /// The server of many that asks (`None`: the one server behind).
    pub server: Option<Arc<str>>,
    /// The server's method.
    pub method: ServerMethod,
    /// Its params, as the server sent them.
    pub params: Value,
    /// The host's answer (or why there is none).
    pub reply: oneshot::Sender<Result<Value, RpcError>>,
    /// The request it is about, when the server's transport says
    /// ([`capable::input::related_request`]): a host exchange by the token the relay
    /// tagged it with ([`capable::input::related_tag`]), or one of the bridge's own.
    pub related: Option<Related>,
}

/// The client options for the server behind a host that said `hello`: the bridge's
/// (timeouts, limits, tap, gating policy), with the host's declaration, version and
/// identity in place of the bridge's own.
pub fn options(client: &ClientOptions, hello: &Hello, asks: &Inbox) -> ClientOptions {
    let mut options = client.clone();
    let declared = &hello.capabilities;
    let ask = |method| Some(ask_host(asks.clone(), method));
    options.handlers = InputHandlers {
        elicitation: (declared.elicitation_form || declared.elicitation_url)
            .then(|| ask(ServerMethod::Elicit))
            .flatten(),
        elicitation_url: declared.elicitation_url,
        sampling: declared
            .sampling
            .then(|| ask(ServerMethod::CreateMessage))
            .flatten(),
        roots: None,
        list_roots: declared
            .roots
            .then(|| ask(ServerMethod::ListRoots))
            .flatten(),
    };
    options.extensions = declared.extensions.clone();
    // A 2025-11-25 host has tasks: the bridge carries them out with the extension.
    if hello.version.is_some_and(TaskBridge::declares_upstream) {
        options
            .extensions
            .insert(Extension::Tasks.id().to_owned(), serde_json::json!({}));
    }
    if client.config.protocol == ProtocolChoice::Auto {
        if let Some(version) = hello.version {
            options.config.protocol = ProtocolChoice::Prefer(version);
        }
        options.config.era_hint = Some(hello.era);
    }
    if let Some(info) = &hello.client_info {
        options.config.client_info = info.clone();
    }
    options
}

/// The client options of server `name` of many (`options`, made by [`options`]): each
/// question it asks names it ([`Ask::server`]), so that a 2026-07-28 host gets it in a
/// round of a request waiting on that server.
pub fn for_server(options: &ClientOptions, name: &str) -> ClientOptions {
    let tagged = |handler: &Option<Handler>| handler.as_ref().map(|inner| asked_by(inner, name));
    let mut options = options.clone();
    let handlers = &mut options.handlers;
    handlers.elicitation = tagged(&handlers.elicitation);
    handlers.sampling = tagged(&handlers.sampling);
    handlers.list_roots = tagged(&handlers.list_roots);
    options
}

/// `handler`, its questions as the server `name`'s (the relay puts them to a request
/// waiting on that server).
pub fn asked_by(handler: &Handler, name: &str) -> Handler {
    let (name, inner): (Arc<str>, Handler) = (Arc::from(name), handler.clone());
    Arc::new(move |params| FROM_SERVER.sync_scope(name.clone(), || inner(params)))
}

/// How the server behind is connected again (after a crash): as the first time.
pub fn connector(connect: &Connector, options: ClientOptions) -> Connect {
    let connect = connect.clone();
    Arc::new(move || connect.connect(options.clone()))
}

/// A handler that asks the host `method` (through the relay's inbox) and waits for its
/// answer. However it ends (answered, or dropped when the server cancels its
/// question), it says so.
fn ask_host(asks: Inbox, method: ServerMethod) -> Handler {
    /// Says [`Asked::Over`] when dropped.
    struct Over(Inbox, u64);
    impl Drop for Over {
        fn drop(&mut self) {
            let _ = self.0.send(Event::Asked(Asked::Over(self.1)));
        }
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    Arc::new(move |params| {
        let asks = asks.clone();
        let params = match FOR_TASK.try_with(Clone::clone) {
            Ok(task_id) => task_bridge::with_related_task(params, &task_id),
            Err(_) => params,
        };
        let server = FROM_SERVER.try_with(Clone::clone).ok();
        let related =
            capable::input::related_request().map(|_| match capable::input::related_tag() {
                Some(token) => Related::Exchange(token),
                None => Related::Other,
            });
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let gone = || RpcError {
                code: capable::internal::jsonrpc::codes::INTERNAL_ERROR,
                message: "the host is gone".into(),
                data: None,
            };
            let token = NEXT.fetch_add(1, Ordering::Relaxed);
            let ask = Ask {
                token,
                server,
                method,
                params,
                reply,
                related,
            };
            if !asks.send(Event::Asked(Asked::Ask(ask))) {
                return Err(gone());
            }
            let _over = Over(asks, token);
            answer.await.unwrap_or_else(|_| Err(gone()))
        })
    })
}
