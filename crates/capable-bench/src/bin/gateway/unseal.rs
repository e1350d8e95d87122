//! What continuing a sealed legacy session costs a replica.
//!
//! - [`in_process`]: opening a realistic seal (a signed-in caller, the capabilities and
//!   `clientInfo` a host sends, two upstream sessions), many times in this process:
//!   nanoseconds per `open` (authenticate and decrypt: AES-256-GCM-SIV) and per
//!   `SessionSeal::open` (the same, and the state decoded). [`opens`] does only N of
//!   them, for an instruction counter run twice with two Ns (`--unseal-opens N`).
//! - [`restored`]: the listener's whole cost of one request, over HTTP: a session begun
//!   on replica 1, then two reads of it on replica 2 — the first finds the session
//!   unknown there, opens the seal and continues it (its server behind connected, as the
//!   host's `initialize` connected it on replica 1), the second finds it held; and the
//!   `initialize` that began it on replica 1, which connected the server behind too.

use std::hint::black_box;
use std::time::{Duration, Instant};

use capable::internal::seal::{open, KeyRing, SealKey, SealKind, SessionSeal};
use serde_json::{json, Value};

use crate::post::post;
use crate::replicas::Deployment;
use crate::shared::median;

/// Opens per timed run, and runs (the median is reported).
const OPENS: u32 = 20_000;
const RUNS: usize = 11;

/// The ring and a sealed id as a replica of a signed-in deployment holds them.
fn realistic() -> (KeyRing, String) {
    let ring = KeyRing::new(
        SealKey::from_bytes(&[0x42; 32]),
        vec![SealKey::from_bytes(&[0x17; 32])],
    );
    // A signed-in caller, a desktop host's declaration, two HTTP servers' sessions.
    let state = SessionSeal::typical(u64::MAX);
    let id = state.seal(&ring).unwrap_or_default();
    (ring, id)
}

/// `n` opens and decodes of the realistic seal, nothing printed: what
/// `--unseal-opens N` runs under an instruction counter.
pub fn opens(n: usize) {
    let (ring, id) = realistic();
    for _ in 0..n {
        drop(black_box(SessionSeal::open(
            &ring,
            black_box(&id),
            0,
            &mut Vec::new(),
        )));
    }
}

/// Nanoseconds per open over [`RUNS`] runs of [`OPENS`]: the fastest run (the least
/// disturbed by other work on the machine) and the median.
pub fn in_process() -> Value {
    let (ring, id) = realistic();
    let per_open = |f: &dyn Fn() -> bool| {
        let runs: Vec<f64> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..OPENS {
                    black_box(f());
                }
                start.elapsed().as_nanos() as f64 / f64::from(OPENS)
            })
            .collect();
        let best = runs.iter().copied().fold(f64::INFINITY, f64::min);
        json!({"best": best, "median": median(runs)})
    };
    json!({
        "sealed_id_chars": id.len(),
        "open_ns": per_open(&|| open(&ring, SealKind::Session, black_box(&id)).is_ok()),
        "open_and_decode_ns": per_open(&|| SessionSeal::open(&ring, black_box(&id), 0, &mut Vec::new()).is_ok()),
    })
}

/// `sessions` legacy sessions, each begun on replica 1 and read twice on replica 2: the
/// medians of the first read (restored: the seal opened, the session continued), of
/// the second (held), and of their difference per session.
pub fn restored(deployment: &Deployment, sessions: usize) -> Result<Value, String> {
    let (a, b) = (&deployment.replicas[0].url, &deployment.replicas[1].url);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let read = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                          "params": {"uri": "bench://1k"}});
        let (mut begun, mut first, mut again) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..sessions {
            let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}}});
            let begin = Instant::now();
            let (session, _) = post(&http, a, None, None, &initialize).await?;
            begun.push(begin.elapsed());
            let session = session.ok_or("no session id")?;
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            post(&http, a, None, Some(&session), &initialized).await?;
            let started = Instant::now();
            let (_, size) = post(&http, b, None, Some(&session), &read).await?;
            let middle = Instant::now();
            post(&http, b, None, Some(&session), &read).await?;
            if size < 1024 {
                return Err("the restored read did not carry the resource".into());
            }
            first.push(middle - started);
            again.push(middle.elapsed());
        }
        let us = |d: &Duration| d.as_secs_f64() * 1e6;
        let added: Vec<f64> = first
            .iter()
            .zip(&again)
            .map(|(f, a)| us(f) - us(a))
            .collect();
        Ok(json!({
            "sessions": sessions,
            "initialize_p50_us": median(begun.iter().map(us).collect()),
            "restored_p50_us": median(first.iter().map(us).collect()),
            "held_p50_us": median(again.iter().map(us).collect()),
            "restored_minus_held_p50_us": median(added),
        }))
    })
}
