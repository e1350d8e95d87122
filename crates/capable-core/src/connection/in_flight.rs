//! The requests in flight, by id: one kept aside in a slot of its own, the others in
//! a map.
//!
//! A host that waits for each answer before its next request (the common case, and
//! every request of a lone caller) has one request in flight at a time. It always
//! finds the slot empty, so its request goes there: found by comparing one id, with
//! no hashing, and taken out by moving it. While the slot is taken (a burst, a listen
//! stream) further requests go to the map, and are found there as before.

use super::IdMap;

/// Values by the request ids they were sent with (see the module documentation).
pub(super) struct InFlight<T> {
    /// The entry kept aside, if any, with its id.
    aside: Option<(i64, T)>,
    /// Every other entry.
    rest: IdMap<T>,
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        InFlight {
            aside: None,
            rest: IdMap::default(),
        }
    }
}

impl<T> InFlight<T> {
    /// How many entries there are.
    #[inline]
    pub(super) fn len(&self) -> usize {
        usize::from(self.aside.is_some()) + self.rest.len()
    }

    /// Whether the entry kept aside is `id`'s.
    #[inline]
    fn aside_is(&self, id: i64) -> bool {
        matches!(&self.aside, Some((aside, _)) if *aside == id)
    }

    /// Keeps `value` under `id` (a new id: a connection never reuses one).
    #[inline]
    pub(super) fn insert(&mut self, id: i64, value: T) {
        match self.aside {
            None => self.aside = Some((id, value)),
            Some(_) => {
                self.rest.insert(id, value);
            }
        }
    }

    /// Takes the entry of `id` out.
    #[inline]
    pub(super) fn remove(&mut self, id: i64) -> Option<T> {
        if self.aside_is(id) {
            return self.aside.take().map(|(_, value)| value);
        }
        match self.rest.is_empty() {
            true => None,
            false => self.rest.remove(&id),
        }
    }

    /// The entry of `id`.
    #[inline]
    pub(super) fn get(&self, id: i64) -> Option<&T> {
        match self.aside_is(id) {
            true => self.aside.as_ref().map(|(_, value)| value),
            false => self.rest.get(&id),
        }
    }

    /// The entry of `id`, to change it.
    #[inline]
    pub(super) fn get_mut(&mut self, id: i64) -> Option<&mut T> {
        match self.aside_is(id) {
            true => self.aside.as_mut().map(|(_, value)| value),
            false => self.rest.get_mut(&id),
        }
    }

    /// Every entry with its id, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (i64, &T)> {
        self.aside
            .as_ref()
            .map(|(id, value)| (*id, value))
            .into_iter()
            .chain(self.rest.iter().map(|(id, value)| (*id, value)))
    }

    /// Takes every entry out.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.aside
            .take()
            .into_iter()
            .chain(self.rest.drain())
            .map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeMap;

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Consecutive ids land in distinct buckets of a table of 64 and carry many
    /// distinct tags (a hash's top seven bits), so that a lookup among the requests
    /// in flight compares few keys.
    #[test]
    fn consecutive_ids_spread_over_buckets_and_tags() {
        use std::collections::HashSet;
        use std::hash::{BuildHasher, BuildHasherDefault};
        let build = BuildHasherDefault::<super::super::IdHasher>::default();
        for first in [0_i64, 1, 1000, 123_456_789] {
            let hashes: Vec<u64> = (first..first + 64).map(|id| build.hash_one(id)).collect();
            let buckets: HashSet<u64> = hashes.iter().map(|h| h % 64).collect();
            assert_eq!(buckets.len(), 64, "from {first}");
            let tags: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
            assert!(tags.len() >= 32, "{} tags from {first}", tags.len());
        }
    }

    #[test]
    fn it_holds_exactly_what_a_map_would() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..100 {
            let mut t = InFlight::default();
            let mut model: BTreeMap<i64, u64> = BTreeMap::new();
            let mut next = 0_i64;
            for step in 0..1000u64 {
                match rng.below(10) {
                    0..=3 => {
                        t.insert(next, step);
                        model.insert(next, step);
                        next += 1;
                    }
                    4..=7 => {
                        // The newest, the oldest, any, or an id never sent.
                        let id = match rng.below(4) {
                            0 => next - 1,
                            1 => model.keys().next().copied().unwrap_or(-1),
                            2 => i64::try_from(rng.below(next.max(1) as u64)).unwrap(),
                            _ => next + 3,
                        };
                        assert_eq!(t.remove(id), model.remove(&id), "step {step}");
                    }
                    _ => {
                        let id = next - 1 - i64::try_from(rng.below(4)).unwrap();
                        if let Some(v) = t.get_mut(id) {
                            *v += 1;
                        }
                        if let Some(v) = model.get_mut(&id) {
                            *v += 1;
                        }
                        assert_eq!(t.get(id), model.get(&id));
                    }
                }
                assert_eq!(t.len(), model.len());
            }
            let mut seen: Vec<(i64, u64)> = t.iter().map(|(id, v)| (id, *v)).collect();
            seen.sort_unstable();
            assert_eq!(
                seen,
                model.iter().map(|(id, v)| (*id, *v)).collect::<Vec<_>>()
            );
            let mut drained: Vec<u64> = t.drain().collect();
            drained.sort_unstable();
            let mut values: Vec<u64> = model.into_values().collect();
            values.sort_unstable();
            assert_eq!(drained, values);
            assert_eq!(t.len(), 0);
        }
    }
}
