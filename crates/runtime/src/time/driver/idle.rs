//! What the driver does for the threads of a runtime that go idle: worker 0's park on its
//! next expiry, the other workers' standing in for it while it is stuck in a poll, and the
//! jump of a paused clock when every thread is idle.
//!
//! Worker 0 parks in two steps: [`Driver::prepare_park`] stores the tick it sleeps toward in
//! `sleeping_until` with every shard's lock held (the driver's note, "Shards", says why), and
//! [`Driver::unparked`] stores `AWAKE` once it runs again. A thread other than worker 0 sleeps
//! no longer than [`Driver::stand_in_timeout`] says, and one of them at a time, the watch,
//! wakes every [`STAND_IN_WATCH`] while worker 0 is not parked. On a paused clock, the count
//! of active threads decides when time may jump ([`Driver::try_auto_advance`]).

use std::time::Duration;

use super::{Driver, AWAKE, NEVER};
use crate::loom::{Arc, AtomicBool, Ordering};
use crate::time::park::Wakeup;

/// In the driver's count of active threads: worker 0, the only active thread, is moving a
/// paused clock to the next timer. A thread that becomes active meanwhile waits until the
/// clock has moved, so no thread sees the clock jump in the middle of what it runs.
const ADVANCING: usize = 1 << (usize::BITS - 1);

/// How overdue the next timer must be before a thread other than worker 0 fires it. Worker 0,
/// when merely busy, fires due timers between two task polls, microseconds apart; a timer this
/// late means it is stuck in one long poll. Stepping in sooner would only move timer work
/// (and the wakes it makes) off worker 0 for nothing.
///
/// It is also how long a stand-in that found the wheel overdue but could not fire it (a
/// shard's lock was held: by a thread firing it, or by its worker registering or cancelling)
/// waits before it looks again.
pub(crate) const STAND_IN_GRACE: Duration = Duration::from_micros(200);

/// The longest that one idle thread other than worker 0, the watch, sleeps while worker 0 is
/// not parked. Worker 0 may be stuck in a long poll then, and a timer registered after the
/// idle threads went to sleep (by worker 0 before the poll, or from outside) wakes no one, as
/// only a registration earlier than worker 0's park makes a syscall. The watch wakes up
/// this often to fire what is overdue, so such a timer is late by at most this much and the
/// grace. One thread watches at a time: while worker 0 is awake and another thread sleeps,
/// the runtime pays 200 wake-ups a second, whatever its worker count, and none otherwise. A
/// shorter period costs more CPU, a longer one more lateness (`docs/benchmarks.md`, "The
/// watch").
pub(crate) const STAND_IN_WATCH: Duration = Duration::from_millis(5);

/// The thread that holds it is the watch (see [`Driver::try_watch`]).
pub(crate) struct Watch<'a>(&'a AtomicBool);

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// A thread waking a task of the runtime, counted active until the task is queued and its
/// worker unparked (see [`Driver::hold_clock`]).
pub(crate) struct ClockHold(Arc<Driver>);

impl Drop for ClockHold {
    fn drop(&mut self) {
        self.0.deactivate();
    }
}

impl Driver {
    /// For a wake of a task of the runtime, before it marks the task woken: counts the
    /// waking thread active until the hold drops, once the task is queued, unless the clock
    /// was never paused or the thread is counted already (`counted`, asked only if it was).
    ///
    /// A thread the count does not hold (outside the runtime) would otherwise be invisible
    /// between marking the task and queueing it. If the task's own timer fired then, its wake
    /// would find the task marked and add nothing, and worker 0, finding no work and itself
    /// the only active thread, would move a paused clock past that timer before the task ran.
    ///
    /// The hold is taken before the mark, and [`Driver::activate`] waits while worker 0 moves
    /// the clock. That wait cannot deadlock: worker 0 takes the shards' locks then, and no
    /// wake happens under one (a firing collects the wakers under the lock and wakes them
    /// after it). Nor can a thread holding the clock wait for a thread that waits for it: it
    /// only queues the task and unparks.
    ///
    /// One gap is left: a wake that read the clock as never paused, just as it is first
    /// paused, takes no hold. The clock then moves past the task's timer only if, in the few
    /// instructions between that read and the queueing, the pause, the runtime going idle, an
    /// auto-advance that fires the timer, and a second one all happen.
    pub(crate) fn hold_clock(
        driver: &Arc<Driver>,
        counted: impl FnOnce() -> bool,
    ) -> Option<ClockHold> {
        if !driver.clock.wakes_hold() || counted() {
            return None;
        }
        driver.activate();
        Some(ClockHold(driver.clone()))
    }

    /// Worker 0 is about to park: records the tick it will sleep toward and returns it with
    /// the time until then (`None`: no timeout). A zero wait means something is due already.
    pub(crate) fn prepare_park(&self) -> Option<Wakeup> {
        let tick = self.sleep_toward_next(0, None)?;
        let at = self.tick_instant(tick);
        if self.clock.is_paused() {
            // Paused, worker 0 blocks with no timeout, and a registration wakes it only for a
            // tick before `sleeping_until`. A wheel behind the clock (a timer in a coarse slot
            // whose start the clock passed while it ran) gives a tick the clock has passed:
            // then a timer registered for any tick in between, due already, would wake no one
            // and wait for the next auto-advance, which a blocking closure holds back. So
            // worker 0 catches up first (a zero wait: it does not block) and blocks once every
            // tick up to the clock's is behind it.
            if tick > self.floor_tick(self.clock.now()) {
                return None;
            }
            return Some(Wakeup {
                tick,
                at,
                after: Duration::ZERO,
                fixed: false,
            });
        }
        let after = at.saturating_duration_since(self.clock.now());
        let fixed = !self.clock.ever_paused();
        Some(Wakeup {
            tick,
            at,
            after,
            fixed,
        })
    }

    /// Takes the lock of shard `index` and of every later one, in order, and with them all
    /// held stores in `sleeping_until` the earliest expiry of any shard (`earliest`: that of
    /// the shards before `index`, whose locks the caller holds). Returns that expiry.
    fn sleep_toward_next(&self, index: usize, earliest: Option<u64>) -> Option<u64> {
        let Some(shard) = self.shards.get(index) else {
            self.sleeping_until
                .store(earliest.unwrap_or(NEVER), Ordering::Relaxed);
            return earliest;
        };
        let inner = shard.inner.lock();
        let next = inner.next_expiration();
        // Refreshed here too, not only when timers fire: cancels leave `next_due` early, and
        // a paused runtime whose last timer was cancelled would otherwise look as if it had
        // one to auto-advance to, and worker 0 would never block.
        shard
            .next_due
            .store(next.unwrap_or(NEVER), Ordering::Relaxed);
        let earliest = match (earliest, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let earliest = self.sleep_toward_next(index + 1, earliest);
        drop(inner);
        earliest
    }

    /// Worker 0 is blocking (`true`) or woke (`false`).
    pub(crate) fn set_worker0_parked(&self, parked: bool) {
        self.worker0_parked.store(parked, Ordering::Relaxed);
    }

    /// Whether worker 0 is blocked in its park and stays there until the next timer: no
    /// unpark is on its way to it. One that is will run whatever woke it, perhaps for long,
    /// so a thread that just woke it (a registration, a spawn) must not count on it for the
    /// next timer.
    pub(crate) fn worker0_parked(&self) -> bool {
        // The state first, with Acquire: worker 0 clears the flag before its park moves the
        // state on from `NOTIFIED` (with Release, in `finish`), so a reader that no longer
        // sees the unpark sees the flag cleared.
        !self.unparker.is_notified() && self.worker0_parked.load(Ordering::Relaxed)
    }

    /// The time until the next timer, if one is pending and the clock runs, is overdue enough
    /// for a thread other than worker 0 to stand in for it.
    pub(crate) fn time_to_next(&self) -> Option<Duration> {
        let next = self.next_due()?;
        if self.clock.is_paused() {
            return None;
        }
        let overdue_at = self.tick_instant(next).saturating_add(STAND_IN_GRACE);
        Some(overdue_at.saturating_duration_since(self.clock.now()))
    }

    /// How long a thread other than worker 0 may sleep before it looks whether worker 0 is
    /// stuck and the wheel overdue: `None` (until woken) when worker 0 is parked and will wake
    /// for the next timer itself, or when no timer is pending or the clock is paused, unless
    /// the thread is the watch (`watching`), which sleeps at most [`STAND_IN_WATCH`] on a
    /// running clock.
    pub(crate) fn stand_in_timeout(&self, watching: bool) -> Option<Duration> {
        let next = self.time_to_next();
        if watching && !self.clock.is_paused() {
            // The watch is taken only while worker 0 is not parked.
            return Some(next.map_or(STAND_IN_WATCH, |next| next.min(STAND_IN_WATCH)));
        }
        next.filter(|_| !self.worker0_parked())
    }

    /// Makes the calling thread, about to sleep as a stand-in, the watch, unless another is,
    /// worker 0 is parked, the clock is paused (it moves only when every thread is idle) or
    /// the driver shut down; it stays the watch until the guard drops.
    pub(crate) fn try_watch(&self) -> Option<Watch<'_>> {
        if self.worker0_parked() || self.clock.is_paused() || self.shut_down.load(Ordering::Relaxed)
        {
            return None;
        }
        // Relaxed: the flag only spreads the watching; it orders nothing else.
        self.watching
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .ok()
            .map(|_| Watch(&self.watching))
    }

    /// Worker 0 woke up.
    pub(crate) fn unparked(&self) {
        self.sleeping_until.store(AWAKE, Ordering::Relaxed);
        self.metrics.add(|m| &m.wakeups, 1);
    }

    /// Wakes worker 0 if it is parked.
    pub(crate) fn unpark(&self) {
        self.unparker.unpark(self);
    }

    /// A thread of the runtime became active (see `crate::park`). If worker 0 is moving a
    /// paused clock (it found every other thread idle), waits until the clock has moved:
    /// the thread then runs on one time from start to end.
    pub(crate) fn activate(&self) {
        if self.active.fetch_add(1, Ordering::SeqCst) & ADVANCING != 0 {
            // Worker 0 holds `ADVANCING` for a scan of the shards' next expiry and one store
            // to the clock, taking no lock an activating thread may hold (registrations wake
            // worker 0, and so activate it, after releasing their shard's lock).
            while self.active.load(Ordering::SeqCst) & ADVANCING != 0 {
                crate::loom::thread::yield_now();
            }
        }
    }

    /// A thread of the runtime became idle. The last one of a paused runtime with timers
    /// pending nudges worker 0 to advance the clock.
    pub(crate) fn deactivate(&self) {
        if self.active.fetch_sub(1, Ordering::SeqCst) == 1 && self.should_auto_advance() {
            self.unparker.nudge();
        }
    }

    /// Whether the clock is paused, every thread idle, and a timer pending: time may jump.
    pub(crate) fn should_auto_advance(&self) -> bool {
        self.active.load(Ordering::SeqCst) == 0
            && self.earliest_due() != NEVER
            && self.clock.is_paused()
    }

    /// Worker 0, about to park, with `active` threads counted active (itself included):
    /// if the clock is paused and no other thread is active, moves the clock to the next
    /// timer and fires what is due. Returns whether it did.
    ///
    /// The check and the move are one step for the other threads: `ADVANCING` is claimed
    /// only while the count is still `active`, and a thread that becomes active before the
    /// clock has moved waits in [`Driver::activate`]. A thread that found the count above
    /// `active` and went on to read the clock never sees it jump under it.
    ///
    /// `woken` is asked once `ADVANCING` is claimed: worker 0 was unparked since it looked for
    /// work, by a wake that has already come and gone from the count, and does not jump.
    pub(crate) fn try_auto_advance(&self, active: usize, woken: impl FnOnce() -> bool) -> bool {
        if !self.clock.is_paused()
            || self
                .active
                .compare_exchange(
                    active,
                    active | ADVANCING,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                )
                .is_err()
        {
            return false;
        }
        if woken() {
            self.active.fetch_and(!ADVANCING, Ordering::SeqCst);
            return false;
        }
        let to = self
            .shards
            .iter()
            .filter_map(|shard| shard.inner.lock().next_expiration())
            .min()
            .map(|next| self.tick_instant(next))
            .filter(|&to| self.clock.advance_to(to).is_ok());
        self.active.fetch_and(!ADVANCING, Ordering::SeqCst);
        let Some(to) = to else {
            return false;
        };
        self.process(to);
        true
    }
}
