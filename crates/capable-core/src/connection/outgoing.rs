//! Requests: every one passes the gate, gets the next id, goes out as one line (with
//! the `_meta` envelope in the modern era) and is registered with its waiter and
//! deadline. A refused request writes nothing.

use std::time::Instant;

use crate::config::GatePolicy;
use crate::gating::{self, ListenFilter};
use crate::jsonrpc::{Params, RequestId};
use crate::method::Method;
use crate::model::{ListenFilterWire, ListenParams};
use crate::outbox::Outbox;
use crate::version::Era;

use super::deadlines::{Timeout, Timing};
use super::{Connection, NotSent, Pending};

impl<W> Connection<W> {
    /// Issues a request at `now`: gate check, id, one line written to `out`, waiter and
    /// deadline registered. When it is not sent nothing is written and the waiter is
    /// handed back.
    ///
    /// With `timing.progress` the request asks for progress notifications; its token
    /// is its id.
    pub fn request<P: Params + ?Sized>(
        &mut self,
        method: Method,
        params: &P,
        timing: Timing,
        waiter: W,
        now: Instant,
        out: &mut Outbox,
    ) -> Result<i64, (NotSent, W)> {
        if self.closed {
            return Err((NotSent::Closed, waiter));
        }
        if let Err(refusal) = self.check(method) {
            return Err((refusal.into(), waiter));
        }
        Ok(self.write_request(method, params, timing, waiter, now, out))
    }

    /// Issues `subscriptions/listen` (modern), checking every filter field against its
    /// flag. The listen stream's notifications carry this request's id as
    /// `io.modelcontextprotocol/subscriptionId`. It never times out: it lasts until
    /// the host cancels it or the server ends it.
    pub fn listen(
        &mut self,
        filter: &ListenFilter,
        waiter: W,
        now: Instant,
        out: &mut Outbox,
    ) -> Result<i64, (NotSent, W)> {
        if self.closed {
            return Err((NotSent::Closed, waiter));
        }
        if let Err(refusal) = self.check(Method::Listen) {
            return Err((refusal.into(), waiter));
        }
        if self.config.gate_policy == GatePolicy::Strict {
            if let Err(refusal) = gating::check_listen(
                filter,
                self.negotiated.version,
                &self.negotiated.capabilities,
            ) {
                return Err((refusal.into(), waiter));
            }
        }
        let params = ListenParams {
            notifications: ListenFilterWire::from(filter),
        };
        let timing = Timing {
            timeout: Timeout::Never,
            progress: false,
        };
        Ok(self.write_request(Method::Listen, &params, timing, waiter, now, out))
    }

    fn write_request<P: Params + ?Sized>(
        &mut self,
        method: Method,
        params: &P,
        timing: Timing,
        waiter: W,
        now: Instant,
        out: &mut Outbox,
    ) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let start = out.len();
        let rid = RequestId::Number(id);
        if self.negotiated.era() == Era::Legacy && !timing.progress {
            out.write_request(&rid, method, params);
        } else {
            self.write_request_with_meta(out, &rid, method, params, timing.progress);
        }
        let deadline = self.deadline_for(timing, now);
        self.pending.insert(
            id,
            Pending {
                method,
                request: self.spares.copy(&out[start..]),
                waiter,
                deadline,
                progress: timing.progress,
                cache_key: None,
            },
        );
        id
    }

    fn write_request_with_meta<P: Params + ?Sized>(
        &self,
        out: &mut Outbox,
        id: &RequestId,
        method: Method,
        params: &P,
        progress: bool,
    ) {
        let mut meta: Vec<u8> = Vec::with_capacity(self.meta_members.len() + 64);
        meta.extend_from_slice(&self.meta_members);
        let mut member = |key: &str, value: &dyn erased::Json| {
            if !meta.is_empty() {
                meta.push(b',');
            }
            meta.extend_from_slice(serde_json::to_string(key).unwrap_or_default().as_bytes());
            meta.push(b':');
            value.write(&mut meta);
        };
        if progress {
            if let RequestId::Number(n) = id {
                member("progressToken", n);
            }
        }
        if let Some(level) = &self.log_level {
            member("io.modelcontextprotocol/logLevel", level);
        }
        let version = match self.negotiated.era() {
            Era::Modern => Some(self.negotiated.version),
            Era::Legacy => None,
        };
        out.write_request_with_meta(id, method, params, &meta, version);
    }
}

/// Writing heterogeneous `_meta` members without boxing serde.
mod erased {
    pub trait Json {
        fn write(&self, out: &mut Vec<u8>);
    }
    impl<T: serde::Serialize> Json for T {
        fn write(&self, out: &mut Vec<u8>) {
            if serde_json::to_writer(&mut *out, self).is_err() {
                out.extend_from_slice(b"null");
            }
        }
    }
}
