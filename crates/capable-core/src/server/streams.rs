//! Where a Streamable HTTP server's messages go: each client request's own stream (the
//! SSE response to the POST that carried it), or the standalone stream (the client's
//! `GET`); every event numbered, and the recent ones kept for a legacy client that
//! comes back with `Last-Event-ID`.
//!
//! | the server writes ([`Outgoing`]) | it goes on |
//! |---|---|
//! | the answer to request r | r's stream, which it ends |
//! | a notification that belongs to request r (progress, a log line while it runs, an item of the listen stream r opened) | r's stream |
//! | its own request about request r (a question asked while r runs) | r's stream |
//! | anything else (a list change, an update, its own request, a cancellation of it) | the standalone stream |
//!
//! An event's id names its stream (`{stream}-{n}`, `n` counting every event), so that
//! a client resuming with `Last-Event-ID` gets what it missed of that stream, and only
//! of it (2025-11-25: "event IDs SHOULD encode the stream"). Several servers that each
//! continue one client's session (gateway replicas) number their events alike: each
//! tags its ids ([`Streams::tagged`], `{tag}.{stream}-{n}`), so that an id another
//! gave — whose stream and count mean something else here — is no id of these
//! streams, never a resumption of the wrong events. A 2026-07-28 server keeps
//! nothing: that revision has no resumption ([`Streams::new`] with nothing to keep).

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;

use crate::jsonrpc::RequestId;
use crate::outbox::{Outbox, Outgoing};

/// The standalone stream: the client's `GET`.
pub const STANDALONE: u64 = 0;

/// One message, as the event it is on its stream.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamEvent {
    /// The stream it goes on.
    pub stream: u64,
    /// Its SSE `id` (`{stream}-{n}`).
    pub id: String,
    /// The message (one JSON-RPC line, without its newline).
    pub data: Bytes,
    /// It answers the last request of its stream: the stream ends after it.
    pub ends: bool,
}

/// The streams of one client (see the module documentation).
#[derive(Debug)]
pub struct Streams {
    next_stream: u64,
    next: u64,
    /// The stream each request in flight answers on.
    by_request: HashMap<RequestId, u64, foldhash::fast::RandomState>,
    /// The last events, for resumption, and their bytes in all.
    kept: VecDeque<StreamEvent>,
    kept_bytes: usize,
    keep: usize,
    keep_bytes: usize,
    /// What every id starts with (`{tag}.`), or nothing.
    tag: String,
}

impl Streams {
    /// Streams that keep the last `keep` events, at most `keep_bytes` of them, for
    /// resumption (0: none, as 2026-07-28 wants).
    pub fn new(keep: usize, keep_bytes: usize) -> Streams {
        Streams {
            next_stream: STANDALONE + 1,
            next: 0,
            by_request: HashMap::default(),
            kept: VecDeque::new(),
            kept_bytes: 0,
            keep,
            keep_bytes,
            tag: String::new(),
        }
    }

    /// Every event id starts with `tag` and a dot: the ids of this server's streams,
    /// told apart from those of another server continuing the same session (see the
    /// module documentation). `tag` should be random, and holds neither `.` nor `-`.
    pub fn tagged(mut self, tag: &str) -> Streams {
        self.tag = format!("{tag}.");
        self
    }

    /// A POST that carries `request`: the stream its messages go on.
    pub fn open(&mut self, request: RequestId) -> u64 {
        let stream = self.next_stream;
        self.next_stream += 1;
        self.by_request.insert(request, stream);
        stream
    }

    /// The id of a priming event for `stream` (2025-11-25: an event with an id and no
    /// data, sent first, so that a client whose connection drops before anything else
    /// came can resume the stream): resuming after it gives every event of the stream.
    pub fn priming(&self, stream: u64) -> String {
        format!("{}{stream}-{}", self.tag, self.next)
    }

    /// Whether `stream` still waits for an answer.
    pub fn is_open(&self, stream: u64) -> bool {
        self.by_request.values().any(|s| *s == stream)
    }

    /// The request `request` will not be answered on its stream after all (its
    /// client gave up on it): whatever comes of it goes nowhere.
    pub fn forget(&mut self, request: &RequestId) {
        self.by_request.remove(request);
    }

    /// Every message of `out`, as the event it is on its stream, in order (each kept
    /// for resumption, within the bounds).
    pub fn route(&mut self, out: &Outbox) -> Vec<StreamEvent> {
        let mut events = Vec::with_capacity(out.count());
        for (what, line) in out.messages() {
            let (stream, ends) = match &what {
                Outgoing::Response { id } => match self.by_request.remove(id) {
                    Some(stream) => (stream, !self.is_open(stream)),
                    // An answer to nothing in flight goes nowhere.
                    None => continue,
                },
                Outgoing::Related { request, .. }
                | Outgoing::ServerRequest {
                    related: Some(request),
                    ..
                } => (
                    self.by_request.get(request).copied().unwrap_or(STANDALONE),
                    false,
                ),
                _ => (STANDALONE, false),
            };
            self.next += 1;
            let event = StreamEvent {
                stream,
                id: format!("{}{stream}-{}", self.tag, self.next),
                data: Bytes::copy_from_slice(line),
                ends,
            };
            self.keep(&event);
            events.push(event);
        }
        events
    }

    fn keep(&mut self, event: &StreamEvent) {
        if self.keep == 0 {
            return;
        }
        self.kept_bytes += event.data.len();
        self.kept.push_back(event.clone());
        while self.kept.len() > self.keep || self.kept_bytes > self.keep_bytes {
            match self.kept.pop_front() {
                Some(old) => self.kept_bytes -= old.data.len(),
                None => break,
            }
        }
    }

    /// What a client that comes back with `Last-Event-ID: last` missed: the stream it
    /// was on and the events of that stream after it still kept. `None` for an id
    /// that is not one of these streams' (another tag's among them).
    pub fn resume(&self, last: &str) -> Option<(u64, Vec<StreamEvent>)> {
        let last = last.strip_prefix(self.tag.as_str())?;
        let (stream, n) = last.split_once('-')?;
        let (stream, n) = (stream.parse::<u64>().ok()?, n.parse::<u64>().ok()?);
        if stream >= self.next_stream || n > self.next {
            return None;
        }
        let after = format!("{}{stream}-", self.tag);
        let missed = self
            .kept
            .iter()
            .filter(|e| e.stream == stream)
            .filter(|e| {
                e.id.strip_prefix(&after)
                    .and_then(|k| k.parse::<u64>().ok())
                    > Some(n)
            })
            .cloned()
            .collect();
        Some((stream, missed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ServerMethod;
    use serde_json::json;

    fn out() -> Outbox {
        let mut out = Outbox::new();
        out.write_related(
            "notifications/progress",
            Some(&json!({"progressToken": 1, "progress": 1})),
            &RequestId::Number(1),
        );
        out.write_notification("notifications/tools/list_changed", Some(&json!({})));
        out.write_result(&RequestId::Number(1), &json!({"content": []}));
        out.write_result(&RequestId::Number(9), &json!({}));
        out
    }

    #[test]
    fn each_message_goes_on_the_stream_of_the_request_it_belongs_to() {
        let mut streams = Streams::new(16, 1 << 20);
        let s = streams.open(RequestId::Number(1));
        assert!(streams.is_open(s));
        let events = streams.route(&out());
        let placed: Vec<(u64, bool)> = events.iter().map(|e| (e.stream, e.ends)).collect();
        // Progress and the answer on the request's stream, which the answer ends; the
        // list change on the standalone one; an answer to nothing in flight nowhere.
        assert_eq!(placed, [(s, false), (STANDALONE, false), (s, true)]);
        assert_eq!(events[0].id, format!("{s}-1"));
        assert!(!streams.is_open(s));
        assert!(events[2]
            .data
            .starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\""));
    }

    #[test]
    fn a_question_about_a_request_goes_on_its_stream_any_other_on_the_standalone() {
        let mut streams = Streams::new(16, 1 << 20);
        let s = streams.open(RequestId::Number(1));
        let mut out = Outbox::new();
        let ask = json!({"message": "Sure?", "requestedSchema": {"type": "object"}});
        let about = RequestId::Number(1);
        out.write_server_request(0, ServerMethod::Elicit, &ask, Some(&about));
        out.write_server_request(1, ServerMethod::ListRoots, &json!({}), None);
        // About a request no stream waits on: the standalone stream.
        out.write_server_request(2, ServerMethod::Elicit, &ask, Some(&RequestId::Number(7)));
        let placed: Vec<u64> = streams.route(&out).iter().map(|e| e.stream).collect();
        assert_eq!(placed, [s, STANDALONE, STANDALONE]);
        assert!(
            streams.is_open(s),
            "a question does not end its request's stream"
        );
    }

    #[test]
    fn a_client_that_comes_back_gets_what_it_missed_of_its_stream_only() {
        let mut streams = Streams::new(16, 1 << 20);
        let s = streams.open(RequestId::Number(1));
        let events = streams.route(&out());
        let (stream, missed) = streams.resume(&events[0].id).expect("ours");
        assert_eq!(stream, s);
        assert_eq!(missed, vec![events[2].clone()]);
        let (stream, missed) = streams.resume(&format!("{STANDALONE}-0")).expect("ours");
        assert_eq!((stream, missed), (STANDALONE, vec![events[1].clone()]));
        assert!(streams.resume("99-1").is_none());
        assert!(streams.resume("garbage").is_none());
        // Nothing is kept for a 2026-07-28 client.
        let mut modern = Streams::new(0, 0);
        modern.open(RequestId::Number(1));
        let events = modern.route(&out());
        assert_eq!(modern.resume(&events[0].id).unwrap().1, vec![]);
    }

    #[test]
    fn a_client_that_comes_back_after_the_priming_event_gets_the_whole_stream() {
        let mut streams = Streams::new(16, 1 << 20);
        streams.route(&out());
        let s = streams.open(RequestId::Number(1));
        let priming = streams.priming(s);
        let events = streams.route(&out());
        let (stream, missed) = streams.resume(&priming).expect("ours");
        assert_eq!(stream, s);
        assert_eq!(missed, vec![events[0].clone(), events[2].clone()]);
    }

    #[test]
    fn what_is_kept_is_bounded_oldest_first() {
        let mut streams = Streams::new(2, 1 << 20);
        let mut out = Outbox::new();
        for _ in 0..3 {
            out.write_notification("notifications/tools/list_changed", Some(&json!({})));
        }
        let events = streams.route(&out);
        let (_, missed) = streams.resume(&format!("{STANDALONE}-0")).unwrap();
        assert_eq!(missed, events[1..].to_vec());
    }

    #[test]
    fn a_tagged_servers_ids_are_its_own_and_another_servers_resume_nothing() {
        let mut ours = Streams::new(8, 1 << 20).tagged("a1");
        let mut theirs = Streams::new(8, 1 << 20).tagged("b2");
        let mut out = Outbox::new();
        out.write_notification("notifications/tools/list_changed", Some(&json!({})));
        out.write_notification("notifications/tools/list_changed", Some(&json!({})));
        let events = ours.route(&out);
        theirs.route(&out);
        assert_eq!(events[0].id, format!("a1.{STANDALONE}-1"));
        assert_eq!(ours.priming(STANDALONE), format!("a1.{STANDALONE}-2"));
        let (stream, missed) = ours.resume(&events[0].id).expect("ours");
        assert_eq!((stream, missed), (STANDALONE, vec![events[1].clone()]));
        // The same numbers under another replica's tag, or under none: not ours.
        assert!(ours.resume(&format!("b2.{STANDALONE}-0")).is_none());
        assert!(ours.resume(&format!("{STANDALONE}-0")).is_none());
        assert!(theirs.resume(&events[0].id).is_none());
    }
}
