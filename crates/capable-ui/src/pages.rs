//! Which pages are open, by their event streams: a page that goes without saying so
//! (its tab crashed, the browser was killed, the machine slept through it) leaves no
//! watch polling behind. Each page holds its `GET /api/events` open while it lives;
//! when a page's last stream closes and none is opened again within [`GRACE`] (a
//! reload opens a new one at once), the watches it started are stopped. A page that
//! closes normally stops its own at once (`pagehide`); scripts (the token as a bearer,
//! no page) start watches no page owns, which live until stopped.

use std::collections::HashMap;
use std::time::Duration;

/// How long a page may be without an event stream before its watches stop.
pub const GRACE: Duration = Duration::from_secs(10);

/// Open event streams by page, and a generation per page that says whether a page
/// closed since a given moment.
#[derive(Debug, Default)]
pub struct Pages {
    open: HashMap<String, (usize, u64)>,
}

impl Pages {
    /// A stream of `page` opened.
    pub fn opened(&mut self, page: &str) {
        let entry = self.open.entry(page.to_owned()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += 1;
    }

    /// A stream of `page` closed: when it was the last, the generation to hand to
    /// [`Pages::gone`] after the grace.
    pub fn closed(&mut self, page: &str) -> Option<u64> {
        let entry = self.open.get_mut(page)?;
        entry.0 = entry.0.saturating_sub(1);
        entry.1 += 1;
        (entry.0 == 0).then_some(entry.1)
    }

    /// Whether `page` is gone: no stream of its opened (or closed) since it closed at
    /// `generation`. Forgets it then.
    pub fn gone(&mut self, page: &str, generation: u64) -> bool {
        let gone = self.open.get(page) == Some(&(0, generation));
        if gone {
            self.open.remove(page);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_gone_only_when_no_stream_of_its_came_back_since_its_last_closed() {
        let mut pages = Pages::default();
        pages.opened("a");
        let closed = pages.closed("a").expect("its last stream");
        assert!(pages.gone("a", closed));
        assert!(!pages.gone("a", closed), "forgotten once gone");

        // A reload: the old stream closes, a new one opens within the grace.
        pages.opened("b");
        let closed = pages.closed("b").unwrap();
        pages.opened("b");
        assert!(!pages.gone("b", closed));
        // It closes again later: only the later close's timer counts.
        let again = pages.closed("b").unwrap();
        assert!(!pages.gone("b", closed));
        assert!(pages.gone("b", again));

        // Two streams of one page: it is not gone while one is open.
        pages.opened("c");
        pages.opened("c");
        assert_eq!(pages.closed("c"), None);
        let last = pages.closed("c").unwrap();
        assert!(pages.gone("c", last));
        assert_eq!(pages.closed("never-opened"), None);
    }
}
