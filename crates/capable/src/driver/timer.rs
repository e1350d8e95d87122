//! The timer task: one timer for the whole session. It sleeps until the connection's
//! [`poll_timeout`](capable_core::Connection::poll_timeout), then lets the connection
//! time out whatever is due ([`handle_timeout`](capable_core::Connection::handle_timeout),
//! which also writes `notifications/cancelled`) and fails those requests with
//! [`Error::Timeout`]. The rules — when, how progress extends a deadline, up to what —
//! are the connection's; requests that finish in time cost no timer at all.

use std::sync::Arc;

use tokio::time::Instant;

use crate::error::Error;

use super::Driver;

pub(crate) async fn run_timer(shared: Arc<Driver>) {
    loop {
        let at = {
            let mut st = shared.lock();
            if st.conn.is_closed() {
                return;
            }
            st.timer_armed = st.conn.poll_timeout();
            st.timer_armed
        };
        let Some(at) = at else {
            shared.timer_wake.notified().await;
            continue;
        };
        tokio::select! {
            _ = tokio::time::sleep_until(Instant::from_std(at)) => {}
            _ = shared.timer_wake.notified() => continue,
        }
        let now = Instant::now().into_std();
        let wakers = shared.write_with(|st| {
            let expired = st.conn.handle_timeout(now, &mut st.out);
            expired
                .into_iter()
                .map(|e| {
                    let outcome = Err(Error::Timeout {
                        method: e.method,
                        after: e.after,
                    });
                    st.finish(e.waiter, outcome)
                })
                .collect::<Vec<_>>()
        });
        super::wake_all(wakers);
    }
}
