//! One HTTP exchange, carried out: send the request the policy made (following
//! redirects by hand, as the policy rewrites them), tell the policy the response's
//! head, read the body the way it asks, feed back every event and the end, and
//! perform whatever it decides next.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use capable_core::internal::http::redact::redact;
use capable_core::internal::http::{
    redirect, Action, Body, End, ExchangeId, Failure, Head, HttpMethod, Request,
};
use http_body::Body as _;
use http_body_util::BodyExt;
use reqwest::header::{HeaderMap, HeaderName, CONTENT_TYPE, LOCATION};
use reqwest::Method;
use tokio::task::AbortHandle;

use super::client::{self, Answer, NoAnswer};
use super::sse::SseReader;
use super::{Http, Received};
use crate::error::Error;
use crate::transport::{Inbound, TransportError};

/// The tasks of the exchanges in flight, so that an exchange can be stopped (a modern
/// cancellation closes its stream) and all of them on close. An exchange its caller
/// carries out ([`carried`]) is not among them: dropping the caller's future stops it.
#[derive(Default)]
pub(super) struct Exchanges {
    tasks: Mutex<HashMap<ExchangeId, (u64, AbortHandle)>>,
    generation: AtomicU64,
}

impl Exchanges {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ExchangeId, (u64, AbortHandle)>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn spawn(&self, http: &Arc<Http>, ex: ExchangeId, request: Request) {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        // Registered under the lock the task takes to forget itself: a task that ends
        // at once cannot leave a stale entry behind.
        let mut tasks = self.lock();
        // Boxed: the task then holds a pointer, and spawning it (and finishing it)
        // moves a few bytes instead of the whole exchange's state, which is large.
        let task = tokio::spawn(Box::pin({
            let http = http.clone();
            async move {
                if let Err(e) = run(http.clone(), ex, request).await {
                    http.hand(Err(e)).await;
                }
                // Forget the task, unless a later step of the exchange replaced it.
                let mut tasks = http.exchanges.lock();
                if tasks.get(&ex).is_some_and(|(g, _)| *g == generation) {
                    tasks.remove(&ex);
                    http.sent_lock().remove(&ex);
                }
            }
        }));
        tasks.insert(ex, (generation, task.abort_handle()));
    }

    fn abort(&self, ex: ExchangeId) {
        if let Some((_, task)) = self.lock().remove(&ex) {
            task.abort();
        }
    }

    pub(super) fn abort_all(&self) {
        for (_, (_, task)) in self.lock().drain() {
            task.abort();
        }
    }
}

/// Exchange `ex`, carried out by the caller of its request ([`super::HttpBypass`]) in
/// its own task. Every reason to stop it early — the request cancelled, timed out,
/// or the session closed — also ends its caller's wait, and the caller then drops it.
pub(super) async fn carried(http: Arc<Http>, ex: ExchangeId, request: Request) {
    /// The token generation kept for the exchange, forgotten however it ends.
    struct Forget<'a>(&'a Http, ExchangeId);
    impl Drop for Forget<'_> {
        fn drop(&mut self) {
            if self.0.config.oauth.is_some() {
                self.0.sent_lock().remove(&self.1);
            }
        }
    }
    let _forget = Forget(&http, ex);
    if let Err(e) = run(http.clone(), ex, request).await {
        http.hand(Err(e)).await;
    }
}

/// Performs the policy's actions, in order. Most need no waiting — a request's own
/// task started, a message handed to the reader — and are done at once; from the
/// first that does (a blocking request, an authorization, a full channel to the
/// reader) on, the rest are awaited in order. A blocking request is carried out here
/// (its failure is the caller's); the others run as their own tasks.
pub(super) async fn execute(http: &Arc<Http>, actions: Vec<Action>) -> Result<(), TransportError> {
    let mut actions = actions.into_iter();
    while let Some(action) = actions.next() {
        let received = match at_once(http, action) {
            AtOnce::Done => continue,
            AtOnce::Deliver(received) => received,
            AtOnce::End(e) => return Err(e),
            AtOnce::Waits(waits) => {
                let rest = std::iter::once(waits).chain(actions).collect();
                // Boxed: the waiting is rare, and every exchange's task would otherwise
                // hold room for it.
                return Box::pin(execute_waiting(http, rest)).await;
            }
        };
        if let Some(queued) = http.hand_at_once(received) {
            http.queue(queued).await;
        }
    }
    Ok(())
}

/// What an action that needs no waiting came to.
enum AtOnce {
    /// Done (or nothing to do).
    Done,
    /// Something for the reader.
    Deliver(Received),
    /// The connection cannot go on.
    End(TransportError),
    /// Carried out by waiting for it (a blocking request, an authorization).
    Waits(Action),
}

/// Carries out an action at once, or hands it back ([`AtOnce::Waits`]) when it is
/// carried out by waiting for it.
fn at_once(http: &Arc<Http>, action: Action) -> AtOnce {
    let received = match action {
        Action::Send { blocking: true, .. } | Action::Authorize { .. } => {
            return AtOnce::Waits(action)
        }
        Action::Send {
            exchange, request, ..
        } => {
            http.exchanges.spawn(http, exchange, request);
            return AtOnce::Done;
        }
        Action::Abort(ex) => {
            http.exchanges.abort(ex);
            return AtOnce::Done;
        }
        Action::Deliver(message) => Ok(Inbound::Message(message.into())),
        Action::DeliverOn { message, related } => Ok(Inbound::Related {
            message: message.into(),
            related,
        }),
        Action::Fail { id, failure } => Ok(Inbound::Failed {
            id,
            error: scrubbed(http, error_of(failure)),
        }),
        Action::Notice(notice) => Ok(Inbound::Notice(notice)),
        Action::End(Some(Failure::Broken(why))) => Err(TransportError::Broken(why)),
        Action::End(other) => match other {
            Some(failure) => Err(TransportError::Broken(error_of(failure).to_string())),
            // The failure the caller holds ends the connection.
            None => return AtOnce::End(TransportError::Broken("the connection failed".into())),
        },
    };
    AtOnce::Deliver(received)
}

/// [`execute`] from an action that waits on: every action awaited in order.
async fn execute_waiting(http: &Arc<Http>, actions: Vec<Action>) -> Result<(), TransportError> {
    for action in actions {
        let waits = match at_once(http, action) {
            AtOnce::Done => continue,
            AtOnce::End(e) => return Err(e),
            AtOnce::Deliver(received) => {
                http.hand(received).await;
                continue;
            }
            AtOnce::Waits(waits) => waits,
        };
        let received = match waits {
            Action::Authorize { exchange, id, need } => {
                let outcome = match &http.config.oauth {
                    Some(oauth) => {
                        let sent = http.sent_lock().get(&exchange).copied().unwrap_or(0);
                        // Boxed: an authorization flow's future is large, and every
                        // exchange's task would otherwise hold room for it.
                        Box::pin(oauth.resolve(&need, sent)).await
                    }
                    None => Err(crate::auth::AuthError::Config(
                        "the server wants authorization and no OAuth is configured".into(),
                    )),
                };
                match outcome {
                    Ok(()) => {
                        let actions = http.policy().authorized(exchange);
                        Box::pin(execute(http, actions)).await?;
                        continue;
                    }
                    Err(e) => {
                        let actions = http.policy().abandon(exchange);
                        Box::pin(execute(http, actions)).await?;
                        match id {
                            Some(id) => Ok(Inbound::Failed {
                                id,
                                error: Error::Auth(e),
                            }),
                            None => {
                                tracing::warn!("{} was not sent again: {e}", need.url);
                                continue;
                            }
                        }
                    }
                }
            }
            Action::Send {
                exchange, request, ..
            } => {
                let done = Box::pin(run(http.clone(), exchange, request)).await;
                http.sent_lock().remove(&exchange);
                done?;
                continue;
            }
            // Nothing else waits (`at_once`).
            _ => continue,
        };
        http.hand(received).await;
    }
    Ok(())
}

/// A server's words with every secret it was sent redacted (a hostile server may
/// echo the token, the host's headers or the URL's credentials).
fn scrubbed(http: &Http, error: Error) -> Error {
    match error {
        Error::Http { url, status, body } => {
            let body = http.secrets.scrub(&body).into_owned();
            let body = match &http.config.oauth {
                Some(oauth) => oauth.scrub(&body),
                None => body,
            };
            Error::Http { url, status, body }
        }
        other => other,
    }
}

/// A failure as the host sees it.
fn error_of(failure: Failure) -> Error {
    match failure {
        Failure::Http { url, status, body } => Error::Http { url, status, body },
        Failure::Broken(why) => Error::Transport(TransportError::Broken(why)),
        Failure::Malformed { method, detail } => Error::MalformedResult { method, detail },
        other => Error::Transport(TransportError::Broken(format!("{other:?}"))),
    }
}

/// Carries out one step of exchange `ex`: `request`, then its body, then what the
/// policy says next. `Err` when the server cannot be reached and the policy says the
/// connection cannot go on.
pub(super) async fn run(
    http: Arc<Http>,
    ex: ExchangeId,
    request: Request,
) -> Result<(), TransportError> {
    if !request.delay.is_zero() {
        tokio::time::sleep(request.delay).await;
    }
    let response = match perform(&http, ex, request).await {
        Ok(response) => response,
        Err(e) => return failed(&http, ex, e).await,
    };
    let head = Head {
        status: response.status().as_u16(),
        content_type: header_text(&response, CONTENT_TYPE),
        session_id: header_text(&response, MCP_SESSION_ID),
        www_authenticate: response
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect(),
        dpop_nonce: header_text(&response, DPOP_NONCE),
    };
    let (body, actions) = http.policy().on_head(ex, &head);
    execute(&http, actions).await?;
    match body {
        Body::Whole { limit } => match read_body(response, limit).await {
            Ok(bytes) => {
                let actions = http.policy().on_body(ex, bytes);
                execute(&http, actions).await
            }
            Err(e) => failed(&http, ex, e).await,
        },
        Body::Discard => {
            let _ = read_body(response, http.limit).await;
            let actions = http.policy().on_end(ex, End::default());
            execute(&http, actions).await
        }
        // Boxed: the stream's reading is most of the exchange's future, and a plain
        // JSON answer (the common case) would otherwise carry room for it in every
        // exchange's task.
        Body::Events { first_within } => {
            Box::pin(read_events(http, ex, response, first_within)).await
        }
    }
}

/// Reads an answer's event stream, handing each event to the policy, until the policy
/// is done with it or the stream ends.
async fn read_events(
    http: Arc<Http>,
    ex: ExchangeId,
    response: Answer,
    first_within: Option<std::time::Duration>,
) -> Result<(), TransportError> {
    let opened = tokio::time::Instant::now();
    let mut reader = SseReader::from_body(response.into_body(), http.limit);
    let mut first = first_within;
    loop {
        let next = match first.take() {
            Some(within) => match tokio::time::timeout(within, reader.next()).await {
                Ok(next) => next,
                Err(_) => {
                    let actions = http.policy().on_timeout(ex);
                    return execute(&http, actions).await;
                }
            },
            None => reader.next().await,
        };
        match next {
            Ok(Some(event)) => {
                let (actions, wants) = {
                    let mut policy = http.policy();
                    let actions = policy.on_event(ex, event);
                    (actions, policy.wants(ex))
                };
                execute(&http, actions).await?;
                if !wants {
                    return Ok(());
                }
            }
            // A stream that ends or breaks is the policy's to repair.
            Ok(None) | Err(TransportError::Broken(_)) => break,
            Err(e) => return failed(&http, ex, e).await,
        }
    }
    let end = End {
        last_event_id: reader.last_event_id.clone(),
        retry: reader.retry,
        lasted: opened.elapsed(),
    };
    let actions = http.policy().on_end(ex, end);
    execute(&http, actions).await
}

/// The request could not be made or its answer not read: the policy decides whether
/// that ends the connection (with `e`).
async fn failed(http: &Arc<Http>, ex: ExchangeId, e: TransportError) -> Result<(), TransportError> {
    let actions = http.policy().on_failure(ex);
    let ends = actions.iter().any(|a| matches!(a, Action::End(None)));
    let mut rest = Vec::new();
    for action in actions {
        match action {
            Action::End(None) => {}
            // The request fails alone, with the transport's own error.
            Action::Fail {
                id,
                failure: Failure::Unreachable,
            } => {
                let failed = Inbound::Failed {
                    id,
                    error: Error::Transport(e.clone()),
                };
                http.hand(Ok(failed)).await;
            }
            Action::Notice(notice) => {
                tracing::debug!("{notice}: {e}");
                rest.push(Action::Notice(notice));
            }
            other => rest.push(other),
        }
    }
    execute(http, rest).await?;
    if ends {
        return Err(e);
    }
    Ok(())
}

/// Headers of the answers read, by name (looked up without parsing a name each time).
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

fn header_text(response: &Answer, name: HeaderName) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Sends `request`, following at most [`redirect::MAX_REDIRECTS`] redirects, each as
/// the policy rewrites it (nothing of the host's crosses an origin), and sending it
/// again when the server provably did not process it (at most [`client::RESENDS`]
/// times).
async fn perform(
    http: &Http,
    ex: ExchangeId,
    mut request: Request,
) -> Result<Answer, TransportError> {
    // The body, shared by every hop (each redirect keeps it, as the policy says).
    let body = request.body.take().map(bytes::Bytes::from);
    let (mut redirects, mut resends) = (0, 0);
    loop {
        let method = match request.method {
            HttpMethod::Get => Method::GET,
            HttpMethod::Post => Method::POST,
            HttpMethod::Delete => Method::DELETE,
        };
        let mut headers = match request.user_headers {
            true => http.user_headers.clone(),
            false => HeaderMap::with_capacity(request.headers.len()),
        };
        // The token goes to the MCP server's origin only, with a fresh DPoP proof for
        // this very request when it is bound.
        if let Some(oauth) = http.config.oauth.as_ref().filter(|_| {
            request.user_headers && redirect::same_origin(&request.url, &http.config.url)
        }) {
            Box::pin(oauth.prepare()).await;
            let (added, generation) = oauth.headers(method.as_str(), &request.url);
            http.sent_lock().insert(ex, generation);
            for (name, value) in added {
                headers.append(name, value);
            }
        }
        for (name, value) in &request.headers {
            if let Some((n, v)) = http.headers.header(name, value) {
                headers.append(n, v);
            }
        }
        let context = || format!("{method} {}", redact(&request.url));
        let sent = http
            .client
            .send(method.clone(), &request.url, headers, body.clone(), context)
            .await;
        let answer = match sent {
            Ok(answer) => answer,
            Err(NoAnswer {
                resendable: true, ..
            }) if resends < client::RESENDS => {
                resends += 1;
                continue;
            }
            Err(no) => return Err(no.error),
        };
        let status = answer.status().as_u16();
        let location = header_text(&answer, LOCATION);
        let next = location
            .filter(|_| redirect::is_redirect(status))
            .and_then(|location| redirect::redirected(&request, &location));
        match next {
            Some(next) if redirects < redirect::MAX_REDIRECTS => {
                redirects += 1;
                request = next;
            }
            Some(_) => {
                return Err(TransportError::Broken(format!(
                    "{method} {}: too many redirects",
                    redact(&request.url)
                )))
            }
            None => return Ok(answer),
        }
    }
}

/// Reads a whole body, refusing more than `limit` bytes.
async fn read_body(answer: Answer, limit: usize) -> Result<Vec<u8>, TransportError> {
    let mut body = answer.into_body();
    // Announced (an answer not compressed): refused at once when too long, else read
    // into room made once, the HTTP stack holding it to exactly that length.
    let announced = body.size_hint().exact();
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(TransportError::MessageTooLarge { limit });
    }
    let mut whole = Vec::with_capacity(announced.unwrap_or(0) as usize);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| TransportError::http("reading an answer", e))?;
        let Ok(chunk) = frame.into_data() else {
            continue; // trailers
        };
        if whole.len() + chunk.len() > limit {
            return Err(TransportError::MessageTooLarge { limit });
        }
        whole.extend_from_slice(&chunk);
    }
    Ok(whole)
}

#[cfg(test)]
mod size_tests {
    use capable_core::internal::http::Action;

    /// Every request's exchange runs as a task holding this future: it stays small
    /// (an authorization flow, which would dwarf it, is boxed where it is awaited).
    #[test]
    fn an_exchange_future_stays_small() {
        let url = "http://127.0.0.1:1/mcp".parse().expect("a URL");
        let transport =
            super::super::HttpTransport::new(super::super::HttpConfig::new(url), 1 << 20)
                .expect("a transport");
        let http = transport.http.clone();
        let mut out = capable_core::Outbox::new();
        out.write_request(
            &capable_core::RequestId::Number(1),
            capable_core::Method::Initialize,
            &serde_json::json!({}),
        );
        let (what, line) = out.messages().next().expect("a message");
        let actions = http.policy().send(what, line);
        let Some((exchange, request)) = actions.into_iter().find_map(|a| match a {
            Action::Send {
                exchange, request, ..
            } => Some((exchange, request)),
            _ => None,
        }) else {
            panic!("the policy sends an initialize");
        };
        let future = super::run(http, exchange, request);
        let size = std::mem::size_of_val(&future);
        assert!(size < 4 * 1024, "an exchange's future is {size} bytes");
    }
}
