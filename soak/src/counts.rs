//! The counts a round keeps, and the run's totals.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// Counters of a round, and of the whole run.
pub(crate) struct Counts {
    rounds: AtomicU64,
    pub(crate) tasks: AtomicU64,
    pub(crate) ops: AtomicU64,
    pub(crate) timer_checks: AtomicU64,
    pub(crate) late_200ms: AtomicU64,
    pub(crate) late_2s: AtomicU64,
    pub(crate) quiet_late: AtomicU64,
    pub(crate) max_late_ns: AtomicU64,
}

impl Counts {
    pub(crate) const fn new() -> Counts {
        Counts {
            rounds: AtomicU64::new(0),
            tasks: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            timer_checks: AtomicU64::new(0),
            late_200ms: AtomicU64::new(0),
            late_2s: AtomicU64::new(0),
            quiet_late: AtomicU64::new(0),
            max_late_ns: AtomicU64::new(0),
        }
    }

    /// Adds a finished round's counts to the run's.
    pub(crate) fn add_round_to(&self, total: &Counts) {
        total.rounds.fetch_add(1, Relaxed);
        for (from, to) in [
            (&self.tasks, &total.tasks),
            (&self.ops, &total.ops),
            (&self.timer_checks, &total.timer_checks),
            (&self.late_200ms, &total.late_200ms),
            (&self.late_2s, &total.late_2s),
            (&self.quiet_late, &total.quiet_late),
        ] {
            to.fetch_add(from.load(Relaxed), Relaxed);
        }
        total
            .max_late_ns
            .fetch_max(self.max_late_ns.load(Relaxed), Relaxed);
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rounds = self.rounds.load(Relaxed);
        if rounds > 0 {
            write!(f, "rounds={rounds} ")?;
        }
        write!(
            f,
            "tasks={} ops={} timer_checks={} late>200ms={} late>2s={} quiet_late>10ms={} \
             max_late={:?}",
            self.tasks.load(Relaxed),
            self.ops.load(Relaxed),
            self.timer_checks.load(Relaxed),
            self.late_200ms.load(Relaxed),
            self.late_2s.load(Relaxed),
            self.quiet_late.load(Relaxed),
            Duration::from_nanos(self.max_late_ns.load(Relaxed)),
        )
    }
}
