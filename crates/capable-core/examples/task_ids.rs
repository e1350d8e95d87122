//! What sealing task ids costs a gateway replica, where a task id passes: the sealed
//! id's length, then the nanoseconds to seal one (a task handed out), to open one (a
//! host's `tasks/get`), and a host's `tasks/get` whole — its `taskId` opened, the
//! server's answer's sealed (the id the host sent repeated) — each the best of five runs
//! of 20,000. `task_ids N` does only N such `tasks/get`s and prints nothing: what an
//! instruction counter (callgrind) runs twice, with two Ns, so that the start-up cancels
//! out.
//!
//! Run it optimised: `cargo run --release -p capable-core --example task_ids`.

use capable_core::internal::bridge::TaskIds;
use capable_core::internal::seal::{Caller, KeyRing, SealKey};
use capable_core::Method;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Instant;

const CALLS: u32 = 20_000;
const RUNS: usize = 5;
const NOW: u64 = 1_800_000_000;

/// A host's `tasks/get` of `sealed` and the server's answer, as the relay has them: the
/// id opened, the answer's sealed.
fn get(ids: &TaskIds, caller: &Caller<'_>, sealed: &str) -> Value {
    let mut params = json!({ "taskId": sealed });
    let presented = ids
        .open_request(Method::GetTask, &mut params, caller, NOW)
        .expect("opens");
    let mut task = json!({"taskId": params["taskId"], "status": "working",
        "createdAt": "2026-12-01T00:00:00Z", "ttl": 60000, "pollInterval": 100});
    ids.seal_answer(Method::GetTask, &mut task, caller, NOW, presented.as_ref())
        .expect("seals");
    task
}

fn main() {
    let ring = KeyRing::new(
        SealKey::from_bytes(&[0x42; 32]),
        vec![SealKey::from_bytes(&[0x17; 32])],
    );
    let ids = TaskIds::new(ring, "jira");
    // A signed-in caller; a server's task id as a UUID.
    let caller = Caller {
        iss: Some("https://login.example.com/tenant/v2.0".into()),
        sub: Some("00u1a2b3c4d5e6f7g8h9".into()),
        client_id: Some("desktop-host".into()),
    };
    let task_id = "786512e2-9e0d-44bd-8f29-789f320fe840";
    let sealed = ids.seal(task_id, &caller, NOW).expect("seals");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [n] = args.as_slice() {
        let n: u32 = n.parse().expect("N is a count");
        for _ in 0..n {
            black_box(get(&ids, &caller, black_box(&sealed)));
        }
        return;
    }
    println!("sealed task id: {} characters", sealed.len());
    let seal = best_of(|| {
        black_box(ids.seal(black_box(task_id), &caller, NOW).expect("seals"));
    });
    println!("seal: {seal:.0} ns");
    let open = best_of(|| {
        black_box(ids.open(black_box(&sealed), &caller, NOW).expect("opens"));
    });
    println!("open: {open:.0} ns");
    let whole = best_of(|| {
        black_box(get(&ids, &caller, black_box(&sealed)));
    });
    println!("tasks/get (opened, its answer sealed): {whole:.0} ns");
}

/// The fastest of [`RUNS`] runs, in nanoseconds per call.
fn best_of(mut f: impl FnMut()) -> f64 {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..CALLS {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .fold(f64::INFINITY, f64::min)
}
