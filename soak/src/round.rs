//! What a round's tasks share ([`Round`]), and the checks they make as they go.
//!
//! A failed check goes through [`fail!`]: it prints the round's seed and the place of the
//! check, marks the run failed, and lets the round go on, so that one failure does not hide
//! the next; the run stops when the round ends. Lateness is not a failure on a shared
//! machine: it is counted, and printed past 2 s (and past 10 ms in the quiet mode, where few
//! tasks run and none spins).
//!
//! Which clock a check reads depends on the mode. On the real clock the checks read std's, as
//! an outside observer does, so a timer that the runtime's own reading would let through early
//! is still caught. Where the runtime's clock can be paused they read the runtime's, which
//! then only the runtime moves; in the exact mode, where only auto-advance moves it, each
//! completion must land on its deadline rounded up to the tick.

use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant as StdInstant};

use escapement::time::{Instant, Sleep};
use escapement::Handle;

use crate::counts::Counts;
use crate::ops::Op;

/// Set by the first failed check or unexpected panic; the run stops at the end of the round.
pub(crate) static FAILED: AtomicBool = AtomicBool::new(false);

/// Failures printed so far; past [`PRINTED_FAILURES`] they are only counted.
static FAILURES: AtomicU64 = AtomicU64::new(0);
const PRINTED_FAILURES: u64 = 50;

/// The instant the watchdog's times count from.
static START: OnceLock<StdInstant> = OnceLock::new();

/// Nanoseconds since the process started (its first call).
pub(crate) fn elapsed_ns() -> u64 {
    START.get_or_init(StdInstant::now).elapsed().as_nanos() as u64
}

/// Records a failed check of `$round` (a `Round`, or a reference or `Arc` to one).
macro_rules! fail {
    ($round:expr, $($arg:tt)*) => {
        $crate::round::record_failure(&$round, format_args!($($arg)*), file!(), line!())
    };
}
pub(crate) use fail;

pub(crate) fn record_failure(round: &Round, msg: fmt::Arguments<'_>, file: &str, line: u32) {
    FAILED.store(true, SeqCst);
    if FAILURES.fetch_add(1, Relaxed) < PRINTED_FAILURES {
        eprintln!(
            "FAIL seed={} ({}) [{file}:{line}]: {msg}",
            round.seed, round.desc
        );
    }
}

/// How a round's clock moves, and so what its checks can demand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// The real clock: never early, lateness counted.
    Real,
    /// The real clock with few tasks and only timer operations, none spinning or blocking:
    /// lateness past 10 ms is printed.
    Quiet,
    /// Started paused; auto-advance moves the clock, and the round's body calls `advance`
    /// beside the tasks: never early, but a deadline an advance passed before the first poll
    /// completes off the tick grid.
    Paused,
    /// Started paused, moved by auto-advance alone: every completion lands exactly on its
    /// deadline rounded up to the tick.
    Exact,
    /// The real clock, which the body pauses, advances and resumes: never early.
    Toggle,
}

impl Mode {
    const NAMES: [(&str, Mode); 5] = [
        ("real", Mode::Real),
        ("quiet", Mode::Quiet),
        ("paused", Mode::Paused),
        ("exact", Mode::Exact),
        ("toggle", Mode::Toggle),
    ];

    /// The mode of a command-line name.
    pub(crate) fn parse(name: &str) -> Option<Mode> {
        Mode::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, mode)| mode)
    }

    /// The mode's command-line name.
    pub(crate) fn name(self) -> &'static str {
        Mode::NAMES
            .iter()
            .find(|(_, m)| *m == self)
            .map(|&(n, _)| n)
            .expect("every mode is named")
    }
}

/// What one top-level task is doing, for the watchdog.
pub(crate) struct Slot {
    /// The operation in flight, as an index into [`Op::ALL`], or [`IDLE`].
    op: AtomicU32,
    began_ns: AtomicU64,
    /// When the operation should be over on the real clock (its start on a paused one).
    due_ns: AtomicU64,
    /// How many times the task finished: exactly once by the end of the round.
    pub(crate) reports: AtomicU32,
    slow_reported: AtomicBool,
}

const IDLE: u32 = u32::MAX;

impl Slot {
    fn new() -> Slot {
        Slot {
            op: AtomicU32::new(IDLE),
            began_ns: AtomicU64::new(0),
            due_ns: AtomicU64::new(0),
            reports: AtomicU32::new(0),
            slow_reported: AtomicBool::new(false),
        }
    }
}

/// One round: its configuration, and what its tasks share.
pub(crate) struct Round {
    pub(crate) seed: u64,
    pub(crate) desc: String,
    pub(crate) mode: Mode,
    pub(crate) multi: bool,
    pub(crate) tick: Duration,
    /// The runtime's reading when the round began: on a paused clock, a tick boundary.
    origin: OnceLock<Instant>,
    /// What each top-level task is doing: slot `i` is task `i`'s (slot 0 is unused). The
    /// operations that tasks run for them (`Nested`, and the second of two at once) are not
    /// watched.
    pub(crate) slots: Vec<Slot>,
    pub(crate) counts: Counts,
    /// Task futures not yet dropped (see `checked`).
    pub(crate) alive: AtomicI64,
    /// Detached children not yet finished.
    pub(crate) detached: AtomicI64,
    /// Threads that hold timers (or run a task's work), joined before the round ends.
    pub(crate) threads: Mutex<Vec<thread::JoinHandle<()>>>,
    /// A second runtime, whose timers the tasks use beside their own.
    pub(crate) other: Mutex<Option<Handle>>,
    /// Held by the round while its threads wait for the shutdown; dropped once it is over.
    pub(crate) shutdown_over: Mutex<Vec<Sender<()>>>,
}

impl Round {
    pub(crate) fn new(
        seed: u64,
        desc: String,
        mode: Mode,
        multi: bool,
        tick: Duration,
        tasks: usize,
    ) -> Round {
        Round {
            seed,
            desc,
            mode,
            multi,
            tick,
            origin: OnceLock::new(),
            slots: (0..=tasks).map(|_| Slot::new()).collect(),
            counts: Counts::new(),
            alive: AtomicI64::new(0),
            detached: AtomicI64::new(0),
            threads: Mutex::new(Vec::new()),
            other: Mutex::new(None),
            shutdown_over: Mutex::new(Vec::new()),
        }
    }

    /// Whether the checks read std's clock: the real clock's modes but `Toggle`, whose pauses
    /// std's clock would not see.
    pub(crate) fn std_clock(&self) -> bool {
        matches!(self.mode, Mode::Real | Mode::Quiet)
    }

    pub(crate) fn quiet(&self) -> bool {
        self.mode == Mode::Quiet
    }

    /// Whether the clock starts paused (so only the runtime moves it).
    pub(crate) fn starts_paused(&self) -> bool {
        matches!(self.mode, Mode::Paused | Mode::Exact)
    }

    pub(crate) fn exact(&self) -> bool {
        self.mode == Mode::Exact
    }

    /// Records the runtime's reading at the start; call inside the runtime.
    pub(crate) fn set_origin(&self) {
        self.origin
            .set(Instant::now())
            .expect("the origin is set once");
    }

    /// Now by the clock the checks read: std's on the real clock, the runtime's otherwise.
    pub(crate) fn now(&self) -> Instant {
        if self.std_clock() {
            Instant::from_std(StdInstant::now())
        } else {
            Instant::now()
        }
    }

    /// [`now`](Round::now) on a thread outside the runtime.
    pub(crate) fn now_outside(&self, handle: &Handle) -> Instant {
        let _guard = handle.enter();
        self.now()
    }

    /// `t` rounded up to the tick grid that starts at the origin.
    pub(crate) fn round_up(&self, t: Instant) -> Instant {
        let origin = *self
            .origin
            .get()
            .expect("the origin is set before any task runs");
        let since = t.saturating_duration_since(origin).as_nanos();
        let tick = self.tick.as_nanos();
        origin + Duration::from_nanos((since.div_ceil(tick) * tick) as u64)
    }

    /// Marks `op` in flight in `slot`, due to end within about `expect` on the real clock.
    pub(crate) fn begin(&self, slot: usize, op: Op, expect: Duration) {
        let slot = &self.slots[slot];
        let now = elapsed_ns();
        slot.began_ns.store(now, Relaxed);
        let expect = if self.std_clock() {
            expect.as_nanos().min(1 << 50) as u64
        } else {
            0
        };
        slot.due_ns.store(now + expect, Relaxed);
        slot.slow_reported.store(false, Relaxed);
        // Last, and released: the watchdog reads `op` first, then the times.
        slot.op.store(op as u32, Release);
    }

    pub(crate) fn end(&self, slot: usize) {
        self.slots[slot].op.store(IDLE, Relaxed);
    }

    /// A timer's completion seen at `t`, for `deadline`, read inside the runtime.
    pub(crate) fn check(&self, what: &str, deadline: Instant, t: Instant) {
        self.counts.timer_checks.fetch_add(1, Relaxed);
        if t < deadline {
            fail!(
                self,
                "{what}: {:?} early (deadline {deadline:?}, done {t:?})",
                deadline - t
            );
        } else if self.exact() {
            let due = self.round_up(deadline);
            if t != due {
                fail!(
                    self,
                    "{what}: done at {t:?}, its deadline rounded up to the tick is {due:?}"
                );
            }
        } else if !self.starts_paused() {
            self.late(what, t - deadline);
        }
    }

    /// Only "not early", and lateness on the real clock: for completions seen outside the
    /// runtime, or that another thread's reading races.
    pub(crate) fn check_not_early(&self, what: &str, deadline: Instant, t: Instant) {
        self.counts.timer_checks.fetch_add(1, Relaxed);
        if t < deadline {
            fail!(self, "{what}: {:?} early", deadline - t);
        } else if self.std_clock() {
            self.late(what, t - deadline);
        }
    }

    /// On the exact clock, an operation that completes at its first poll must not have let
    /// the clock move.
    pub(crate) fn check_at_once(&self, what: &str, start: Instant, t: Instant) {
        if self.exact() && t != start {
            fail!(
                self,
                "{what}: should have been done at once, the clock moved {:?}",
                t - start
            );
        }
    }

    /// `is_elapsed` must not be true before the deadline.
    pub(crate) fn probe(&self, what: &str, sleep: &Sleep) {
        let elapsed = sleep.is_elapsed();
        let now = Instant::now();
        if elapsed && now < sleep.deadline() {
            fail!(
                self,
                "{what}: is_elapsed() {:?} before the deadline",
                sleep.deadline() - now
            );
        }
    }

    pub(crate) fn late(&self, what: &str, late: Duration) {
        self.counts
            .max_late_ns
            .fetch_max(late.as_nanos() as u64, Relaxed);
        if late > Duration::from_millis(200) {
            self.counts.late_200ms.fetch_add(1, Relaxed);
        }
        if self.quiet() && late > Duration::from_millis(10) {
            self.counts.quiet_late.fetch_add(1, Relaxed);
            eprintln!("QUIET-LATE seed={} {what}: {late:?} late", self.seed);
        }
        if late > Duration::from_secs(2) {
            self.counts.late_2s.fetch_add(1, Relaxed);
            eprintln!("NOTE seed={} {what}: {late:?} late", self.seed);
        }
    }

    /// Prints the top-level tasks' operations in flight (for a round that hangs).
    pub(crate) fn print_in_flight(&self) {
        let now = elapsed_ns();
        let mut busy = 0;
        for (i, slot) in self.slots.iter().enumerate() {
            // Read once: the operation may end meanwhile.
            let Some(&op) = Op::ALL.get(slot.op.load(Acquire) as usize) else {
                continue;
            };
            busy += 1;
            if busy <= 40 {
                let began = Duration::from_nanos(now.saturating_sub(slot.began_ns.load(Relaxed)));
                eprintln!("  in flight: task {i}'s {op:?}, for {began:?}");
            }
        }
        let alive = self.alive.load(SeqCst);
        eprintln!("  {busy} operations in flight; {alive} task futures alive");
    }

    /// Prints each operation past its due end by 2 s on the real clock, once.
    pub(crate) fn print_slow(&self) {
        if !self.std_clock() {
            return;
        }
        let now = elapsed_ns();
        for (i, slot) in self.slots.iter().enumerate() {
            let Some(&op) = Op::ALL.get(slot.op.load(Acquire) as usize) else {
                continue;
            };
            let due = slot.due_ns.load(Relaxed);
            if now > due + 2_000_000_000 && !slot.slow_reported.swap(true, Relaxed) {
                let past = Duration::from_nanos(now - due);
                eprintln!(
                    "SLOW seed={} task {i}'s {op:?}: {past:?} past its due end",
                    self.seed
                );
            }
        }
    }
}
