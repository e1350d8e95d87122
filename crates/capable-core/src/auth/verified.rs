//! What a protected resource remembers so that verifying a token costs once, not per
//! request: the callers of tokens already verified ([`Verified`], by a hash of the
//! token, until the token expires) and when the issuer's keys may be fetched again
//! ([`KeyRefetch`]: a token naming an unknown key fetches them at most once in a
//! while, so a stream of forged `kid`s cannot make the gateway hammer the issuer).
//!
//! An opaque token its issuer said was no good is remembered too, briefly
//! ([`Refused`]): the same bad token sent again is refused without asking the issuer
//! again.
//!
//! The token itself is never kept: its SHA-256 is the key.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::resource::{Caller, Refusal};

/// A token's SHA-256: how [`Verified`] knows it without keeping it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TokenKey([u8; 32]);

impl TokenKey {
    /// The key of `token`.
    pub fn of(token: &str) -> TokenKey {
        TokenKey(Sha256::digest(token.as_bytes()).into())
    }
}

/// The callers of verified tokens, until each token expires; at most `capacity` of
/// them (when full, the expired go first, then the one that expires soonest).
#[derive(Debug)]
pub struct Verified {
    callers: HashMap<TokenKey, Arc<Caller>>,
    capacity: usize,
}

impl Verified {
    /// An empty cache of at most `capacity` tokens (at least one).
    pub fn new(capacity: usize) -> Verified {
        Verified {
            callers: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The caller of the token `key` names, if it was verified and has not expired at
    /// `now` (seconds since the Unix epoch); an expired one is forgotten.
    pub fn get(&mut self, key: &TokenKey, now: u64) -> Option<Arc<Caller>> {
        if self.callers.get(key)?.expires_at <= now {
            self.callers.remove(key);
            return None;
        }
        self.callers.get(key).cloned()
    }

    /// Remembers `caller` for the token `key` names, until it expires.
    pub fn insert(&mut self, key: TokenKey, caller: Arc<Caller>, now: u64) {
        if caller.expires_at <= now {
            return;
        }
        if self.callers.len() >= self.capacity && !self.callers.contains_key(&key) {
            self.callers.retain(|_, c| c.expires_at > now);
            if self.callers.len() >= self.capacity {
                let soonest = self
                    .callers
                    .iter()
                    .min_by_key(|(_, c)| c.expires_at)
                    .map(|(k, _)| *k);
                if let Some(soonest) = soonest {
                    self.callers.remove(&soonest);
                }
            }
        }
        self.callers.insert(key, caller);
    }

    /// How many tokens are remembered.
    pub fn len(&self) -> usize {
        self.callers.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.callers.is_empty()
    }
}

/// Tokens refused by their issuer's introspection, each for `ttl` seconds, at most
/// `capacity` of them (when full, the oldest refusal goes).
#[derive(Debug)]
pub struct Refused {
    refusals: HashMap<TokenKey, (Refusal, u64)>,
    capacity: usize,
    ttl: u64,
}

impl Refused {
    /// At most `capacity` refusals (at least one), each remembered `ttl` seconds.
    pub fn new(capacity: usize, ttl: u64) -> Refused {
        Refused {
            refusals: HashMap::new(),
            capacity: capacity.max(1),
            ttl,
        }
    }

    /// Why the token `key` names was refused, if it was within the last `ttl`
    /// seconds before `now`.
    pub fn get(&mut self, key: &TokenKey, now: u64) -> Option<Refusal> {
        let (refusal, until) = self.refusals.get(key)?;
        if *until <= now {
            self.refusals.remove(key);
            return None;
        }
        Some(refusal.clone())
    }

    /// Remembers that the token `key` names was refused at `now`, and why.
    pub fn insert(&mut self, key: TokenKey, refusal: Refusal, now: u64) {
        if self.refusals.len() >= self.capacity && !self.refusals.contains_key(&key) {
            self.refusals.retain(|_, (_, until)| *until > now);
            if self.refusals.len() >= self.capacity {
                let oldest = self
                    .refusals
                    .iter()
                    .min_by_key(|(_, (_, until))| *until)
                    .map(|(k, _)| *k);
                if let Some(oldest) = oldest {
                    self.refusals.remove(&oldest);
                }
            }
        }
        self.refusals
            .insert(key, (refusal, now.saturating_add(self.ttl)));
    }
}

/// When the issuer's keys may be fetched again for a token that names a key not
/// known: at most once per `every` (milliseconds, on the shell's monotonic clock).
#[derive(Clone, Debug)]
pub struct KeyRefetch {
    every: u64,
    last: Option<u64>,
}

impl KeyRefetch {
    /// Fetches at most once per `every_ms`; the keys were just fetched at `now_ms`.
    pub fn new(every_ms: u64, now_ms: u64) -> KeyRefetch {
        KeyRefetch {
            every: every_ms,
            last: Some(now_ms),
        }
    }

    /// Whether to fetch now (and, if so, the time is taken as the last fetch).
    pub fn may(&mut self, now_ms: u64) -> bool {
        let due = self
            .last
            .is_none_or(|last| now_ms.saturating_sub(last) >= self.every);
        if due {
            self.last = Some(now_ms);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(sub: &str, expires_at: u64) -> Arc<Caller> {
        Arc::new(Caller {
            issuer: "https://id.example".into(),
            subject: sub.into(),
            client_id: None,
            scopes: vec![],
            groups: vec![],
            expires_at,
        })
    }

    #[test]
    fn a_verified_token_is_known_until_it_expires() {
        let mut v = Verified::new(10);
        let key = TokenKey::of("token-a");
        v.insert(key, caller("alice", 100), 50);
        assert_eq!(
            v.get(&key, 99).map(|c| c.subject.clone()).as_deref(),
            Some("alice")
        );
        assert!(v.get(&TokenKey::of("token-b"), 60).is_none());
        assert!(v.get(&key, 100).is_none());
        assert!(v.is_empty(), "an expired token is forgotten");
        v.insert(key, caller("alice", 40), 50);
        assert!(v.is_empty(), "an already expired token is not kept");
    }

    #[test]
    fn a_full_cache_drops_the_expired_then_the_soonest_to_expire() {
        let mut v = Verified::new(2);
        let (a, b, c, d) = (
            TokenKey::of("a"),
            TokenKey::of("b"),
            TokenKey::of("c"),
            TokenKey::of("d"),
        );
        v.insert(a, caller("a", 20), 0);
        v.insert(b, caller("b", 300), 0);
        v.insert(c, caller("c", 200), 30);
        assert_eq!(v.len(), 2);
        assert!(v.get(&a, 30).is_none(), "expired, dropped first");
        v.insert(d, caller("d", 400), 30);
        assert_eq!(v.len(), 2);
        assert!(v.get(&c, 30).is_none(), "the soonest to expire made room");
        assert!(v.get(&b, 30).is_some() && v.get(&d, 30).is_some());
    }

    #[test]
    fn keys_are_fetched_again_at_most_once_per_period() {
        let mut r = KeyRefetch::new(10_000, 1_000);
        assert!(!r.may(2_000), "just fetched at start");
        assert!(r.may(11_000));
        assert!(!r.may(11_001));
        assert!(!r.may(20_999));
        assert!(r.may(21_000));
    }

    #[test]
    fn a_refused_token_is_refused_again_for_a_while_without_asking() {
        let mut r = Refused::new(2, 30);
        let (a, b, c) = (TokenKey::of("a"), TokenKey::of("b"), TokenKey::of("c"));
        let no = Refusal::Invalid("not active".into());
        r.insert(a, no.clone(), 100);
        assert_eq!(r.get(&a, 129), Some(no.clone()));
        assert_eq!(r.get(&a, 130), None, "asked again once the while is over");
        r.insert(a, no.clone(), 200);
        r.insert(b, no.clone(), 201);
        r.insert(c, no.clone(), 202);
        assert_eq!(r.get(&a, 202), None, "the oldest made room");
        assert!(r.get(&b, 202).is_some() && r.get(&c, 202).is_some());
    }

    #[test]
    fn the_key_is_a_hash_not_the_token() {
        let key = TokenKey::of("secret-token");
        assert!(!format!("{key:?}").contains("secret-token"));
        assert_eq!(key, TokenKey::of("secret-token"));
        assert_ne!(key, TokenKey::of("secret-token2"));
    }
}
