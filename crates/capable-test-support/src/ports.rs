//! Loopback ports for servers a test starts in another process (an identity
//! provider, Redis, a gateway replica), which must be told their port before they
//! bind it.
//!
//! A port taken from the OS (`bind` to port 0) and given back is chosen from the
//! kernel's ephemeral range, the same range every outgoing connection's source port
//! and every other `bind` to port 0 draws from: between giving it back and the
//! server binding it, another test's connection or server can take it, and the test
//! then talks to the wrong server ("client authentication failed" from another
//! test's identity provider). [`free_port`] chooses below that range instead, where
//! the kernel never hands out ports on its own: each test process walks its own
//! sequence from a start of its own, and a port is handed out only if it can be
//! bound at that moment.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The ports [`free_port`] hands out: below Linux's default ephemeral range
/// (32768–60999) and above the well-known and most registered services' ports.
const FIRST: u32 = 20_000;
const COUNT: u32 = 12_000;

/// A loopback port nothing listens on, for a server started next. Never the same
/// port twice in one process; see the module's documentation for why it is not
/// simply the OS's choice.
pub fn free_port() -> u16 {
    static START: OnceLock<u32> = OnceLock::new();
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = *START.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        (std::process::id().wrapping_mul(7919) ^ nanos) % COUNT
    });
    for _ in 0..COUNT {
        let step = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + (start + step) % COUNT;
        let port = u16::try_from(port).expect("below 65536");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {FIRST}..{}", FIRST + COUNT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_outside_the_ephemeral_range_distinct_and_bindable() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        let mut seen = std::collections::HashSet::new();
        for port in &ports {
            assert!((20_000..32_000).contains(port), "{port}");
            assert!(seen.insert(*port), "{port} twice");
        }
        let _held = TcpListener::bind(("127.0.0.1", ports[0])).unwrap();
    }
}
