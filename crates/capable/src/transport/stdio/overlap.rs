//! Whether the server can work while the client decodes a burst of its answers.
//!
//! When many requests are in flight, a server's answers arrive in bursts: one read of
//! the pipe holds dozens of them. Decoding a burst wakes each caller, and each caller
//! sends its next request; the writer sends all of those in one write once the burst
//! is done. If the server has a CPU of its own, it sits idle for the whole burst, and
//! the two processes take turns instead of working side by side.
//!
//! So, when the two can run at once, the reader pauses within a burst (it yields to
//! the runtime) after its [`FIRST`] lines and then every [`EVERY`] lines: the callers
//! answered so far run, their requests go out in one write, and the server works on
//! them while the rest of the burst is decoded. With client and server pinned to CPUs
//! of their own this takes pipelined reads from below the tokio-pipe floor (which
//! writes once per read of the pipe) to well above it (`BENCHMARKS.md`). On one CPU the
//! same pause costs a context switch and a write each time and gains nothing, so the
//! reader keeps one write per burst there.
//!
//! Whether to pause is the host's to choose ([`BurstPauses`], in
//! [`StdioLimits`](super::StdioLimits) and
//! [`ClientOptions::burst_pauses`](crate::ClientOptions::burst_pauses)). By default
//! ([`BurstPauses::WhenParallel`]) "can run at once" is asked once, at the first long
//! burst (the server has set up its own placement by then): on Linux, whether the CPUs
//! this thread and the server may use (their affinity masks) number more than one
//! between them; elsewhere, or when a mask cannot be read, whether this process may use
//! more than one CPU. A host that knows where its server runs says so instead.

/// After how many lines of a burst the first pause comes: early, so that the server
/// starts soon.
const FIRST: u32 = 4;
/// How many lines are decoded between the later pauses of the same burst: the server
/// has work by then, and each pause costs a write and a wake-up.
const EVERY: u32 = 8;

/// Whether the stdio reader pauses within a long burst of the server's answers, so
/// that the server works on the requests they free while the rest of the burst is
/// decoded (see `transport/stdio/overlap.rs`; `BENCHMARKS.md`, "Pipelined reads above
/// the floor"). Pausing pays off when the server has a CPU of its own (pipelined reads
/// more than doubled in the benchmark's split placement) and costs when it shares this
/// client's (a context switch and a write each time: pipelined reads halved there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BurstPauses {
    /// Pause when the server can run while this client does: on Linux, when the CPUs
    /// this thread and the server process may use (their affinity masks) number more
    /// than one between them; elsewhere, or when a mask cannot be read, when this
    /// process may use more than one CPU. Asked once, at the first long burst.
    #[default]
    WhenParallel,
    /// Always pause: the server is known to have a CPU of its own.
    Always,
    /// Never pause (one write per burst): the server is known to share this client's
    /// CPU.
    Never,
}

/// Whether pausing within a burst pays off: worked out once, when first asked.
#[derive(Debug)]
pub(super) struct Overlap {
    server: Option<u32>,
    known: Option<bool>,
}

impl Overlap {
    /// For the server process `server` (its pid, when it is known), as `pauses` says.
    pub(super) fn new(server: Option<u32>, pauses: BurstPauses) -> Overlap {
        let known = match pauses {
            BurstPauses::WhenParallel => None,
            BurstPauses::Always => Some(true),
            BurstPauses::Never => Some(false),
        };
        Overlap { server, known }
    }

    /// Whether to pause now, `run` lines into a burst that goes on: at the pause
    /// points, if the server can run while this process does.
    pub(super) fn pause_after(&mut self, run: u32) -> bool {
        run >= FIRST && (run - FIRST).is_multiple_of(EVERY) && self.possible()
    }

    /// Whether the server can run while this process does.
    fn possible(&mut self) -> bool {
        *self.known.get_or_insert_with(|| parallel(self.server))
    }
}

/// Whether this process and `server` have more than one CPU between them.
fn parallel(server: Option<u32>) -> bool {
    match affinity::union_count(server) {
        Some(n) => n > 1,
        None => std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
    }
}

#[cfg(target_os = "linux")]
mod affinity {
    /// How many CPUs this thread and process `server` may run on between them; `None`
    /// when either mask cannot be read.
    pub(super) fn union_count(server: Option<u32>) -> Option<u32> {
        let ours = mask(0)?;
        let theirs = mask(libc::pid_t::try_from(server?).ok()?)?;
        u32::try_from(in_set(|c| is_set(c, &ours) || is_set(c, &theirs)).count()).ok()
    }

    /// The CPUs in `set`.
    #[cfg(test)]
    pub(super) fn cpus(set: &libc::cpu_set_t) -> impl Iterator<Item = usize> + '_ {
        in_set(|c| is_set(c, set))
    }

    /// The CPU numbers a set can hold, those for which `test` holds.
    fn in_set(test: impl Fn(usize) -> bool) -> impl Iterator<Item = usize> {
        (0..usize::try_from(libc::CPU_SETSIZE).unwrap_or(0)).filter(move |&c| test(c))
    }

    fn is_set(cpu: usize, set: &libc::cpu_set_t) -> bool {
        // SAFETY: a bit test of an initialised cpu_set_t; `cpu` is below CPU_SETSIZE.
        unsafe { libc::CPU_ISSET(cpu, set) }
    }

    pub(super) fn mask(pid: libc::pid_t) -> Option<libc::cpu_set_t> {
        // SAFETY: an all-zero cpu_set_t is a valid empty set; the kernel writes at most
        // `size_of::<cpu_set_t>()` bytes into it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            (libc::sched_getaffinity(pid, size, &mut set) == 0).then_some(set)
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod affinity {
    /// Not known off Linux: only this process's own CPU count is asked.
    pub(super) fn union_count(_server: Option<u32>) -> Option<u32> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn pin(pid: libc::pid_t, cpu: usize) {
        // SAFETY: a zeroed set is empty; CPU_SET only sets a bit in it.
        unsafe {
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            let size = std::mem::size_of::<libc::cpu_set_t>();
            assert_eq!(libc::sched_setaffinity(pid, size, &one), 0);
        }
    }

    #[test]
    fn pauses_come_after_the_first_lines_of_a_burst_then_at_a_steady_pace() {
        let mut overlap = Overlap {
            server: None,
            known: Some(true),
        };
        let pauses: Vec<u32> = (1..=40).filter(|&run| overlap.pause_after(run)).collect();
        assert_eq!(
            pauses,
            [
                FIRST,
                FIRST + EVERY,
                FIRST + 2 * EVERY,
                FIRST + 3 * EVERY,
                FIRST + 4 * EVERY
            ]
        );
        overlap.known = Some(false);
        assert!((1..=40).all(|run| !overlap.pause_after(run)));
    }

    /// A `sleep` process standing in for a server, killed when dropped.
    struct Server(std::process::Child);

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_server_on_our_only_cpu_gives_no_overlap_and_one_on_another_cpu_does() {
        // The CPUs this process may use, from its own mask (not CPU 0 and 1, which a
        // restricted cpuset may not hold).
        let ours = affinity_mask_cpus();
        let server = Server(
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap(),
        );
        let pid = server.0.id();
        // On a thread of its own: pinning it changes only that thread's mask.
        std::thread::spawn(move || {
            pin(0, ours[0]);
            pin(pid as libc::pid_t, ours[0]);
            assert!(!Overlap::new(Some(pid), BurstPauses::WhenParallel).possible());
            // No server known: only this thread's own CPUs count (one, now).
            assert!(!Overlap::new(None, BurstPauses::WhenParallel).possible());
            // The host's word is taken as it is.
            assert!(Overlap::new(Some(pid), BurstPauses::Always).possible());
            if let Some(&other) = ours.get(1) {
                pin(pid as libc::pid_t, other);
                assert!(Overlap::new(Some(pid), BurstPauses::WhenParallel).possible());
                assert!(!Overlap::new(Some(pid), BurstPauses::Never).possible());
            }
        })
        .join()
        .unwrap();
        drop(server);
        // A server that is gone: this process's own CPUs decide.
        let parallel = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        assert_eq!(
            Overlap::new(Some(pid), BurstPauses::WhenParallel).possible(),
            parallel
        );
    }

    fn affinity_mask_cpus() -> Vec<usize> {
        affinity::cpus(&affinity::mask(0).unwrap()).collect()
    }
}
