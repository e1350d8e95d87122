//! Test support: seeded byte-level mutations of JSON text, for the tests that hold a
//! fast reader to the verdict of a full parse on inputs no one wrote by hand.

/// A small xorshift generator: the same seed gives the same mutations on every run.
pub(crate) struct Mutator(u64);

impl Mutator {
    pub(crate) fn new(seed: u64) -> Mutator {
        Mutator(seed)
    }

    /// A number below `n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let s = &mut self.0;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s % n as u64) as usize
    }

    /// One of `seeds`, with 1 to `max_edits` bytes removed, replaced or inserted (the
    /// new ones drawn from `alphabet`).
    pub(crate) fn mutated(
        &mut self,
        seeds: &[&[u8]],
        alphabet: &[u8],
        max_edits: usize,
    ) -> Vec<u8> {
        let mut text = seeds[self.below(seeds.len())].to_vec();
        for _ in 0..=self.below(max_edits) {
            let at = self.below(text.len() + 1);
            match self.below(3) {
                0 if at < text.len() => {
                    text.remove(at);
                }
                1 if at < text.len() => text[at] = alphabet[self.below(alphabet.len())],
                _ => text.insert(at, alphabet[self.below(alphabet.len())]),
            }
        }
        text
    }
}

/// Holds a direct decoder of results to serde's verdict on `rounds` mutations of
/// `seeds`: whatever `direct` takes from a result's text, serde takes with the same
/// value; and through a whole response line (the routing by shape, then `payload`,
/// the decode a caller makes), the outcome is the generic decode's, value or refusal.
/// Returns how many mutations `direct` took, for the test to require enough.
/// What serde's derived decoder makes of `raw`, shown: what a direct reader must make.
pub(crate) fn by_serde<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    raw: &[u8],
) -> Option<String> {
    serde_json::from_slice::<T>(raw)
        .ok()
        .map(|r| format!("{r:?}"))
}

pub(crate) fn agrees_with_serde<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    seed: u64,
    seeds: &[&str],
    alphabet: &[u8],
    rounds: usize,
    direct: impl Fn(&[u8]) -> Option<T>,
    payload: impl Fn(&crate::Payload) -> Result<T, serde_json::Error>,
) -> usize {
    let mut m = Mutator::new(seed);
    let seeds: Vec<&[u8]> = seeds.iter().map(|s| s.as_bytes()).collect();
    let shown = |r: &T| format!("{r:?}");
    let mut taken = 0;
    for _ in 0..rounds {
        let raw = m.mutated(&seeds, alphabet, 3);
        let mut line = br#"{"jsonrpc":"2.0","id":1,"result":"#.to_vec();
        line.extend_from_slice(&raw);
        line.push(b'}');
        if let Ok(crate::Incoming::Result { result, .. }) = crate::Incoming::parse(line.clone()) {
            assert_eq!(
                payload(&result).map(|r| shown(&r)).ok(),
                result.decode::<T>().map(|r| shown(&r)).ok(),
                "{}",
                String::from_utf8_lossy(&line)
            );
        }
        if let Some(r) = direct(&raw) {
            assert_eq!(
                Some(shown(&r)),
                by_serde::<T>(&raw),
                "{}",
                String::from_utf8_lossy(&raw)
            );
            taken += 1;
        }
    }
    taken
}
