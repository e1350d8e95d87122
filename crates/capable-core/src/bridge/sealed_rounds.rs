//! Rounds that move between replicas: with a key the replicas share, the `requestState`
//! of each round a relay hands a 2026-07-28 host is a seal ([`RoundSeal`]), and a
//! retry a load balancer sends to a replica that does not hold the round's exchange is
//! carried on there — the way the 2026-07-28 era itself works, where a server keeps
//! nothing between a round and its retry.
//!
//! | the retry's `requestState` | what the relay does |
//! |---|---|
//! | not a seal (no key, or a server's own state) | as before: a round of this relay's by its mark, or none |
//! | a seal that does not open: changed, another deployment's or a retired key's, past its deadline, another caller's | refused (`-32602`), nothing sent to the server (behind a 2026-07-28 server, which gives rounds of its own, no state is opened: each is the server's) |
//! | a seal of a round this relay gave | the round's exchange goes on here ([`RoundSeal::state`] names it), as without a key |
//! | a seal of a round another relay gave (another replica; or this one's relay, gone since) | the retry must repeat the sealed request (its digest), else refused; then **carried on**: the request is sent to the server again, without `inputResponses` and `requestState` |
//! | the server asks, in a request carried on, a question the round asked (same method and params: the sealed digest; from the same server) | answered from the retry's `inputResponses` under that question's key, never put to the host again |
//! | the server asks, there, a question of an earlier round of the same request (it starts from the beginning again) | answered with the host's answer to it, sealed in the round's state ([`RoundSeal::answered`]; left out when too large, and the question is then a new round) |
//! | the server asks something else (or a question the retry left unanswered) | a new round to the host, as any question is |
//!
//! The round's exchange at the replica that gave it meets its deadline there (cancelled
//! at the server, as any round never come back to is), or is gone with a dead replica.
//! A relay carries each sealed state on once (remembered until it expires); "good once"
//! across replicas is the shell's: it spends each `requestState` in the store the
//! replicas share before the relay takes it. What a seal holds, and why
//! nothing of it is readable: [`RoundSeal`]. What is matched is decided here; the
//! seals' clock is the relay's (`Instant`s) read against one Unix time the shell gave
//! ([`Sealing::new`]), so scripted tests run it on a made-up clock.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::jsonrpc::{codes, RequestId, RpcError};
use crate::seal::{
    Caller, KeyRing, RoundSeal, RoundSealError, SealError, SealedAnswer, SealedQuestion, DIGEST_LEN,
};
use crate::Method;

/// The most retries carried on whose exchange is not open yet (the shell sends each on
/// at once; one it refused is forgotten with the oldest).
const MAX_PENDING: usize = 64;

/// The most sealed states carried on that are remembered as spent until they expire
/// (past it, the oldest is forgotten: the store is what keeps "good once" across
/// everything).
const MAX_SPENT: usize = 4096;

/// The most answers of earlier rounds kept for one request (and sealed in its next
/// round, when they fit).
const MAX_ANSWERED: usize = 32;

/// What a relay seals its rounds with: the replicas' key ring, the caller every request
/// of the relay is (a relay serves one caller), and the seals' clock.
#[derive(Clone, Debug)]
pub struct Sealing {
    ring: KeyRing,
    caller: Caller<'static>,
    /// An instant, and the Unix time (seconds) it was.
    epoch: (Instant, u64),
}

impl Sealing {
    /// Rounds sealed with `ring` for `caller`; `now` was `unix_now` seconds since the
    /// Unix epoch (the shell reads both clocks once).
    pub fn new(ring: KeyRing, caller: Caller<'static>, now: Instant, unix_now: u64) -> Sealing {
        Sealing {
            ring,
            caller,
            epoch: (now, unix_now),
        }
    }

    /// The Unix time (seconds) of `now`.
    fn unix(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.epoch.0).as_secs();
        self.epoch.1.saturating_add(since)
    }
}

/// One answer of a retry carried on, for a question the server is expected to ask again.
#[derive(Debug, Clone)]
struct Prefilled {
    server: Option<String>,
    asked: [u8; DIGEST_LEN],
    key: String,
    answer: Value,
}

/// A `requestState` read with the relay's key ([`SealedRounds::open`]).
#[derive(Debug)]
pub(super) enum Opened {
    /// Not a seal (or no key): the state is whatever else it is.
    NotSealed,
    /// A seal that does not open for this caller now: the retry gets this error.
    Refused(RpcError),
    /// A round's seal, opened.
    Round(RoundSeal<'static>),
}

/// What a retry carried on sends (see [`SealedRounds::carry_on`]).
#[derive(Debug)]
pub(super) struct CarryOn {
    /// The request's params as the server gets them again.
    pub params: Value,
    /// What the retry brought that was ignored, for the audit.
    pub notices: Vec<String>,
}

/// The sealing of a relay's rounds and the retries it carries on (see the module
/// documentation).
#[derive(Debug)]
pub(super) struct SealedRounds {
    sealing: Option<Sealing>,
    /// How long a round lasts: a seal opens as long.
    life: Duration,
    /// The answers of retries carried on, by host request, until their exchange opens.
    pending: VecDeque<(RequestId, Vec<Prefilled>)>,
    /// The same, by the exchange's token once it is open.
    carried: HashMap<u64, Vec<Prefilled>>,
    /// The sealed states carried on here (a digest of each), until they expire: each is
    /// carried on once.
    spent: VecDeque<([u8; DIGEST_LEN], u64)>,
    /// The questions of the round last sealed for each exchange: key and digest.
    given: HashMap<u64, Vec<(String, [u8; DIGEST_LEN])>>,
    /// The host's answers to each exchange's rounds so far (sealed into its next round).
    answered: HashMap<u64, Vec<Prefilled>>,
}

impl SealedRounds {
    /// No key yet; rounds last `life`.
    pub fn new(life: Duration) -> SealedRounds {
        SealedRounds {
            sealing: None,
            life,
            pending: VecDeque::new(),
            carried: HashMap::new(),
            spent: VecDeque::new(),
            given: HashMap::new(),
            answered: HashMap::new(),
        }
    }

    /// Seals rounds from now on as `sealing` says.
    pub fn set(&mut self, sealing: Sealing) {
        self.sealing = Some(sealing);
    }

    /// Whether rounds are sealed (they may move to another replica).
    pub fn is_on(&self) -> bool {
        self.sealing.is_some()
    }

    /// `round` (an `input_required` result of the relay's, its `requestState` the
    /// relay's own) of exchange `token` with its state sealed, given for a request of
    /// `method` with `params` to `server`, at `now`, with the host's answers to the
    /// exchange's rounds before (left out when they make the seal too large).
    /// Unchanged without a key, or when even that is too large (its retry is then taken
    /// on this replica only).
    pub fn seal(
        &mut self,
        token: u64,
        mut round: Value,
        method: Method,
        params: &Value,
        server: Option<&str>,
        now: Instant,
    ) -> Value {
        let Some(sealing) = &self.sealing else {
            return round;
        };
        let Some(state) = round.get("requestState").and_then(Value::as_str) else {
            return round;
        };
        let given: Vec<(String, [u8; DIGEST_LEN])> = round
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|asked| {
                asked
                    .iter()
                    .map(|(key, q)| {
                        let method = q.get("method").and_then(Value::as_str);
                        let params = q.get("params").unwrap_or(&Value::Null);
                        (
                            key.clone(),
                            question_digest(method.unwrap_or_default(), params),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let questions = given
            .iter()
            .map(|(key, asked)| SealedQuestion {
                key: key.as_str().into(),
                asked: *asked,
            })
            .collect();
        let answered: Vec<SealedAnswer<'_>> = self
            .answered
            .get(&token)
            .into_iter()
            .flatten()
            .map(|a| SealedAnswer {
                key: a.key.as_str().into(),
                asked: a.asked,
                answer: a.answer.to_string().into(),
            })
            .collect();
        let mut sealed = RoundSeal {
            expires_at: sealing
                .unix(now)
                .saturating_add(self.life.as_secs())
                .saturating_add(1),
            caller: sealing.caller.clone(),
            state: state.into(),
            server: server.map(Into::into),
            request: request_digest(method, params),
            questions,
            answered,
        };
        let mut state = sealed.seal(&sealing.ring);
        if matches!(state, Err(RoundSealError::TooLarge(_))) && !sealed.answered.is_empty() {
            sealed.answered.clear();
            state = sealed.seal(&sealing.ring);
        }
        if let Ok(state) = state {
            round["requestState"] = Value::String(state);
        }
        self.given.insert(token, given);
        round
    }

    /// The host's retry (`params`) of the round of exchange `token` was taken here: its
    /// answers are kept for the exchange's next round.
    pub fn took(&mut self, token: u64, params: &Value) {
        let Some(given) = self.given.remove(&token) else {
            return;
        };
        let Some(responses) = params.get("inputResponses").and_then(Value::as_object) else {
            return;
        };
        let answered = self.answered.entry(token).or_default();
        for (key, asked) in given {
            if let Some(answer) = responses.get(&key) {
                if answered.len() < MAX_ANSWERED {
                    answered.push(Prefilled {
                        server: None,
                        asked,
                        key,
                        answer: answer.clone(),
                    });
                }
            }
        }
    }

    /// The `requestState` of a retry's `params`, opened at `now` (see [`Opened`]).
    pub fn open(&self, params: &Value, now: Instant) -> Opened {
        let Some(sealing) = &self.sealing else {
            return Opened::NotSealed;
        };
        let Some(state) = params.get("requestState").and_then(Value::as_str) else {
            return Opened::NotSealed;
        };
        let mut buffer = Vec::new();
        let unix = sealing.unix(now);
        match RoundSeal::open(&sealing.ring, state, &sealing.caller, unix, &mut buffer) {
            Ok(round) => Opened::Round(round.into_owned()),
            Err(RoundSealError::Seal(SealError::Malformed)) => Opened::NotSealed,
            Err(e) => Opened::Refused(invalid(format!(
                "this requestState cannot be taken ({e}): a round is answered by the caller it \
                 was given to, before its deadline, with its requestState as it was given"
            ))),
        }
    }

    /// Whether a retry of `method` with `params` repeats the request `round` was given
    /// for.
    pub fn repeats(round: &RoundSeal<'_>, method: Method, params: &Value) -> bool {
        round.request == request_digest(method, params)
    }

    /// Host request `id` (its `params`), the retry of `round` of another relay's: what
    /// to send the server again, its answers kept for the questions the server asks
    /// again ([`answer`](Self::answer)) once its exchange opens. `Err`: the retry's
    /// `inputResponses` is no object, or it does not repeat the request.
    pub fn carry_on(
        &mut self,
        id: &RequestId,
        method: Method,
        params: &Value,
        round: RoundSeal<'static>,
        now: Instant,
    ) -> Result<CarryOn, RpcError> {
        if !Self::repeats(&round, method, params) {
            return Err(another_request());
        }
        let empty = Map::new();
        let responses = match params.get("inputResponses") {
            None => &empty,
            Some(Value::Object(responses)) => responses,
            Some(_) => return Err(invalid("inputResponses is not an object".into())),
        };
        // Spent once here (the seal as presented: another seal of the same round is
        // another state).
        let presented = params.get("requestState").and_then(Value::as_str);
        let mut h = Sha256::new();
        h.update(presented.unwrap_or_default().as_bytes());
        let digest = cut(h);
        let unix = self.sealing.as_ref().map_or(0, |s| s.unix(now));
        self.spent.retain(|(_, expires)| *expires > unix);
        if self.spent.iter().any(|(d, _)| *d == digest) {
            return Err(invalid(
                "this requestState was spent already: a round is answered once".into(),
            ));
        }
        if self.spent.len() == MAX_SPENT {
            self.spent.pop_front();
        }
        self.spent.push_back((digest, round.expires_at));
        let server = round.server.as_ref().map(|s| s.to_string());
        let mut answers = Vec::new();
        // The earlier rounds' answers first: the server asks those questions first.
        for a in &round.answered {
            if let Ok(answer) = serde_json::from_str::<Value>(&a.answer) {
                answers.push(Prefilled {
                    server: server.clone(),
                    asked: a.asked,
                    key: a.key.to_string(),
                    answer,
                });
            }
        }
        for q in &round.questions {
            if let Some(answer) = responses.get(&*q.key) {
                answers.push(Prefilled {
                    server: server.clone(),
                    asked: q.asked,
                    key: q.key.to_string(),
                    answer: answer.clone(),
                });
            }
        }
        let notices = responses
            .keys()
            .filter(|k| !round.questions.iter().any(|q| *q.key == **k))
            .map(|k| format!("the retry answered {k}, which its round did not ask: ignored"))
            .collect();
        if self.pending.len() == MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back((id.clone(), answers));
        let mut params = params.clone();
        if let Some(obj) = params.as_object_mut() {
            obj.remove("inputResponses");
            obj.remove("requestState");
        }
        Ok(CarryOn { params, notices })
    }

    /// Exchange `token` opened for host request `host`: a retry carried on keeps its
    /// answers under it.
    pub fn opened(&mut self, token: u64, host: Option<&RequestId>) {
        let Some(host) = host else { return };
        if let Some(at) = self.pending.iter().position(|(id, _)| id == host) {
            if let Some((_, answers)) = self.pending.remove(at) {
                // What the host answered so far goes into the exchange's next round too.
                let mut kept = answers.clone();
                kept.truncate(MAX_ANSWERED);
                self.answered.insert(token, kept);
                self.carried.insert(token, answers);
            }
        }
    }

    /// The host's answer, and its key, to a question (`method`, `params`) server
    /// `server` asks in exchange `token`, when it is one the retry carried on answered:
    /// each answer is given once.
    pub fn answer(
        &mut self,
        token: u64,
        server: Option<&str>,
        method: &str,
        params: &Value,
    ) -> Option<(String, Value)> {
        let answers = self.carried.get_mut(&token)?;
        let asked = question_digest(method, params);
        let at = answers
            .iter()
            .position(|a| a.asked == asked && a.server.as_deref() == server)?;
        let answer = answers.swap_remove(at);
        if answers.is_empty() {
            self.carried.remove(&token);
        }
        Some((answer.key, answer.answer))
    }

    /// Exchange `token` is over: what its retry brought is let go.
    pub fn forget(&mut self, token: u64) {
        self.carried.remove(&token);
        self.given.remove(&token);
        self.answered.remove(&token);
    }

    /// Everything let go (the relay ends).
    pub fn clear(&mut self) {
        self.pending.clear();
        self.carried.clear();
        self.given.clear();
        self.answered.clear();
    }
}

/// The error of a retry that repeats another request than its round's.
pub(super) fn another_request() -> RpcError {
    invalid(
        "this requestState was given for another request: a retry repeats its method and \
         params, adding inputResponses"
            .into(),
    )
}

/// A digest of a request as a retry must repeat it: its method, its tool or prompt
/// (`name`) or `uri`, and its `arguments` (absent, `null` and `{}` alike), as
/// [`same_request`](crate::server::same_request) compares them.
pub fn request_digest(method: Method, params: &Value) -> [u8; DIGEST_LEN] {
    let arguments = params
        .get("arguments")
        .filter(|a| !a.is_null() && a.as_object().is_none_or(|a| !a.is_empty()));
    let mut h = Sha256::new();
    h.update(b"capable round request\0");
    feed(&mut h, &Value::String(method.as_str().to_owned()));
    for part in [params.get("name"), params.get("uri"), arguments] {
        feed(&mut h, part.unwrap_or(&Value::Null));
    }
    cut(h)
}

/// A digest of a server's question: its method and params, less their `_meta` (what a
/// server adds there, a progress token or a trace, is no part of what it asks).
pub fn question_digest(method: &str, params: &Value) -> [u8; DIGEST_LEN] {
    let mut h = Sha256::new();
    h.update(b"capable round question\0");
    feed(&mut h, &Value::String(method.to_owned()));
    match params {
        Value::Object(obj) if obj.contains_key("_meta") => {
            let mut obj = obj.clone();
            obj.remove("_meta");
            feed(&mut h, &Value::Object(obj));
        }
        params => feed(&mut h, params),
    }
    cut(h)
}

fn cut(h: Sha256) -> [u8; DIGEST_LEN] {
    let digest = h.finalize();
    let mut out = [0; DIGEST_LEN];
    out.copy_from_slice(&digest[..DIGEST_LEN]);
    out
}

/// Feeds `value` to `h` in one form whatever the order of its members: each part
/// tagged and length-prefixed, an object's members by key. (The depth is the parser's
/// bound: JSON the relay read.)
fn feed(h: &mut Sha256, value: &Value) {
    let text = |h: &mut Sha256, tag: &[u8], s: &str| {
        h.update(tag);
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    match value {
        Value::Null => h.update(b"n"),
        Value::Bool(true) => h.update(b"t"),
        Value::Bool(false) => h.update(b"f"),
        Value::Number(n) => text(h, b"#", &n.to_string()),
        Value::String(s) => text(h, b"s", s),
        Value::Array(items) => {
            h.update(b"[");
            h.update((items.len() as u64).to_le_bytes());
            for item in items {
                feed(h, item);
            }
        }
        Value::Object(members) => {
            h.update(b"{");
            h.update((members.len() as u64).to_le_bytes());
            let mut sorted: Vec<_> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            for (key, member) in sorted {
                text(h, b"k", key);
                feed(h, member);
            }
        }
    }
}

fn invalid(message: String) -> RpcError {
    RpcError {
        code: codes::INVALID_PARAMS,
        message,
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digests_ignore_member_order_empty_arguments_and_a_questions_meta() {
        let a = json!({"name": "t", "arguments": {"x": 1, "y": [1, {"b": 2, "a": 1}]}});
        let b = json!({"arguments": {"y": [1, {"a": 1, "b": 2}], "x": 1}, "name": "t",
            "_meta": {"progressToken": 3}, "inputResponses": {}, "requestState": "s"});
        assert_eq!(
            request_digest(Method::CallTool, &a),
            request_digest(Method::CallTool, &b)
        );
        assert_ne!(
            request_digest(Method::CallTool, &a),
            request_digest(Method::GetPrompt, &a)
        );
        assert_ne!(
            request_digest(Method::CallTool, &a),
            request_digest(
                Method::CallTool,
                &json!({"name": "t", "arguments": {"x": 2}})
            )
        );
        for empty in [json!({"name": "t"}), json!({"name": "t", "arguments": {}})] {
            assert_eq!(
                request_digest(Method::CallTool, &empty),
                request_digest(Method::CallTool, &json!({"name": "t", "arguments": null}))
            );
        }
        let asked = json!({"message": "Sure?", "requestedSchema": {"type": "object"}});
        let mut with_meta = asked.clone();
        with_meta["_meta"] = json!({"trace": "x"});
        let d = question_digest("elicitation/create", &asked);
        assert_eq!(d, question_digest("elicitation/create", &with_meta));
        assert_ne!(d, question_digest("sampling/createMessage", &asked));
        assert_ne!(
            d,
            question_digest("elicitation/create", &json!({"message": "Sure?!"}))
        );
        // A string is not the number it spells, nor a key a value.
        assert_ne!(
            question_digest("m", &json!({"a": 1})),
            question_digest("m", &json!({"a": "1"}))
        );
    }
}
