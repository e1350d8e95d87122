//! The page's one live stream: every event (a message on the wire, a state change, a
//! watch's revision, a violation, progress) numbered, kept in a bounded ring, and sent
//! as Server-Sent Events on `GET /api/events` (`handlers/events.rs`).
//!
//! Each event has a monotonically increasing `id:`. A browser that loses the stream
//! reconnects with `Last-Event-ID` and gets what it missed from the ring (what fell
//! out of the ring is gone; the page re-reads `/api/servers` for the state). A fresh
//! stream (no `Last-Event-ID`) starts with the whole ring, so a reloaded page shows
//! the message log it had. A slow reader never slows a server down: it skips ahead
//! through the ring.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};

use capable::internal::secrets::Secrets;
use futures_util::stream::{self, Stream};
use serde_json::{json, Value};
use tokio::sync::broadcast;

/// One numbered event: its SSE `event:` name and JSON data.
#[derive(Clone, Debug)]
pub struct Numbered {
    /// The `id:`.
    pub id: u64,
    /// The `event:`: `msg` (a message on the wire), `state`, `lists`, `violation`,
    /// `notice`, `stderr` (of a server), `watch`, `progress`, `task`, `elicit`,
    /// `reloaded` and `reload_failed` (the config read anew).
    pub kind: &'static str,
    /// The `data:`.
    pub data: Arc<str>,
}

/// The run's secrets, cut out of every event and answer: shared by the bus and the
/// answers' scrubbing, and grown by a reload whose new servers bring their own.
#[derive(Clone, Default)]
pub struct Scrubber(Arc<RwLock<Secrets>>);

impl Scrubber {
    /// These secrets.
    pub fn new(secrets: Secrets) -> Scrubber {
        Scrubber(Arc::new(RwLock::new(secrets)))
    }

    /// `more` kept too, from now on.
    pub fn add(&self, more: &Secrets) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .extend(more);
    }

    /// Whether there is nothing to cut.
    pub fn is_empty(&self) -> bool {
        self.0.read().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// `text` without any secret.
    pub fn scrub(&self, text: &str) -> String {
        let secrets = self.0.read().unwrap_or_else(|e| e.into_inner());
        secrets.scrub(text).into_owned()
    }

    /// `bytes` without any secret.
    pub fn scrub_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let secrets = self.0.read().unwrap_or_else(|e| e.into_inner());
        secrets.scrub_bytes(bytes).into_owned()
    }
}

struct Ring {
    next: u64,
    kept: VecDeque<Numbered>,
    bytes: usize,
}

/// The event bus: publish from anywhere, follow from `/api/events`.
#[derive(Clone)]
pub struct Bus {
    ring: Arc<Mutex<Ring>>,
    live: broadcast::Sender<Numbered>,
    capacity: usize,
    max_bytes: usize,
    secrets: Scrubber,
}

impl Bus {
    /// A bus that keeps the last `capacity` events, at most `max_bytes` of them, each
    /// without `secrets`.
    pub fn new(capacity: usize, max_bytes: usize, secrets: Scrubber) -> Bus {
        Bus {
            ring: Arc::new(Mutex::new(Ring {
                next: 1,
                kept: VecDeque::new(),
                bytes: 0,
            })),
            live: broadcast::channel(256).0,
            capacity: capacity.max(1),
            max_bytes,
            secrets,
        }
    }

    /// Publishes an event; `data` gets `"at"` (RFC 3339, now) when it is an object
    /// without one.
    pub fn publish(&self, kind: &'static str, mut data: Value) {
        if let Value::Object(map) = &mut data {
            map.entry("at").or_insert_with(|| json!(now()));
        }
        let text = self.secrets.scrub(&data.to_string());
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let event = Numbered {
            id: ring.next,
            kind,
            data: text.into(),
        };
        ring.next += 1;
        ring.bytes += event.data.len();
        ring.kept.push_back(event.clone());
        while ring.kept.len() > self.capacity
            || (ring.bytes > self.max_bytes && ring.kept.len() > 1)
        {
            if let Some(old) = ring.kept.pop_front() {
                ring.bytes -= old.data.len();
            }
        }
        // Sent under the lock: followers see events in id order.
        let _ = self.live.send(event);
    }

    /// The kept events after `after`, in order.
    pub fn since(&self, after: u64) -> Vec<Numbered> {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        ring.kept.iter().filter(|e| e.id > after).cloned().collect()
    }

    /// The stream for one follower, starting after event `after` (0: everything kept).
    pub fn follow(&self, after: u64) -> impl Stream<Item = Numbered> + Send + 'static {
        // Subscribed before the replay is taken, so nothing falls between the two.
        let live = self.live.subscribe();
        let replay: VecDeque<Numbered> = self.since(after).into();
        let last = replay.back().map_or(after, |e| e.id);
        let bus = self.clone();
        stream::unfold(
            (replay, live, last, bus),
            |(mut replay, mut live, mut last, bus)| async move {
                loop {
                    if let Some(event) = replay.pop_front() {
                        last = event.id;
                        return Some((event, (replay, live, last, bus)));
                    }
                    match live.recv().await {
                        Ok(event) if event.id <= last => continue,
                        Ok(event) => {
                            last = event.id;
                            return Some((event, (replay, live, last, bus)));
                        }
                        // Fell behind: catch up from the ring.
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            replay = bus.since(last).into();
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            },
        )
    }
}

/// Now, RFC 3339 in UTC with milliseconds.
pub fn now() -> String {
    capable::internal::time::rfc3339(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn a_follower_resumes_after_the_last_event_it_saw() {
        let bus = Bus::new(3, 1 << 20, Scrubber::default());
        for n in 0..5 {
            bus.publish("msg", json!({ "n": n }));
        }
        // Only the last three are kept: ids 3, 4, 5.
        let ids: Vec<u64> = bus.since(0).iter().map(|e| e.id).collect();
        assert_eq!(ids, [3, 4, 5]);
        let mut after_4 = Box::pin(bus.follow(4));
        assert_eq!(after_4.next().await.unwrap().id, 5);
        bus.publish("state", json!({}));
        let next = after_4.next().await.unwrap();
        assert_eq!((next.id, next.kind), (6, "state"));
        assert!(next.data.contains("\"at\""));
    }

    #[test]
    fn the_ring_is_bounded_by_bytes_too() {
        let bus = Bus::new(100, 1000, Scrubber::default());
        for _ in 0..10 {
            bus.publish("msg", json!({ "text": "x".repeat(300) }));
        }
        let kept = bus.since(0);
        assert!(kept.len() <= 3, "{}", kept.len());
        assert_eq!(kept.last().map(|e| e.id), Some(10), "the newest is kept");
    }
}
