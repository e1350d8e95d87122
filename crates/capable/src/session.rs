//! The ready session: the host's handle on a negotiated connection.
//!
//! A [`Session`] exists only after a successful handshake, so a host cannot issue a
//! request before the server answered. Every method passes the gating table first: a
//! method the server did not declare fails with [`Error::Refused`] and nothing is sent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use capable_core::model::{
    CallToolParams, CallToolResult, CompleteArgument, CompleteParams, CompleteResult, Empty,
    GetPromptParams, GetPromptResult, JsonObject, ListParams, Page, ProgressParams, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, SetLevelParams, Tool, UriParams,
};
use capable_core::{
    Era, ListenFilter, Method, Negotiated, Payload, ProtocolVersion, ServerCapabilities, Violation,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::driver::{Clock, ListenEvent, ServerNotification, Shared, Waiter};
use crate::error::Error;
use crate::options::ClientOptions;
use crate::read::ResourceRead;

/// The most `input_required` rounds answered for one request.
pub const MAX_INPUT_ROUNDS: usize = 8;

enum ResultType {
    Complete,
    InputRequired(InputRequired),
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired {
    #[serde(default)]
    input_requests: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    request_state: Option<String>,
}

/// Reads `resultType` (modern era). Absent means `complete`; only `tools/call`,
/// `prompts/get` and `resources/read` may ask for input; anything else is invalid.
fn result_type(method: Method, payload: &Payload) -> Result<ResultType, Error> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default, rename = "resultType")]
        result_type: Option<String>,
    }
    // Cheap pre-check: most results are decoded once, by their own type, only.
    if !payload.mentions("\"resultType\"") {
        return Ok(ResultType::Complete);
    }
    let probe: Probe = payload.decode().map_err(|e| Error::MalformedResult {
        method,
        detail: e.to_string(),
    })?;
    match probe.result_type.as_deref() {
        None | Some("complete") => Ok(ResultType::Complete),
        Some("input_required")
            if matches!(
                method,
                Method::CallTool | Method::GetPrompt | Method::ReadResource
            ) =>
        {
            let input: InputRequired = payload.decode().map_err(|e| Error::MalformedResult {
                method,
                detail: format!("input_required result: {e}"),
            })?;
            if input.input_requests.is_empty() && input.request_state.is_none() {
                return Err(Error::MalformedResult {
                    method,
                    detail: "input_required without inputRequests or requestState".into(),
                });
            }
            Ok(ResultType::InputRequired(input))
        }
        Some(other) => Err(Error::MalformedResult {
            method,
            detail: format!("unknown resultType {other:?}"),
        }),
    }
}

/// Receives progress of one request.
pub type ProgressCallback = Box<dyn FnMut(&ProgressParams) + Send>;

/// Per-request options.
#[derive(Default)]
pub struct RequestOptions {
    /// Overrides the session's default timeout.
    pub timeout: Option<Duration>,
    /// Receives `notifications/progress` for this request. Setting it adds a progress
    /// token to the request; each progress notification restarts the timeout, up to
    /// the session's maximum.
    pub on_progress: Option<ProgressCallback>,
}

/// A negotiated connection to one MCP server.
pub struct Session {
    shared: Arc<Shared>,
    negotiated: Negotiated,
    options: ClientOptions,
    notifications: Mutex<Option<mpsc::Receiver<ServerNotification>>>,
    reader: JoinHandle<()>,
    writer: Option<JoinHandle<()>>,
}

/// Cancels a request if its future is dropped before the answer came.
struct InFlight<'a> {
    shared: &'a Shared,
    id: i64,
    armed: bool,
}

impl InFlight<'_> {
    fn give_up(&mut self, reason: &str) {
        if !self.armed {
            return;
        }
        self.armed = false;
        self.shared
            .write_with(|st| st.conn.cancel(self.id, reason, &mut st.out));
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.give_up("the host stopped waiting");
    }
}

impl Session {
    pub(crate) fn new(
        shared: Arc<Shared>,
        negotiated: Negotiated,
        options: ClientOptions,
        notifications: mpsc::Receiver<ServerNotification>,
        reader: JoinHandle<()>,
        writer: JoinHandle<()>,
    ) -> Session {
        Session {
            shared,
            negotiated,
            options,
            notifications: Mutex::new(Some(notifications)),
            reader,
            writer: Some(writer),
        }
    }

    /// What the handshake settled.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.negotiated.version
    }

    /// The era of the negotiated version.
    pub fn era(&self) -> Era {
        self.negotiated.era()
    }

    /// `serverInfo`.
    pub fn server_info(&self) -> &capable_core::model::Implementation {
        &self.negotiated.server_info
    }

    /// The server's capabilities, exactly as declared.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.negotiated.capabilities
    }

    /// The server's `instructions`.
    pub fn instructions(&self) -> Option<&str> {
        self.negotiated.instructions.as_deref()
    }

    /// The methods the host may call (derived from the gating table; methods the
    /// server refused despite declaring them are left out).
    pub fn actions(&self) -> Vec<Method> {
        self.shared.lock().conn.actions()
    }

    /// Whether `method` may be called now. The same check every request passes.
    pub fn check(&self, method: Method) -> Result<(), Error> {
        self.shared
            .lock()
            .conn
            .check(method)
            .map_err(Error::Refused)
    }

    /// Contract violations recorded in this session.
    pub fn violations(&self) -> Vec<Violation> {
        self.shared.lock().conn.violations().to_vec()
    }

    /// Lower-severity records of this session, oldest first (the last
    /// [`NOTICE_LOG`](crate::events::NOTICE_LOG)): notifications the server sent
    /// without declaring them, skipped lines, late responses, …
    pub fn notices(&self) -> Vec<capable_core::Notice> {
        self.shared.events.notices()
    }

    /// A new observer of this session's [events](crate::events): violations, notices,
    /// legacy resource updates, and the end of the session. Events from before the call
    /// are not replayed (the logs keep them).
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<crate::events::SessionEvent> {
        self.shared.events.subscribe()
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.shared.peer.stderr_tail()
    }

    /// The server's notifications, as a stream. Can be taken once; while nobody takes
    /// it, notifications beyond the buffer are dropped (memory stays bounded).
    pub fn notifications(&self) -> Option<mpsc::Receiver<ServerNotification>> {
        self.notifications.lock().ok()?.take()
    }

    /// The options this session was opened with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Sends a request and decodes its result into `T`.
    pub async fn request<P, T>(
        &self,
        method: Method,
        params: &P,
        options: RequestOptions,
    ) -> Result<T, Error>
    where
        P: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let payload = self.request_payload(method, params, options).await?;
        payload.decode::<T>().map_err(|e| Error::MalformedResult {
            method,
            detail: e.to_string(),
        })
    }

    /// Sends a request and returns its raw result.
    ///
    /// In the modern era the result's `resultType` is checked (absent means
    /// `complete`; an unknown value is an error) and `input_required` results are
    /// answered with the host's handlers and retried with a new id, at most
    /// [`MAX_INPUT_ROUNDS`] times.
    pub async fn request_payload<P>(
        &self,
        method: Method,
        params: &P,
        mut options: RequestOptions,
    ) -> Result<Payload, Error>
    where
        P: Serialize + ?Sized,
    {
        let payload = self.exchange(method, params, &mut options).await?;
        if self.era() == Era::Legacy {
            return Ok(payload);
        }
        let mut payload = payload;
        for round in 0..=MAX_INPUT_ROUNDS {
            match result_type(method, &payload)? {
                ResultType::Complete => return Ok(payload),
                ResultType::InputRequired(input) => {
                    if round == MAX_INPUT_ROUNDS {
                        break;
                    }
                    let retry = self.answer_input(method, params, input).await?;
                    payload = self.exchange(method, &retry, &mut options).await?;
                }
            }
        }
        Err(Error::TooManyInputRounds {
            method,
            rounds: MAX_INPUT_ROUNDS,
        })
    }

    /// Builds the retry of an `input_required` request: the same params plus
    /// `inputResponses` and the server's `requestState`, echoed exactly.
    async fn answer_input<P: Serialize + ?Sized>(
        &self,
        method: Method,
        params: &P,
        input: InputRequired,
    ) -> Result<serde_json::Value, Error> {
        let mut responses = serde_json::Map::new();
        for (key, request) in input.input_requests {
            let name = request
                .get("method")
                .and_then(|m| m.as_str())
                .unwrap_or("")
                .to_owned();
            let params = request
                .get("params")
                .cloned()
                .unwrap_or(serde_json::Value::Null);
            let answer = self
                .options
                .handlers
                .answer(&name, params)
                .await
                .map_err(|error| Error::InputUnanswered {
                    method,
                    input: name.clone(),
                    error: Box::new(error),
                })?;
            responses.insert(key, answer);
        }
        let mut retry = serde_json::to_value(params).map_err(|e| Error::MalformedResult {
            method,
            detail: e.to_string(),
        })?;
        if let Some(obj) = retry.as_object_mut() {
            obj.remove("inputResponses");
            obj.remove("requestState");
            if !responses.is_empty() {
                obj.insert(
                    "inputResponses".into(),
                    serde_json::Value::Object(responses),
                );
            }
            if let Some(state) = input.request_state {
                obj.insert("requestState".into(), serde_json::Value::String(state));
            }
        }
        Ok(retry)
    }

    /// One request/response exchange: gate, send, wait (timeout, progress), route.
    async fn exchange<P>(
        &self,
        method: Method,
        params: &P,
        options: &mut RequestOptions,
    ) -> Result<Payload, Error>
    where
        P: Serialize + ?Sized,
    {
        let (tx, mut rx) = oneshot::channel();
        let (ptx, mut prx) = match options.on_progress {
            Some(_) => {
                let (t, r) = mpsc::unbounded_channel();
                (Some(t), Some(r))
            }
            None => (None, None),
        };
        // The timeout is kept with the waiter and enforced by the session's one
        // deadline task (see `driver::run_deadlines`): no timer per request.
        let timeout = options.timeout.unwrap_or(self.options.request_timeout);
        let started = tokio::time::Instant::now();
        let deadline = started + timeout;
        let clock = Clock {
            method,
            started,
            deadline,
            timeout,
            hard_limit: started + self.options.max_request_timeout.max(timeout),
        };
        let waiter = Waiter {
            tx,
            progress: ptx,
            clock: Some(clock),
        };
        let (id, wake_timer) = self.shared.write_with(|st| {
            if let Some(reason) = &st.closed {
                return Err(reason.clone());
            }
            let id = st
                .conn
                .request(method, params, prx.is_some(), waiter, &mut st.out)
                .map_err(|(refusal, _)| Error::Refused(refusal))?;
            Ok((id, st.arm_timer(deadline)))
        })?;
        if wake_timer {
            self.shared.timer_wake.notify_one();
        }
        let mut in_flight = InFlight {
            shared: &self.shared,
            id,
            armed: true,
        };
        let outcome = match (prx.as_mut(), options.on_progress.as_mut()) {
            (Some(r), Some(cb)) => loop {
                tokio::select! {
                    biased;
                    res = &mut rx => {
                        // Progress sent just before the answer is still delivered, in order.
                        while let Ok(p) = r.try_recv() {
                            cb(&p);
                        }
                        break res.unwrap_or(Err(Error::Closed));
                    }
                    Some(p) = r.recv() => cb(&p),
                }
            },
            _ => (&mut rx).await.unwrap_or(Err(Error::Closed)),
        };
        in_flight.armed = false;
        outcome
    }

    /// One page of a list (`resources/list`, `resources/templates/list`,
    /// `tools/list`, `prompts/list`), with its `nextCursor` and, from 2026-07-28
    /// servers, its caching hints (`cache.ttl_ms`, `cache.cache_scope`).
    ///
    /// ```no_run
    /// # async fn f(session: &capable::Session) -> Result<(), capable::Error> {
    /// use capable::core::model::ListToolsResult;
    /// let page: ListToolsResult = session.list_page(capable::Method::ListTools, None).await?;
    /// println!("{} tools, fresh for {:?} ms", page.tools.len(), page.cache.ttl_ms);
    /// # Ok(()) }
    /// ```
    pub async fn list_page<Pg: Page>(
        &self,
        method: Method,
        cursor: Option<&str>,
    ) -> Result<Pg, Error> {
        self.request(method, &ListParams { cursor }, RequestOptions::default())
            .await
    }

    async fn list_all<Pg: Page>(&self, method: Method) -> Result<Vec<Pg::Item>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.options.max_pages.max(1) {
            let page: Pg = self.list_page(method, cursor.as_deref()).await?;
            let (mut page_items, next) = page.into_parts();
            items.append(&mut page_items);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(items),
            }
        }
        Err(Error::MalformedResult {
            method,
            detail: format!(
                "still paginating after {} pages; stopped (raise max_pages if the list is really that long)",
                self.options.max_pages
            ),
        })
    }

    /// `resources/list`, every page.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_all::<capable_core::model::ListResourcesResult>(Method::ListResources)
            .await
    }

    /// `resources/templates/list`, every page.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_all::<capable_core::model::ListResourceTemplatesResult>(
            Method::ListResourceTemplates,
        )
        .await
    }

    /// `resources/read`: the contents, their revision and the time they were read.
    pub async fn read_resource(&self, uri: &str) -> Result<ResourceRead, Error> {
        let result: ReadResourceResult = self
            .request(
                Method::ReadResource,
                &UriParams { uri },
                RequestOptions::default(),
            )
            .await?;
        Ok(ResourceRead::new(uri, result, SystemTime::now()))
    }

    /// `tools/list`, every page.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_all::<capable_core::model::ListToolsResult>(Method::ListTools)
            .await
    }

    /// `tools/call`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, RequestOptions::default())
            .await
    }

    /// `tools/call` with per-request options (timeout, progress).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
        options: RequestOptions,
    ) -> Result<CallToolResult, Error> {
        self.request(
            Method::CallTool,
            &CallToolParams { name, arguments },
            options,
        )
        .await
    }

    /// `prompts/list`, every page.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_all::<capable_core::model::ListPromptsResult>(Method::ListPrompts)
            .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<&JsonObject>,
    ) -> Result<GetPromptResult, Error> {
        self.request(
            Method::GetPrompt,
            &GetPromptParams { name, arguments },
            RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete` for an argument of a prompt or resource template.
    /// `reference` is `{"type":"ref/prompt","name":…}` or
    /// `{"type":"ref/resource","uri":…}`.
    pub async fn complete(
        &self,
        reference: &serde_json::Value,
        argument: &str,
        value: &str,
    ) -> Result<CompleteResult, Error> {
        let params = CompleteParams {
            reference,
            argument: CompleteArgument {
                name: argument,
                value,
            },
        };
        self.request(Method::Complete, &params, RequestOptions::default())
            .await
    }

    /// `logging/setLevel` (legacy).
    pub async fn set_logging_level(&self, level: &str) -> Result<(), Error> {
        let _: serde_json::Value = self
            .request(
                Method::SetLoggingLevel,
                &SetLevelParams { level },
                RequestOptions::default(),
            )
            .await?;
        Ok(())
    }

    /// `ping` (legacy).
    pub async fn ping(&self) -> Result<(), Error> {
        let _: serde_json::Value = self
            .request(Method::Ping, &Empty {}, RequestOptions::default())
            .await?;
        Ok(())
    }

    /// `resources/subscribe` (legacy; needs `resources.subscribe`).
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        let _: serde_json::Value = self
            .request(
                Method::Subscribe,
                &UriParams { uri },
                RequestOptions::default(),
            )
            .await?;
        self.shared.lock().conn.record_subscription(uri);
        Ok(())
    }

    /// `resources/unsubscribe` (legacy; needs `resources.subscribe`).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        let _: serde_json::Value = self
            .request(
                Method::Unsubscribe,
                &UriParams { uri },
                RequestOptions::default(),
            )
            .await?;
        self.shared.lock().conn.forget_subscription(uri);
        Ok(())
    }

    /// `subscriptions/listen` (modern): opens a stream of the notifications `filter`
    /// asks for. Each filter field needs its capability flag (`resourceSubscriptions` ←
    /// `resources.subscribe`, `resourcesListChanged` ← `resources.listChanged`, …); a
    /// field the server did not declare is refused locally and nothing is sent.
    /// Dropping the [`Listener`] (or [`Listener::close`]) ends the stream with
    /// `notifications/cancelled`.
    pub async fn listen(&self, filter: &ListenFilter) -> Result<Listener, Error> {
        let (tx, done) = oneshot::channel();
        let (etx, events) = mpsc::channel(self.options.notification_capacity.max(1));
        let waiter = Waiter {
            tx,
            progress: None,
            clock: None,
        };
        let id = self.shared.write_with(|st| {
            if let Some(reason) = &st.closed {
                return Err(reason.clone());
            }
            let id = st
                .conn
                .listen(filter, waiter, &mut st.out)
                .map_err(|(refusal, _)| Error::Refused(refusal))?;
            // Registered before the request can leave: the acknowledgement cannot
            // arrive before its listener exists.
            st.listeners.insert(id, etx);
            Ok(id)
        })?;
        Ok(Listener {
            shared: self.shared.clone(),
            id,
            events,
            done,
            ended: false,
        })
    }

    /// Closes the session: fails anything in flight, closes the server's input, waits
    /// for it to exit (then SIGTERM, then SIGKILL). Returns how the server exited.
    pub async fn close(mut self) -> Option<String> {
        self.shared.close(Error::Closed);
        if let Some(writer) = self.writer.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
        }
        let status = self.shared.peer.shutdown().await;
        self.reader.abort();
        status
    }
}

/// An open `subscriptions/listen` stream. Dropping it (or [`Listener::close`]) sends
/// `notifications/cancelled` for the listen request.
pub struct Listener {
    shared: Arc<Shared>,
    id: i64,
    events: mpsc::Receiver<ListenEvent>,
    done: oneshot::Receiver<Result<Payload, Error>>,
    ended: bool,
}

impl Listener {
    /// The listen request's id (= the `subscriptionId` of its notifications).
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The next event; `Ok(None)` when the server ended the stream with a result,
    /// `Err` when it ended otherwise (cancelled by the server, connection lost).
    pub async fn recv(&mut self) -> Result<Option<ListenEvent>, Error> {
        if self.ended {
            return Ok(None);
        }
        tokio::select! {
            biased;
            Some(event) = self.events.recv() => Ok(Some(event)),
            end = &mut self.done => {
                self.ended = true;
                match end {
                    Ok(Ok(_)) => Ok(None),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(Error::Closed),
                }
            }
        }
    }

    /// Ends the stream: `notifications/cancelled` for the listen request.
    pub fn close(mut self) {
        self.cancel();
    }

    fn cancel(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.shared.write_with(|st| {
            st.listeners.remove(&self.id);
            if st.closed.is_none() {
                st.conn
                    .cancel(self.id, "the host closed the subscription", &mut st.out);
            }
        });
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.close(Error::Closed);
        self.reader.abort();
    }
}
