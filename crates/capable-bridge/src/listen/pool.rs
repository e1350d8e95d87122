//! The listener's host tasks, each with its server behind: legacy sessions by their
//! `Mcp-Session-Id`, 2026-07-28 hosts by their declaration (`moderns.rs`). Every one
//! costs a server process or connection, so the pool is bounded and lets go:
//!
//! - at most `max` tasks at once; a new one past that ends the task used least
//!   recently among those with nothing in flight (a legacy host of it gets `404` next
//!   time and starts anew, as the transport provides); when every one is busy, the new
//!   one is refused ([`Busy`]: `503` with `Retry-After`) and nothing else is disturbed;
//! - a task with nothing in flight for `idle` is ended ([`Pool::expire`]), its server
//!   shut down: a host that vanished holds nothing for ever;
//! - a request holds its task busy for as long as its answer is being sent
//!   ([`InFlight`]), a standalone `GET` stream for as long as it is open.
//!
//! Ending a task sends it [`Command::End`]: it stops at once and shuts its server down,
//! whatever handlers of its requests still hold.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::session::Command;

/// A task's commands.
pub type Commands = mpsc::UnboundedSender<Command>;

/// A request (or stream) in flight at a task, for as long as this lives.
#[derive(Debug)]
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::AcqRel);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

struct Task {
    commands: Commands,
    in_flight: Arc<AtomicUsize>,
    used: Instant,
}

impl Task {
    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    fn hold(&mut self, now: Instant) -> (Commands, InFlight) {
        self.used = now;
        (self.commands.clone(), InFlight::new(&self.in_flight))
    }
}

/// Every task is busy: the new one waits for none of them.
#[derive(Debug)]
pub struct Busy;

/// The tasks of one kind (see the module documentation).
pub struct Pool {
    tasks: HashMap<String, Task>,
    max: usize,
}

impl Pool {
    /// A pool of at most `max` tasks.
    pub fn new(max: usize) -> Pool {
        Pool {
            tasks: HashMap::new(),
            max: max.max(1),
        }
    }

    /// The task of `key`, started by `spawn` if there is none (making room if need
    /// be), and the request's hold on it.
    pub fn task(
        &mut self,
        key: &str,
        now: Instant,
        spawn: impl FnOnce() -> Commands,
    ) -> Result<(Commands, InFlight), Busy> {
        self.tasks.retain(|_, t| !t.commands.is_closed());
        if let Some(task) = self.tasks.get_mut(key) {
            return Ok(task.hold(now));
        }
        if self.tasks.len() >= self.max {
            let idle = self
                .tasks
                .iter()
                .filter(|(_, t)| t.idle())
                .min_by_key(|(_, t)| t.used)
                .map(|(key, _)| key.clone());
            self.remove(&idle.ok_or(Busy)?);
        }
        let mut task = Task {
            commands: spawn(),
            in_flight: Arc::new(AtomicUsize::new(0)),
            used: now,
        };
        let held = task.hold(now);
        self.tasks.insert(key.to_owned(), task);
        Ok(held)
    }

    /// The task of `key` if it runs, and the request's hold on it.
    pub fn hold(&mut self, key: &str, now: Instant) -> Option<(Commands, InFlight)> {
        let task = self.tasks.get_mut(key)?;
        (!task.commands.is_closed()).then(|| task.hold(now))
    }

    /// The task of `key` if it runs, with no hold (for a notification).
    pub fn existing(&self, key: &str) -> Option<Commands> {
        self.tasks.get(key).map(|t| t.commands.clone())
    }

    /// The task of `from` known as `to` from now on (a sealed session's id, made once
    /// its `initialize` was answered); whether there was one.
    pub fn rename(&mut self, from: &str, to: &str) -> bool {
        match self.tasks.remove(from) {
            Some(task) => {
                self.tasks.insert(to.to_owned(), task);
                true
            }
            None => false,
        }
    }

    /// Ends the task of `key` now (a `DELETE`, or to make room); whether there was one.
    pub fn remove(&mut self, key: &str) -> bool {
        match self.tasks.remove(key) {
            Some(task) => {
                let _ = task.commands.send(Command::End);
                true
            }
            None => false,
        }
    }

    /// Ends every task with nothing in flight since `idle` before `now`; how many.
    pub fn expire(&mut self, now: Instant, idle: Duration) -> usize {
        let old: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.idle() && now.saturating_duration_since(t.used) >= idle)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &old {
            self.remove(key);
        }
        old.len()
    }

    /// Ends every task (the listener stops).
    pub fn clear(&mut self) {
        for (_, task) in self.tasks.drain() {
            let _ = task.commands.send(Command::End);
        }
    }

    /// How many tasks run.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.tasks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool whose tasks are channels the test keeps the ends of.
    struct Fixture {
        pool: Pool,
        ends: Vec<mpsc::UnboundedReceiver<Command>>,
    }

    impl Fixture {
        fn task(&mut self, key: &str, now: Instant) -> Result<(Commands, InFlight), Busy> {
            let ends = &mut self.ends;
            self.pool.task(key, now, || {
                let (tx, rx) = mpsc::unbounded_channel();
                ends.push(rx);
                tx
            })
        }
    }

    fn ended(rx: &mut mpsc::UnboundedReceiver<Command>) -> bool {
        matches!(rx.try_recv(), Ok(Command::End))
    }

    #[test]
    fn past_the_limit_the_least_recently_used_idle_task_makes_room_and_busy_ones_stay() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut f = Fixture {
            pool: Pool::new(3),
            ends: Vec::new(),
        };
        let mut held: Vec<_> = (0..3)
            .map(|i| f.task(&i.to_string(), at(i)).unwrap())
            .collect();
        // Every one busy: a new task is refused, and nothing is ended.
        assert!(f.task("new", at(10)).is_err());
        assert!(f.ends.iter_mut().all(|rx| !ended(rx)));
        // 0 and 1 go idle, 0 used since: 1 makes room, and is told to end.
        held.drain(..2);
        drop(f.pool.hold("0", at(11)).unwrap());
        let (_new, _hold) = f.task("new", at(12)).unwrap();
        assert!(ended(&mut f.ends[1]));
        assert!(f.pool.existing("1").is_none());
        assert!(f.pool.existing("0").is_some());
        assert_eq!(f.pool.len(), 3);
    }

    #[test]
    fn a_task_idle_past_its_time_is_ended_and_one_in_use_is_not() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(60);
        let mut f = Fixture {
            pool: Pool::new(8),
            ends: Vec::new(),
        };
        drop(f.task("quiet", t0).unwrap());
        let busy = f.task("busy", t0).unwrap();
        assert_eq!(f.pool.expire(t0 + Duration::from_secs(59), idle), 0);
        assert_eq!(f.pool.expire(t0 + idle, idle), 1);
        assert!(ended(&mut f.ends[0]));
        assert!(f.pool.hold("quiet", t0 + idle).is_none());
        // Busy past its time: kept; once let go and idle long enough, ended too.
        drop(busy);
        assert_eq!(f.pool.expire(t0 + idle, idle), 1);
        assert_eq!(f.pool.len(), 0);
        // A DELETE ends a task at once, held or not.
        let _held = f.task("deleted", t0).unwrap();
        assert!(f.pool.remove("deleted"));
        assert!(ended(f.ends.last_mut().unwrap()));
    }
}
