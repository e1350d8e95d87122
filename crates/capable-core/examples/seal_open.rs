//! What opening a sealed session id costs: the work a gateway replica does on the first
//! request it gets of a legacy session it does not hold, whose state travels in its
//! `Mcp-Session-Id` (a session it holds is found by its id, nothing opened).
//!
//! Run it optimised: `cargo run --release -p capable-core --example seal_open`. It prints
//! the sealed id's length, then the nanoseconds per `open` (decrypt and authenticate) and
//! per `SessionSeal::open` (the same plus decoding the state), each the best of five runs
//! of 20,000 opens. `seal_open N open` (or `N session`) does only N opens of one kind and
//! prints nothing more: what an instruction counter (callgrind) runs twice, with two Ns, so
//! that the start-up cancels out.

use capable_core::internal::seal::{open, KeyRing, SealKey, SealKind, SessionSeal};
use std::hint::black_box;
use std::time::Instant;

const OPENS: u32 = 20_000;
const RUNS: usize = 5;

fn main() {
    // The ring a replica holds mid-rotation: the seal is under the current key.
    let ring = KeyRing::new(
        SealKey::from_bytes(&[0x42; 32]),
        vec![SealKey::from_bytes(&[0x17; 32])],
    );
    // A signed-in caller, a desktop host's declaration, two HTTP servers' sessions.
    let state = SessionSeal::typical(u64::MAX);
    let id = state.seal(&ring).expect("a typical session seals");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [n, mode] = args.as_slice() {
        let n: u32 = n.parse().expect("N is a count");
        for _ in 0..n {
            match mode.as_str() {
                "open" => drop(black_box(open(&ring, SealKind::Session, black_box(&id)))),
                _ => drop(black_box(SessionSeal::open(
                    &ring,
                    black_box(&id),
                    0,
                    &mut Vec::new(),
                ))),
            }
        }
        return;
    }
    println!("sealed session id: {} characters", id.len());

    let open_only = best_of(|| {
        black_box(open(&ring, SealKind::Session, black_box(&id)).expect("opens"));
    });
    println!("open (authenticate and decrypt): {open_only:.0} ns");
    let with_decode = best_of(|| {
        black_box(SessionSeal::open(&ring, black_box(&id), 0, &mut Vec::new()).expect("opens"));
    });
    println!("SessionSeal::open (and decode the state): {with_decode:.0} ns");
}

/// The fastest of [`RUNS`] runs, in nanoseconds per call.
fn best_of(mut f: impl FnMut()) -> f64 {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..OPENS {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(OPENS)
        })
        .fold(f64::INFINITY, f64::min)
}
