//! The listener's connections, each bounded: at most `--max-connections` open at once
//! (one past that is closed as it is accepted), and a request's headers must arrive
//! within `--header-timeout` (a client that sends them a byte at a time, or never,
//! holds nothing for long). Its body has `--body-timeout` (`handle` reads it within
//! that). Connections are HTTP/1.1, kept alive between requests.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The bounds of the listener's connections.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The most connections open at once.
    pub max_connections: usize,
    /// How long a request's headers may take to arrive.
    pub header_timeout: Duration,
}

/// Serves `router` on `socket`'s connections within `bounds`, until dropped.
pub async fn serve(socket: TcpListener, router: Router, bounds: Bounds) {
    let open = Arc::new(Semaphore::new(bounds.max_connections.max(1)));
    loop {
        let stream = match socket.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors, say: the connections that hold them end in time (the
            // bounds above), so accepting goes on after a pause.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Past the limit the connection is closed at once: those open stay served.
        let Ok(permit) = open.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(bounds.header_timeout);
            let _ = http.serve_connection(TokioIo::new(stream), service).await;
            drop(permit);
        });
    }
}
