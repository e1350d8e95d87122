//! What opening a sealed session id costs: the work a gateway replica does on the first
//! request it gets of a legacy session it does not hold, whose state travels in its
//! `Mcp-Session-Id` (a session it holds is found by its id, nothing opened).
//!
//! Run it optimised: `cargo run --release -p capable-core --example seal_open`. It prints
//! the sealed id's length, then the nanoseconds per `open` (decrypt and authenticate) and
//! per `SessionSeal::open` (the same plus decoding the state), each the best of five runs
//! of 20,000 opens. `seal_open N open` (or `N session`, `N round`) does only N opens of one kind and
//! prints nothing more: what an instruction counter (callgrind) runs twice, with two Ns, so
//! that the start-up cancels out. Last, the same for an input round's sealed
//! `requestState` (`RoundSeal`): sealing one, and opening one (what a replica does with
//! each 2026-07-28 retry of a round).

use capable_core::internal::seal::{
    open, Caller, KeyRing, RoundSeal, SealKey, SealKind, SealedQuestion, SessionSeal,
};
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
    // A signed-in caller's round of one question.
    let round = RoundSeal {
        expires_at: u64::MAX,
        caller: Caller {
            iss: Some("https://login.example.com/realms/acme".into()),
            sub: Some("8d1f2a6e-2b5c-4f3e-9a41-0c7d5e3b9f12".into()),
            client_id: Some("desktop-host".into()),
        },
        state: "capable-relay-Pr85Y_5D-cHyMApXjXQhOkPCPAXtBeo6n".into(),
        server: None,
        request: [7; 16],
        questions: vec![SealedQuestion {
            key: "elicitation-1".into(),
            asked: [9; 16],
        }],
        answered: vec![],
    };
    let state = round.seal(&ring).expect("a round seals");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [n, mode] = args.as_slice() {
        let n: u32 = n.parse().expect("N is a count");
        for _ in 0..n {
            match mode.as_str() {
                "open" => drop(black_box(open(&ring, SealKind::Session, black_box(&id)))),
                "round" => drop(black_box(RoundSeal::open(
                    &ring,
                    black_box(&state),
                    &round.caller,
                    0,
                    &mut Vec::new(),
                ))),
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

    println!("sealed requestState: {} characters", state.len());
    let sealing = best_of(|| {
        black_box(black_box(&round).seal(&ring).expect("seals"));
    });
    println!("RoundSeal::seal: {sealing:.0} ns");
    let opening = best_of(|| {
        let caller = &round.caller;
        black_box(
            RoundSeal::open(&ring, black_box(&state), caller, 0, &mut Vec::new()).expect("opens"),
        );
    });
    println!("RoundSeal::open (and decode): {opening:.0} ns");
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
