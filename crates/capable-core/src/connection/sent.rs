//! The copy of each request as sent, kept while it is in flight: evidence should the
//! server break its contract (a `-32601` to a method it declared), and where a legacy
//! subscription's URI is read from once it is answered.
//!
//! Each copy is a buffer taken from the buffers of requests already answered, and
//! given back when its request leaves the connection: once a session has had as many
//! requests in flight as it ever will, copying a request allocates nothing. A pending
//! entry holds the buffer (24 bytes), not the request inline, so the entry stays
//! small as it moves in and out of the requests in flight.

/// A request exactly as sent.
pub(super) struct Sent(Vec<u8>);

impl std::ops::Deref for Sent {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Buffers of requests that left the connection, for the copies of the next ones.
#[derive(Default)]
pub(super) struct Spares(Vec<Vec<u8>>);

impl Spares {
    /// The largest buffer kept: a long request's copy goes with it, so a session that
    /// once sent a large request does not hold that much memory for good.
    const KEEP_BYTES: usize = 4096;
    /// The most buffers kept.
    const KEEP: usize = 256;

    /// A copy of `bytes`, in a spare buffer when there is one.
    pub(super) fn copy(&mut self, bytes: &[u8]) -> Sent {
        let mut buf = self.0.pop().unwrap_or_default();
        buf.extend_from_slice(bytes);
        Sent(buf)
    }

    /// Keeps `sent`'s buffer for a later copy.
    pub(super) fn recycle(&mut self, sent: Sent) {
        let mut buf = sent.0;
        if buf.capacity() <= Self::KEEP_BYTES && self.0.len() < Self::KEEP {
            buf.clear();
            self.0.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_reuses_a_spare_buffer_and_holds_exactly_the_request() {
        let mut spares = Spares::default();
        let first = spares.copy(b"{\"id\":1,\"method\":\"resources/read\"}");
        let at = first.0.as_ptr();
        spares.recycle(first);
        let second = spares.copy(b"{\"id\":2}");
        assert_eq!(&*second, b"{\"id\":2}");
        assert_eq!(second.0.as_ptr(), at, "the buffer was reused");
    }

    #[test]
    fn a_long_requests_buffer_is_not_kept() {
        let mut spares = Spares::default();
        let long = spares.copy(&vec![b'x'; Spares::KEEP_BYTES + 1]);
        spares.recycle(long);
        assert!(spares.0.is_empty());
    }
}
