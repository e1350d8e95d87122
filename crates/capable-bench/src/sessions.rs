//! Many Streamable HTTP sessions from one process (`capable-bench --sessions N`):
//! what each idle session costs, what they do together, and what is left once they
//! close.
//!
//! The client (`capable-bench client sessions --url URL --sessions N --reads K`), on
//! one current-thread runtime:
//!
//! 1. raises its `RLIMIT_NOFILE` soft limit to the hard one (each session holds a
//!    connection);
//! 2. opens and closes one session, so what a process sets up once (the era found for
//!    the origin, TLS roots, the runtime's own buffers) is not counted per session;
//! 3. counts its resident set (`VmRSS`), its open fds (`/proc/self/fd`) and tokio's
//!    alive tasks (`Handle::metrics().num_alive_tasks()`);
//! 4. opens N sessions at once and waits until every one is ready (the time to all
//!    ready), then counts again: (RSS after − RSS before) / N is the memory of one idle
//!    session; and again after `malloc_trim(0)`, which hands back the free heap pages
//!    the handshakes left between the sessions' memory;
//! 5. has every session read the 1 KiB resource K times, all sessions at once (one
//!    read in flight per session): the reads per second across them, and the RSS
//!    again, idle after use;
//! 6. closes them all (each its DELETE, where the era has sessions) and counts fds and
//!    tasks once more, after a short grace for the closed connections' tasks to end.
//!
//! Prints one JSON object.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::json;

use crate::URI;

/// The settings of one sessions run.
pub struct SessionSettings {
    pub url: String,
    pub sessions: usize,
    pub reads: usize,
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Raises the soft fd limit to the hard one; returns the limit now in force.
pub fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read or write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    lim.rlim_cur
}

struct Counts {
    rss_kib: u64,
    fds: usize,
    tasks: usize,
}

fn counts() -> Counts {
    Counts {
        rss_kib: capable_test_support::own_status_kib("VmRSS"),
        fds: open_fds(),
        tasks: tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
    }
}

/// Waits up to `limit` for the fd and task counts to come back to `base`, so a
/// connection still being torn down is not taken for a leak; the counts at the end.
async fn settle(base: &Counts, limit: Duration) -> Counts {
    let start = Instant::now();
    loop {
        let now = counts();
        if (now.fds <= base.fds && now.tasks <= base.tasks) || start.elapsed() >= limit {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn connect(url: &reqwest::Url) -> Result<capable::Session, String> {
    capable::connect_http(
        capable::HttpConfig::new(url.clone()),
        capable::ClientOptions::default(),
    )
    .await
    .map_err(|e| e.to_string())
}

pub async fn run(s: SessionSettings) -> Result<serde_json::Value, String> {
    let nofile = raise_nofile();
    let url = reqwest::Url::parse(&s.url).map_err(|e| e.to_string())?;
    // One session first: what the process sets up once is in the baseline.
    let first = connect(&url).await?;
    let era = first.protocol_version().as_str().to_owned();
    first.read_resource(URI).await.map_err(|e| e.to_string())?;
    first.close().await;
    let base = settle(
        &Counts {
            rss_kib: 0,
            fds: 0,
            tasks: 0,
        },
        Duration::from_millis(300),
    )
    .await;

    let t = Instant::now();
    let opened = join_all((0..s.sessions).map(|_| connect(&url))).await;
    let all_ready = t.elapsed();
    let mut sessions = Vec::with_capacity(s.sessions);
    for session in opened {
        sessions.push(session?);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let open = counts();
    // The same after the allocator hands free heap pages back (what the handshakes
    // used and freed, between what the sessions keep): what the sessions hold.
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe { libc::malloc_trim(0) };
    let trimmed = capable_test_support::own_status_kib("VmRSS");

    let t = Instant::now();
    let reads = join_all(sessions.iter().map(|session| async move {
        let mut ok = 0usize;
        for _ in 0..s.reads {
            if session.read_resource(URI).await.is_ok() {
                ok += 1;
            }
        }
        ok
    }))
    .await;
    let reading = t.elapsed();
    let ok: usize = reads.iter().sum();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let used = counts();

    let t = Instant::now();
    join_all(sessions.into_iter().map(capable::Session::close)).await;
    let closing = t.elapsed();
    let closed = settle(&base, Duration::from_secs(5)).await;

    let per_session = |c: &Counts| (c.rss_kib as f64 - base.rss_kib as f64) / s.sessions as f64;
    Ok(json!({
        "sessions": s.sessions,
        "era": era,
        "nofile_limit": nofile,
        "all_ready_ms": all_ready.as_secs_f64() * 1e3,
        "handshakes_per_s": s.sessions as f64 / all_ready.as_secs_f64(),
        "rss_kib": {"before": base.rss_kib, "open": open.rss_kib, "after_reads": used.rss_kib},
        "kib_per_idle_session": per_session(&open),
        "kib_per_idle_session_trimmed": (trimmed as f64 - base.rss_kib as f64) / s.sessions as f64,
        "kib_per_session_after_reads": per_session(&used),
        "reads": s.sessions * s.reads,
        "reads_ok": ok,
        "reads_per_s": ok as f64 / reading.as_secs_f64(),
        "close_ms": closing.as_secs_f64() * 1e3,
        "fds": {"before": base.fds, "open": open.fds, "after_close": closed.fds},
        "tasks": {"before": base.tasks, "open": open.tasks, "after_close": closed.tasks},
        "fd_growth": closed.fds as i64 - base.fds as i64,
        "task_growth": closed.tasks as i64 - base.tasks as i64,
    }))
}
