//! The writer task: sends everything queued since its last write in one write, and
//! after the connection closed, what is left — then drops the sink, which closes the
//! server's input (stdio) or ends the transport's sending side.

use std::sync::Arc;

use crate::transport::MessageSink;

use super::Driver;

pub(crate) async fn run_writer<S: MessageSink>(shared: Arc<Driver>, mut sink: S) {
    // Grows to the largest batch and keeps that room (the buffers are swapped, never
    // shrunk): an idle session holds none.
    let mut spare = capable_core::Outbox::new();
    loop {
        let (mut batch, tapped, closed) = {
            let mut st = shared.lock();
            std::mem::swap(&mut st.out, &mut spare);
            st.writing = !spare.is_empty();
            let tapped = std::mem::take(&mut st.out_tapped);
            let closed = st.conn.is_closed();
            if closed {
                st.bypass = None;
            }
            (std::mem::take(&mut spare), tapped, closed)
        };
        if !batch.is_empty() {
            if let Some(tap) = &shared.tap {
                tap.sent(&batch[tapped.min(batch.len())..]);
            }
            if let Err(e) = sink.send(&batch).await {
                // A write fails when the server is gone (EPIPE): report how it exited,
                // as the reader does on end of output, not the broken pipe.
                let reason = super::ended(&*shared.peer, Some(e)).await;
                shared.close(reason);
                break;
            }
            batch.clear();
            spare = batch;
            continue;
        }
        spare = batch;
        if closed {
            break;
        }
        shared.write_ready.notified().await;
    }
    drop(sink);
}
