//! `subscriptions/listen` (modern): a long-lived request whose notifications — each
//! carrying the request's id as its `subscriptionId` — reach one [`Listener`].

use std::sync::Arc;

use capable_core::ListenFilter;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::driver::{Driver, Outcome};
use crate::error::Error;
use crate::events::ServerNotification;

use super::exchange::not_sent;
use super::Session;

/// What arrives on a `subscriptions/listen` stream.
#[derive(Clone, Debug)]
pub enum ListenEvent {
    /// `notifications/subscriptions/acknowledged`: the subset of the filter the server
    /// honours.
    Acknowledged(Value),
    /// A notification on the stream (`notifications/resources/updated`, …).
    Notification(ServerNotification),
}

impl Session {
    /// `subscriptions/listen` (modern): opens a stream of the notifications `filter`
    /// asks for. Each filter field needs its capability flag (`resourceSubscriptions` ←
    /// `resources.subscribe`, `resourcesListChanged` ← `resources.listChanged`, …); a
    /// field the server did not declare is refused locally and nothing is sent.
    /// Dropping the [`Listener`] (or [`Listener::close`]) ends the stream with
    /// `notifications/cancelled`. A listen stream never times out.
    ///
    /// ```no_run
    /// # async fn f(session: &capable::Session) -> Result<(), capable::Error> {
    /// use capable::{ListenEvent, ListenFilter};
    /// let filter = ListenFilter { tools_list_changed: true, ..Default::default() };
    /// let mut stream = session.listen(&filter).await?; // refused unless tools.listChanged
    /// while let Some(event) = stream.recv().await? {
    ///     match event {
    ///         ListenEvent::Acknowledged(honoured) => println!("the server honours {honoured}"),
    ///         ListenEvent::Notification(n) => println!("{}", n.method),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn listen(&self, filter: &ListenFilter) -> Result<Listener, Error> {
        let (etx, events) = mpsc::channel(self.options.notification_capacity.max(1));
        let now = tokio::time::Instant::now().into_std();
        let (id, slot) = self.shared.write_with(|st| {
            let waiter = st.slots.open(None, None);
            let slot = waiter.slot();
            let id = match st.conn.listen(filter, waiter, now, &mut st.out) {
                Ok(id) => id,
                Err((why, _)) => {
                    st.slots.release(slot);
                    return Err(not_sent(why, st.closed.clone()));
                }
            };
            // Registered before the request can leave: the acknowledgement cannot
            // arrive before its listener exists.
            st.listeners.insert(id, etx);
            Ok::<(i64, u32), Error>((id, slot))
        })?;
        Ok(Listener {
            shared: self.shared.clone(),
            id,
            slot,
            events,
            ended: false,
        })
    }
}

/// An open `subscriptions/listen` stream. Dropping it (or [`Listener::close`]) sends
/// `notifications/cancelled` for the listen request.
pub struct Listener {
    shared: Arc<Driver>,
    id: i64,
    /// Where the listen request's end waits (see `driver/outcome.rs`).
    slot: u32,
    events: mpsc::Receiver<ListenEvent>,
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
            end = Outcome::new(&self.shared, self.slot) => {
                self.ended = true;
                end.map(|_| None)
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
            st.abandon(self.id, self.slot, "the host closed the subscription");
        });
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.cancel();
    }
}
