//! One request and its answer: the connection gates it, writes it and registers its
//! deadline; the caller waits for the answer (handing progress to its callback) and
//! decodes the result into the one type it expects. A request whose caller stops
//! waiting is cancelled.

use std::task::Poll;
use std::time::Duration;

use capable_core::internal::cache::{CacheKey, CachePolicy};
use capable_core::model::ProgressParams;
use capable_core::{Method, NotSent, Params, Payload, Timing};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use crate::driver::{Answer, Driven, Driver, Outcome};
use crate::error::Error;

use super::Session;

/// Receives progress of one request.
pub type ProgressCallback = Box<dyn FnMut(&ProgressParams) + Send>;

/// Per-request options.
#[derive(Default)]
pub struct RequestOptions {
    /// Overrides the session's default timeout.
    pub timeout: Option<Duration>,
    /// Receives `notifications/progress` for this request. Setting it adds a progress
    /// token to the request; each progress notification restarts the timeout, up to
    /// the session's cap ([`Timeouts::progress_cap`](capable_core::Timeouts::progress_cap)).
    pub on_progress: Option<ProgressCallback>,
    /// What the request does with the session's cache of results that carry
    /// `ttlMs` (lists, reads, discover): serve a fresh one (the default), refresh it,
    /// or bypass it. See [`capable_core::internal::cache`].
    pub cache: CachePolicy,
    /// 2026-07-28: hand a result back as it came — an `input_required` one included,
    /// whatever its `resultType` — instead of answering the server's questions with
    /// the session's handlers and retrying: for a caller that answers them itself (a
    /// bridge, whose own client retries with the answers).
    pub pass_input_required: bool,
    /// A mark of the caller's own for this request, kept with it (and with each retry
    /// of it, under whatever id) and handed back with any question the server asks
    /// about it: [`crate::input::related_tag`] reads it in the question's handler. A
    /// caller that runs many requests on one session (a bridge) tells by it whose
    /// question it is, with nothing to do per request but this number.
    pub tag: Option<u64>,
}

/// Cancels a request if its future is dropped before the answer came, and gives its
/// slot back.
struct InFlight<'a> {
    shared: &'a Driver,
    id: i64,
    slot: u32,
    armed: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.write_with(|st| {
                st.abandon(self.id, self.slot, "the host stopped waiting");
            });
        }
    }
}

/// Why a request could not be sent, as the host sees it.
pub(super) fn not_sent(why: NotSent, closed: Option<Error>) -> Error {
    match why {
        NotSent::Refused(refusal) => Error::Refused(refusal),
        _ => closed.unwrap_or(Error::Closed),
    }
}

impl Session {
    /// Sends a request and decodes its result into `T`.
    ///
    /// ```no_run
    /// # async fn f(session: &capable::Session) -> Result<(), capable::Error> {
    /// use capable::{Method, RequestOptions};
    /// let page: serde_json::Value = session
    ///     .request(Method::ListPrompts, &serde_json::json!({}), RequestOptions::default())
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn request<P, T>(
        &self,
        method: Method,
        params: &P,
        options: RequestOptions,
    ) -> Result<T, Error>
    where
        P: Params + ?Sized,
        T: DeserializeOwned,
    {
        let payload = self.request_payload(method, params, options).await?;
        decode(method, &payload)
    }

    /// Sends a request and returns its raw result.
    ///
    /// In the modern era the result's `resultType` is checked (absent means
    /// `complete`; an unknown value is an error) and `input_required` results are
    /// answered with the host's handlers and retried with a new id, at most
    /// [`MAX_INPUT_ROUNDS`](super::MAX_INPUT_ROUNDS) times.
    pub async fn request_payload<P>(
        &self,
        method: Method,
        params: &P,
        options: RequestOptions,
    ) -> Result<Payload, Error>
    where
        P: Params + ?Sized,
    {
        Ok(self.request_answer(method, params, options).await?.payload)
    }

    /// [`Session::request_payload`], with the time the final answer arrived.
    pub(super) async fn request_answer<P>(
        &self,
        method: Method,
        params: &P,
        mut options: RequestOptions,
    ) -> Result<Answer, Error>
    where
        P: Params + ?Sized,
    {
        // No key in the legacy era, where nothing is kept: a read there costs what a
        // bypassing one does.
        let key = match options.cache {
            CachePolicy::Use | CachePolicy::Refresh
                if capable_core::internal::cache::applies_to(self.era()) =>
            {
                CacheKey::new(method, params)
            }
            _ => None,
        };
        if let (Some(key), CachePolicy::Use) = (&key, options.cache) {
            if let Some(hit) = self.cached(method, key)? {
                return Ok(hit);
            }
        }
        let answer = self
            .exchange_keyed(method, params, &mut options, key)
            .await?;
        if !capable_core::internal::input_rounds::applies_to(self.era())
            || options.pass_input_required
        {
            return Ok(answer);
        }
        self.complete_input(method, params, answer, &mut options)
            .await
    }

    /// A fresh cached answer to `method` under `key`, after the same gate check the
    /// request would pass.
    fn cached(&self, method: Method, key: &CacheKey) -> Result<Option<Answer>, Error> {
        let now = tokio::time::Instant::now().into_std();
        let st = self.shared.lock();
        st.conn.check(method).map_err(Error::Refused)?;
        Ok(st.conn.cached(key, now).map(|c| Answer {
            payload: c.payload.clone(),
            arrived: c.received_wall,
        }))
    }

    /// One request/response exchange: gate, send, wait (timeout, progress), route.
    pub(super) async fn exchange<P>(
        &self,
        method: Method,
        params: &P,
        options: &mut RequestOptions,
    ) -> Result<Answer, Error>
    where
        P: Params + ?Sized,
    {
        self.exchange_keyed(method, params, options, None).await
    }

    /// [`Session::exchange`], keeping the answer under `key` when its hints allow.
    async fn exchange_keyed<P>(
        &self,
        method: Method,
        params: &P,
        options: &mut RequestOptions,
        key: Option<CacheKey>,
    ) -> Result<Answer, Error>
    where
        P: Params + ?Sized,
    {
        let (ptx, mut prx) = match options.on_progress {
            Some(_) => {
                let (t, r) = mpsc::unbounded_channel();
                (Some(t), Some(r))
            }
            None => (None, None),
        };
        // The deadline is kept by the connection and enforced by the session's one
        // timer task: no timer per request.
        let timing = Timing::new()
            .with_timeout(options.timeout)
            .with_progress(prx.is_some());
        let now = tokio::time::Instant::now().into_std();
        // This task's waker goes into the request's slot as it is issued: the first
        // wait for the outcome need not take the lock again to leave it there.
        let waker = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
        // The refusal is left here, not returned: what the lock's closure returns is
        // moved out of it, and an id is smaller than an error.
        let mut refused = None;
        let (issued, started) = self.shared.write_starting(|st| {
            let mut waiter = st.slots.open(Some(waker), ptx);
            waiter.tag = options.tag;
            let slot = waiter.slot();
            match st
                .conn
                .request(method, params, timing, waiter, now, &mut st.out)
            {
                Ok(id) => {
                    if let Some(key) = key {
                        st.conn.cache_answer(id, key);
                    }
                    Some((id, slot))
                }
                Err((why, _)) => {
                    st.slots.release(slot);
                    refused = Some(not_sent(why, st.closed.clone()));
                    None
                }
            }
        });
        let Some((id, slot)) = issued else {
            // Nothing was queued, so nothing was written or started.
            debug_assert!(started.is_none());
            return Err(refused.unwrap_or(Error::Closed));
        };
        let mut in_flight = InFlight {
            shared: &self.shared,
            id,
            slot,
            armed: true,
        };
        // Work the write started may route the answer in the first poll, which must
        // then look for it.
        let outcome = match started {
            None => Outcome::registered(&self.shared, slot),
            Some(_) => Outcome::new(&self.shared, slot),
        };
        let mut answered = Driven::new(outcome, started);
        let outcome = match (prx.as_mut(), options.on_progress.as_mut()) {
            (Some(r), Some(cb)) => loop {
                tokio::select! {
                    biased;
                    res = &mut answered => {
                        // Progress sent just before the answer is still delivered, in order.
                        while let Ok(p) = r.try_recv() {
                            cb(&p);
                        }
                        break res;
                    }
                    Some(p) = r.recv() => cb(&p),
                }
            },
            _ => (&mut answered).await,
        };
        answered.finish(outcome.is_ok());
        in_flight.armed = false;
        outcome
    }
}

/// Decodes a `resources/read` result (its usual layout read directly, see
/// [`ReadResourceResult::from_payload`]).
pub(super) fn decode_read(
    method: Method,
    payload: &Payload,
) -> Result<capable_core::model::ReadResourceResult, Error> {
    capable_core::model::ReadResourceResult::from_payload_map_err(payload, |e| {
        Error::MalformedResult {
            method,
            detail: e.to_string(),
        }
    })
}

/// Decodes a result into the one type its caller expects.
pub(super) fn decode<T: DeserializeOwned>(method: Method, payload: &Payload) -> Result<T, Error> {
    payload.decode::<T>().map_err(|e| Error::MalformedResult {
        method,
        detail: e.to_string(),
    })
}
