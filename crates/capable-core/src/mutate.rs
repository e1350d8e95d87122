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
