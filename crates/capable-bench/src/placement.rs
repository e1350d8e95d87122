//! Where the client and the server run.
//!
//! On a machine with few cores the scheduler decides much of a stdio benchmark: a
//! client and a server on one core hand over with a context switch (a round trip of
//! a few microseconds, all CPU), on two cores with a cross-core wake-up (tens of
//! microseconds on a virtual machine, mostly waiting). Left free, a run can land in
//! either and even switch midway, so the bench pins both processes:
//!
//! - `split`: the client on CPU 0, the server on CPU 1 (a host and its server on
//!   cores of their own; latency-bound);
//! - `shared`: both on CPU 0 (one core for both; every instruction either side spends
//!   shows in the throughput);
//! - `free`: no pinning.
//!
//! The runner passes the CPUs to each client process in the environment; the client
//! pins itself, and the bench server (spawned by the client, so it inherits the
//! environment) pins itself on start.

/// The client's CPU, read by the client process.
pub const CLIENT_CPU: &str = "CAPABLE_BENCH_CLIENT_CPU";
/// The server's CPU, read by the bench servers.
pub const SERVER_CPU: &str = "CAPABLE_BENCH_SERVER_CPU";

/// See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Split,
    Shared,
    Free,
}

impl Placement {
    pub fn parse(s: &str) -> Result<Placement, String> {
        match s {
            "split" => Ok(Placement::Split),
            "shared" => Ok(Placement::Shared),
            "free" => Ok(Placement::Free),
            other => Err(format!(
                "--placement: {other:?} is not split, shared or free"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Split => "split",
            Placement::Shared => "shared",
            Placement::Free => "free",
        }
    }

    /// The environment a client process is started with: `(variable, cpu)` pairs.
    pub fn env(self) -> Vec<(&'static str, String)> {
        match self {
            Placement::Split => vec![(CLIENT_CPU, "0".into()), (SERVER_CPU, "1".into())],
            Placement::Shared => vec![(CLIENT_CPU, "0".into()), (SERVER_CPU, "0".into())],
            Placement::Free => Vec::new(),
        }
    }

    /// Whether this machine can honour it (`split` needs two CPUs).
    pub fn check(self) -> Result<(), String> {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        if self == Placement::Split && cpus < 2 {
            return Err(format!(
                "--placement split needs two CPUs; this process may use {cpus} (try --placement shared)"
            ));
        }
        Ok(())
    }
}

/// Pins the calling process to the CPU named by `var`, when it is set. A failure is
/// reported on stderr, never fatal: the figures are then those of a free placement.
pub fn pin_from_env(var: &str) {
    let Some(cpu) = std::env::var(var)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    else {
        return;
    };
    // SAFETY: `set` is a plain bit set on the stack, initialised by CPU_ZERO before
    // use; sched_setaffinity only reads it.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    if !ok {
        eprintln!(
            "capable-bench: could not pin to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}
