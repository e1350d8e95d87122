//! Room for request bodies, all connections together (`--max-body-total`): each body
//! is bounded by `--max-message` and `--body-timeout`, and what every connection reads
//! at once by this budget — hundreds of connections each sending a large body hold no
//! more than it. A body whose `Content-Length` does not fit in what is left is refused
//! before it is read (`503`, `Retry-After`); a chunked one takes room as its chunks
//! arrive, and is refused when the next one does not fit. The room a body took is
//! given back when its request is done.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures_util::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Larger than one message may be (`413`), or broken off.
    TooLarge,
    /// It did not arrive in time (`408`).
    TooSlow,
    /// The bodies being read already take the room (`503`).
    NoRoom,
}

/// The room for bodies (see the module documentation).
pub struct Bodies {
    room: Arc<Semaphore>,
}

/// Room a body holds until it is dropped.
pub struct Held(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Bodies {
    /// Room for `total` bytes of bodies at once.
    pub fn new(total: usize) -> Bodies {
        let total = total.min(Semaphore::MAX_PERMITS);
        Bodies {
            room: Arc::new(Semaphore::new(total)),
        }
    }

    /// Reads `body` (its `Content-Length`, if said: `length`), at most `max` bytes,
    /// within `timeout`; the room it takes is held as long as the [`Held`] returned.
    pub async fn read(
        &self,
        body: Body,
        length: Option<usize>,
        max: usize,
        timeout: Duration,
    ) -> Result<(Bytes, Held), Refused> {
        if length.is_some_and(|n| n > max) {
            return Err(Refused::TooLarge);
        }
        let mut held = match length {
            Some(n) => Some(self.take(n)?),
            None => None,
        };
        let read = async {
            // The chunks as they came: a body of one chunk (the usual) is kept as it
            // is, never copied.
            let mut chunks = Vec::new();
            let mut len = 0;
            let mut stream = body.into_data_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|_| Refused::TooLarge)?;
                len += chunk.len();
                if len > max {
                    return Err(Refused::TooLarge);
                }
                chunks.push(chunk);
                // Past what was taken up front (none for a chunked body): more room.
                let taken = held.as_ref().map_or(0, OwnedSemaphorePermit::num_permits);
                if len > taken {
                    let more = self.take(len - taken)?;
                    match &mut held {
                        Some(permit) => permit.merge(more),
                        None => held = Some(more),
                    }
                }
            }
            Ok(match chunks.len() {
                1 => chunks.swap_remove(0),
                _ => Bytes::from(chunks.concat()),
            })
        };
        match tokio::time::timeout(timeout, read).await {
            Ok(Ok(bytes)) => Ok((bytes, Held(held))),
            Ok(Err(refused)) => Err(refused),
            Err(_) => Err(Refused::TooSlow),
        }
    }

    /// `n` bytes of room, now or never.
    fn take(&self, n: usize) -> Result<OwnedSemaphorePermit, Refused> {
        let n = u32::try_from(n).map_err(|_| Refused::NoRoom)?;
        self.room
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| Refused::NoRoom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(3600);

    #[tokio::test]
    async fn bodies_share_one_room_given_back_when_their_requests_are_done() {
        let bodies = Bodies::new(1000);
        let (first, held) = bodies
            .read(Body::from(vec![b'a'; 600]), Some(600), 800, LONG)
            .await
            .unwrap();
        assert_eq!(first.len(), 600);
        // 600 of 1000 held: a body of 500 finds no room, said or not.
        let said = bodies
            .read(Body::from(vec![b'b'; 500]), Some(500), 800, LONG)
            .await;
        assert_eq!(said.err(), Some(Refused::NoRoom));
        let unsaid = bodies
            .read(Body::from(vec![b'b'; 500]), None, 800, LONG)
            .await;
        assert_eq!(unsaid.err(), Some(Refused::NoRoom));
        drop(held);
        let (again, _held) = bodies
            .read(Body::from(vec![b'c'; 500]), None, 800, LONG)
            .await
            .unwrap();
        assert_eq!(again.len(), 500);
    }

    #[tokio::test]
    async fn one_body_is_bounded_whatever_the_room() {
        let bodies = Bodies::new(1 << 20);
        let said = bodies
            .read(Body::from(vec![b'a'; 10]), Some(900), 800, LONG)
            .await;
        assert_eq!(said.err(), Some(Refused::TooLarge));
        let long = bodies
            .read(Body::from(vec![b'a'; 900]), None, 800, LONG)
            .await;
        assert_eq!(long.err(), Some(Refused::TooLarge));
        // Refused bodies hold nothing.
        assert_eq!(bodies.room.available_permits(), 1 << 20);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_ends_is_too_slow_and_gives_its_room_back() {
        let bodies = Bodies::new(1000);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        tx.send(Ok(Bytes::from_static(b"{\"a\":"))).await.unwrap();
        let stream = tokio_stream_from(rx);
        let slow = bodies
            .read(
                Body::from_stream(stream),
                None,
                800,
                Duration::from_secs(30),
            )
            .await;
        assert_eq!(slow.err(), Some(Refused::TooSlow));
        assert_eq!(bodies.room.available_permits(), 1000);
        drop(tx);
    }

    fn tokio_stream_from(
        mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    ) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
