//! `resources.subscribe`, probed on the first listed resource: legacy
//! `resources/subscribe` then `resources/unsubscribe`; modern, a `subscriptions/listen`
//! stream with `resourceSubscriptions: [uri]`, which must be acknowledged first
//! (`notifications/subscriptions/acknowledged`) and is then closed.

use capable_core::{ListenFilter, Method, NotificationMethod};
use serde_json::Value;

use super::probe::Auditor;
use super::report::{FindingKind, Outcome};
use crate::session::ListenEvent;
use capable_core::internal::time::humanize;

const SUBSCRIBE: &str = "resources.subscribe";
const LISTEN: &str = "open and close a listen stream";
const ACKNOWLEDGED: NotificationMethod = NotificationMethod::SubscriptionsAcknowledged;

impl Auditor<'_> {
    /// Subscribes to `uri` and ends the subscription. A broken subscribe leaves
    /// nothing to end: the unsubscribe is skipped, never sent.
    pub(super) async fn subscribe_legacy(&mut self, uri: &str) {
        let since = self.rec.len();
        let answer = self
            .session
            .subscribe(uri)
            .await
            .map(|()| Value::Object(Default::default()));
        if self
            .judge(
                SUBSCRIBE,
                "subscribe",
                Method::Subscribe,
                since,
                answer,
                "EmptyResult",
            )
            .is_err()
        {
            self.check(
                SUBSCRIBE,
                "unsubscribe",
                Some("resources/unsubscribe"),
                Outcome::Skipped,
                "no subscription to end",
            );
            return;
        }
        self.check(
            SUBSCRIBE,
            "subscribe",
            Some("resources/subscribe"),
            Outcome::Ok,
            format!("subscribed to {uri}"),
        );
        let since = self.rec.len();
        let answer = self
            .session
            .unsubscribe(uri)
            .await
            .map(|()| Value::Object(Default::default()));
        if self
            .judge(
                SUBSCRIBE,
                "unsubscribe",
                Method::Unsubscribe,
                since,
                answer,
                "EmptyResult",
            )
            .is_ok()
        {
            self.check(
                SUBSCRIBE,
                "unsubscribe",
                Some("resources/unsubscribe"),
                Outcome::Ok,
                "subscription ended",
            );
        }
    }

    /// Opens a listen stream for `uri`, waits up to the audit's `ack_wait` for its
    /// acknowledgement, and closes it.
    pub(super) async fn subscribe_modern(&mut self, uri: &str) {
        let m = Method::Listen.as_str();
        let filter = ListenFilter {
            resource_subscriptions: vec![uri.to_owned()],
            ..Default::default()
        };
        let since = self.rec.len();
        let mut listener = match self.session.listen(&filter).await {
            Ok(l) => l,
            Err(e) => {
                let _ = self.judge(
                    SUBSCRIBE,
                    LISTEN,
                    Method::Listen,
                    since,
                    Err(e),
                    "EmptyResult",
                );
                return;
            }
        };
        let ack = tokio::time::timeout(self.ack_wait, async {
            loop {
                match listener.recv().await {
                    Ok(Some(ListenEvent::Acknowledged(v))) => return Ok(Some(v)),
                    Ok(Some(_)) => continue,
                    Ok(None) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
        })
        .await;
        listener.close();
        let (request, _) = self.rec.exchange(m, since);
        match ack {
            Ok(Ok(Some(ack))) => {
                let message = self
                    .rec
                    .received(ACKNOWLEDGED, since)
                    .unwrap_or(Value::Null);
                let honoured = ack["resourceSubscriptions"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|u| u.as_str() == Some(uri)));
                match self
                    .schema
                    .validate("SubscriptionsAcknowledgedNotification", &message)
                {
                    Err(why) => self.violation(
                        SUBSCRIBE,
                        LISTEN,
                        m,
                        FindingKind::MalformedResult,
                        why,
                        request,
                        message,
                    ),
                    Ok(()) if honoured => self.check(
                        SUBSCRIBE,
                        LISTEN,
                        Some(m),
                        Outcome::Ok,
                        format!("acknowledged resourceSubscriptions [{uri}], then closed"),
                    ),
                    Ok(()) => self.check(
                        SUBSCRIBE,
                        LISTEN,
                        Some(m),
                        Outcome::Unverifiable,
                        format!(
                            "acknowledged without {uri} ({ack}); the server may refuse \
                             subscriptions per resource"
                        ),
                    ),
                }
            }
            Ok(Ok(None)) => {
                let (request, response) = self.rec.exchange(m, since);
                self.violation(
                    SUBSCRIBE,
                    LISTEN,
                    m,
                    FindingKind::NoAcknowledgement,
                    "the server completed the listen request without acknowledging it first"
                        .to_owned(),
                    request,
                    response,
                );
            }
            Ok(Err(e)) => {
                let _ = self.judge(
                    SUBSCRIBE,
                    LISTEN,
                    Method::Listen,
                    since,
                    Err(e),
                    "EmptyResult",
                );
            }
            Err(_) => self.violation(
                SUBSCRIBE,
                LISTEN,
                m,
                FindingKind::NoAcknowledgement,
                format!("no {ACKNOWLEDGED} within {}", humanize(self.ack_wait)),
                request,
                Value::Null,
            ),
        }
    }
}
