//! Server input: elicitation, sampling and roots, answered by one set of host handlers
//! in both eras.
//!
//! - Legacy: the server sends a JSON-RPC request (`elicitation/create`, …); the
//!   client answers it with the handler's result.
//! - Modern: a result with `resultType: "input_required"` carries `inputRequests`;
//!   the client calls the same handlers and retries the original request with
//!   `inputResponses`, the server's `requestState` echoed exactly, and a new id.
//!
//! A client capability is declared only when its handler is installed: a host that
//! installs no elicitation handler never declares `elicitation`, and a server that asks
//! anyway gets method-not-found (legacy) or an error (modern).
//!
//! Roots may change while connected ([`Roots::set`]): a legacy session tells its
//! server with `notifications/roots/list_changed` (and declares `roots.listChanged`);
//! a modern server asks for them with each request that needs them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use capable_core::internal::input_kind::InputKind;
use capable_core::{ClientCapabilities, RequestId, RpcError};
use serde_json::{json, Map, Value};

tokio::task_local! {
    /// The client's request the server's question being answered is about (see
    /// [`related_request`], [`related_tag`]).
    pub(crate) static RELATED: Related;
}

/// The client's request a server's question is about, as its handler reads it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Related {
    /// The id it was sent under, when the transport said.
    pub(crate) id: Option<RequestId>,
    /// Its [`RequestOptions::tag`](crate::RequestOptions::tag), when it had one and is
    /// still in flight.
    pub(crate) tag: Option<u64>,
}

/// The client's request that the server's question being answered is about — the one
/// on whose stream it came (Streamable HTTP, 2025-03-26 and later, sends a question
/// that belongs to a request on that request's POST stream) — by the id the client
/// sent it with. Read by a [`Handler`] while it is called or awaited; `None` outside a
/// handler, and where the transport cannot say (stdio, the standalone GET stream, the
/// HTTP+SSE transport, a modern round's input requests, which are the request's own).
///
/// ```
/// use std::sync::Arc;
/// use capable::input::{related_request, Handler};
/// use serde_json::json;
///
/// let elicit: Handler = Arc::new(|_params| {
///     // Which request of ours this question is about, when the server's stream said.
///     let about = related_request();
///     Box::pin(async move { Ok(json!({"action": "decline", "about": about.is_some()})) })
/// });
/// assert_eq!(related_request(), None, "outside a handler");
/// # let _ = elicit;
/// ```
pub fn related_request() -> Option<RequestId> {
    RELATED.try_with(|r| r.id.clone()).ok().flatten()
}

/// The [`tag`](crate::RequestOptions::tag) of the client's request the server's question
/// being answered is about ([`related_request`]), when that request was given one and
/// is still in flight: the caller's own name for it, with no map from ids to keep.
/// `None` outside a handler, and wherever [`related_request`] is `None`.
///
/// ```
/// use std::sync::Arc;
/// use capable::input::{related_tag, Handler};
/// use serde_json::json;
///
/// let elicit: Handler = Arc::new(|_params| {
///     // Which of our calls (by the tag we gave it) the server asks about.
///     let call = related_tag();
///     Box::pin(async move { Ok(json!({"action": "decline", "call": call})) })
/// });
/// assert_eq!(related_tag(), None, "outside a handler");
/// # let _ = elicit;
/// ```
pub fn related_tag() -> Option<u64> {
    RELATED.try_with(|r| r.tag).ok().flatten()
}

/// A boxed future returned by handlers.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, RpcError>> + Send>>;

/// A handler: takes the request's `params`, returns its result.
pub type Handler = Arc<dyn Fn(Value) -> HandlerFuture + Send + Sync>;

/// The handlers a host installs. Each installed handler declares its capability.
///
/// ```
/// use std::sync::Arc;
/// use capable::{ClientOptions, InputHandlers, Root, Roots};
/// use serde_json::json;
///
/// let mut options = ClientOptions::default();
/// options.handlers = InputHandlers {
///     // Answers `elicitation/create` (legacy) and elicitation input requests (modern).
///     elicitation: Some(Arc::new(|params| {
///         let message = params["message"].as_str().unwrap_or("").to_owned();
///         Box::pin(async move {
///             println!("the server asks: {message}");
///             Ok(json!({"action": "decline"}))
///         })
///     })),
///     roots: Some(Roots::new(vec![Root { uri: "file:///work".into(), name: Some("work".into()) }])),
///     ..Default::default()
/// };
/// // Only what is installed is declared: elicitation (form) and roots, not sampling.
/// let declared = options.handlers.capabilities();
/// assert!(declared.elicitation_form && declared.roots && !declared.sampling);
/// ```
#[derive(Clone, Default)]
pub struct InputHandlers {
    /// Answers `elicitation/create` in form mode.
    pub elicitation: Option<Handler>,
    /// Whether the elicitation handler also takes URL mode.
    pub elicitation_url: bool,
    /// Answers `sampling/createMessage`.
    pub sampling: Option<Handler>,
    /// The roots to give for `roots/list` (`file://` URIs with names), which the host
    /// may change while connected.
    pub roots: Option<Roots>,
    /// Answers `roots/list` by asking someone (a bridge asks its own client); takes
    /// the place of [`InputHandlers::roots`] when both are set.
    pub list_roots: Option<Handler>,
}

/// The roots a host exposes, shared by every session it gave them to; a change
/// ([`Roots::set`]) reaches each of them: a legacy session sends its server
/// `notifications/roots/list_changed` (the server then asks `roots/list` again), a
/// modern one gives the new list to the next request that asks.
///
/// ```
/// use capable::{Root, Roots};
///
/// let roots = Roots::new(vec![Root { uri: "file:///work".into(), name: None }]);
/// let shared = roots.clone(); // in the ClientOptions of every connection
/// roots.set(vec![]);
/// assert!(shared.get().is_empty());
/// ```
#[derive(Clone)]
pub struct Roots(Arc<tokio::sync::watch::Sender<Vec<Root>>>);

impl Roots {
    /// These roots.
    pub fn new(roots: Vec<Root>) -> Roots {
        Roots(Arc::new(tokio::sync::watch::Sender::new(roots)))
    }

    /// The roots now.
    pub fn get(&self) -> Vec<Root> {
        self.0.borrow().clone()
    }

    /// Replaces the roots, and tells every session that has them.
    pub fn set(&self, roots: Vec<Root>) {
        self.0.send_replace(roots);
    }

    /// A receiver that sees each change from now on.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<Vec<Root>> {
        self.0.subscribe()
    }
}

impl From<Vec<Root>> for Roots {
    fn from(roots: Vec<Root>) -> Roots {
        Roots::new(roots)
    }
}

impl std::fmt::Debug for Roots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Roots").field(&*self.0.borrow()).finish()
    }
}

/// A root the host exposes to the server.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl std::fmt::Debug for InputHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputHandlers")
            .field("elicitation", &self.elicitation.is_some())
            .field("elicitation_url", &self.elicitation_url)
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots)
            .field("list_roots", &self.list_roots.is_some())
            .finish()
    }
}

/// How the command line answers form elicitation without a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElicitationPolicy {
    /// Accept, filling every field that has a `default` in the schema.
    AcceptDefaults,
    /// Decline.
    Decline,
    /// Cancel.
    Cancel,
}

impl InputHandlers {
    /// The client capabilities these handlers declare.
    pub fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: self.roots.is_some() || self.list_roots.is_some(),
            // capable tells the server of a change of its own roots; roots asked of
            // someone else are theirs to tell.
            roots_list_changed: self.roots.is_some() && self.list_roots.is_none(),
            sampling: self.sampling.is_some(),
            elicitation_form: self.elicitation.is_some(),
            elicitation_url: self.elicitation.is_some() && self.elicitation_url,
            extensions: Default::default(),
        }
    }

    /// An elicitation handler that answers by policy.
    pub fn elicitation_by_policy(policy: ElicitationPolicy) -> Handler {
        Arc::new(move |params: Value| {
            let result = match policy {
                ElicitationPolicy::Decline => json!({"action": "decline"}),
                ElicitationPolicy::Cancel => json!({"action": "cancel"}),
                ElicitationPolicy::AcceptDefaults => {
                    let content =
                        schema_defaults(params.get("requestedSchema").unwrap_or(&Value::Null));
                    json!({"action": "accept", "content": content})
                }
            };
            Box::pin(async move { Ok(result) })
        })
    }

    /// Answers one input request (`method`, `params`, read as `kind`) with the installed
    /// handler. Whether the host may be asked at all is the core's rule
    /// ([`InputKind::check`]) over what these handlers declare.
    pub async fn answer(
        &self,
        kind: InputKind,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        kind.check(method, &self.capabilities())?;
        let (elicit, sample) = (&self.elicitation, &self.sampling);
        match (kind, elicit, sample, &self.list_roots, &self.roots) {
            (InputKind::Elicitation { .. }, Some(h), ..) => h(params).await,
            (InputKind::Sampling, _, Some(h), ..) => h(params).await,
            (InputKind::Roots, _, _, Some(h), _) => h(params).await,
            (InputKind::Roots, _, _, None, Some(roots)) => Ok(json!({ "roots": roots.get() })),
            // Declared means handled: the check above let nothing else through.
            _ => Err(RpcError {
                code: capable_core::internal::jsonrpc::codes::METHOD_NOT_FOUND,
                message: format!("the client has no handler for {method}"),
                data: None,
            }),
        }
    }
}

/// The `default` of every property of a form schema that has one.
pub fn schema_defaults(schema: &Value) -> Map<String, Value> {
    let mut content = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_installed_handlers_are_declared() {
        assert_eq!(
            InputHandlers::default().capabilities(),
            ClientCapabilities::default()
        );
        let h = InputHandlers {
            elicitation: Some(InputHandlers::elicitation_by_policy(
                ElicitationPolicy::Decline,
            )),
            ..Default::default()
        };
        let caps = h.capabilities();
        assert!(caps.elicitation_form && !caps.elicitation_url && !caps.sampling && !caps.roots);
    }

    #[tokio::test]
    async fn roots_asked_of_someone_are_declared_and_answered_by_them() {
        let h = InputHandlers {
            roots: Some(
                vec![Root {
                    uri: "file:///kept".into(),
                    name: None,
                }]
                .into(),
            ),
            list_roots: Some(Arc::new(|_| {
                Box::pin(async { Ok(json!({"roots": [{"uri": "file:///asked"}]})) })
            })),
            ..Default::default()
        };
        assert!(h.capabilities().roots && !h.capabilities().roots_list_changed);
        let answer = h
            .answer(InputKind::Roots, "roots/list", json!({}))
            .await
            .unwrap();
        assert_eq!(answer["roots"][0]["uri"], "file:///asked");
    }

    #[test]
    fn accept_defaults_fills_every_default() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "Ada"},
            "age": {"type": "integer", "default": 36},
            "note": {"type": "string"}
        }});
        let c = schema_defaults(&schema);
        assert_eq!(Value::Object(c), json!({"name": "Ada", "age": 36}));
    }
}
