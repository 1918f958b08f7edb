//! Firing. Worker 0's turn ([`Driver::maybe_process_paced`]), a stand-in's
//! ([`Driver::try_process_overdue`]) and a pass over every shard ([`Driver::process`]) all
//! come down to `process_from`: it takes a shard's due timers out of its wheel under the
//! shard's lock, at most [`WAKE_BATCH`] at a time, and wakes them after releasing it. Each
//! timer is claimed with `FIRING`, its waker taken, and `FIRED` published last, as the design
//! note of `time::driver` describes.
//!
//! # Worker 0's clock readings
//!
//! Worker 0 looks at the earliest deadline at the top of every turn, one relaxed load per
//! shard. With a timer pending, it must also read the clock, and a reading is not cheap
//! beside a short task's turn: reading it at every turn took 6 to 11 % of the CPU time of a
//! storm of a million sleeping tasks on one worker (`docs/benchmarks.md`, "Worker 0's clock
//! readings paced"). So while its turns are short beside the time left before the earliest
//! deadline, it reads the clock only every few turns ([`ClockPace`]):
//!
//! - After each reading that finds nothing due, it plans to skip a quarter of the turns that
//!   would fit in the time left before the earliest due tick starts, at the estimated length
//!   of a turn, and never more than [`MAX_UNREAD_TURNS`]. Near the tick, and whenever turns
//!   are long beside it, that is none: it reads at every turn. A quarter rather than all of
//!   them, as the turns to come may be longer than the estimate says.
//! - The estimate is the mean length of the turns between the last two readings, or, when
//!   that is shorter, three quarters of the estimate before: it rises at once and falls only
//!   over several readings. A mean over one turn says little (after a fire it is often that
//!   of a short task just woken, between long ones), so long turns once seen keep it high.
//! - A deadline earlier than the one it planned against (a timer registered since, on any
//!   thread) ends the skip: it reads at once.
//! - The first turn after a park, and the one after a fire, read the clock.
//! - On a clock that was ever paused it reads at every turn: such a clock moves only when a
//!   test says so, and what a test sees must not depend on how long its turns took. Under
//!   loom too, whose models must not branch on the time a run took.
//!
//! The cost is in precision when short turns give way to long ones: the turn in progress and
//! the [`MAX_UNREAD_TURNS`] after it may then pass before the next reading, where a reading at
//! every turn would have let only the turn in progress pass. A stand-in fires what is more
//! than [`STAND_IN_GRACE`] overdue, where another thread of the runtime is free. Tokio's
//! workers look at their timers every 61 turns.

use std::pin::Pin;
use std::ptr::NonNull;
use std::task::Waker;
use std::time::Duration;

use escapement_wheel::Node;

use super::{
    Driver, Inner, Shard, TimerShared, FIRED, FIRING, MAX_TICK, NEVER, STAND_IN_GRACE, WAKE_BATCH,
};
use crate::loom::{MutexGuard, Ordering};
use crate::time::clock::ClockError;
use crate::time::Instant;

/// The most turns worker 0 runs without reading the clock while a timer is pending.
pub(crate) const MAX_UNREAD_TURNS: u32 = 4;

/// When worker 0 reads the clock next: its own, kept across its turns; a park forgets the
/// last reading but not how long the turns took (see "Worker 0's clock readings" above).
#[derive(Debug, Default)]
pub(crate) struct ClockPace {
    /// Turns still to run without a reading.
    skip: u32,
    /// Turns since the last reading, counting the one that reads.
    turns: u32,
    /// The last reading, if it is to pace the next ones.
    last: Option<Reading>,
    /// How long a turn takes, in nanoseconds, for the plan: the mean of the turns between
    /// the last two readings when that is longer, else three quarters of the estimate
    /// before. It rises at once with long turns and falls only over several readings.
    per_turn: u64,
}

/// A reading of the clock, and the earliest tick due when it was taken.
#[derive(Debug, Clone, Copy)]
struct Reading {
    at: Instant,
    next: u64,
    /// The instant `next` starts.
    due: Instant,
}

impl ClockPace {
    /// Forgets the last reading: the next turn reads the clock.
    #[inline]
    pub(crate) fn restart(&mut self) {
        self.skip = 0;
        self.turns = 0;
        self.last = None;
    }

    /// After a reading `at`, with tick `next`, starting at `due`, the earliest due: plans
    /// the turns to run before the next reading, a quarter of those that fit in the time
    /// left at the estimated length of a turn, at most [`MAX_UNREAD_TURNS`]; none without a
    /// last reading to measure the turns from.
    fn plan(&mut self, at: Instant, next: u64, due: Instant) {
        self.skip = match self.last {
            Some(last) if self.turns > 0 => {
                let mean = nanos(at - last.at) / u64::from(self.turns);
                self.per_turn = mean.max(self.per_turn - self.per_turn / 4);
                let fit = nanos(due - at) / self.per_turn.max(1);
                u32::try_from(fit / 4).map_or(MAX_UNREAD_TURNS, |n| n.min(MAX_UNREAD_TURNS))
            }
            _ => 0,
        };
        self.turns = 0;
        self.last = Some(Reading { at, next, due });
    }
}

/// A duration in nanoseconds, at most `u64::MAX` (584 years).
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Driver {
    /// Worker 0's turn: fires what is due, if the earliest deadline has come; returns whether
    /// anything fired. One relaxed load per shard when no timer is pending; otherwise a clock
    /// reading, but only as often as `pace` says (see "Worker 0's clock readings" above).
    #[inline]
    pub(crate) fn maybe_process_paced(&self, pace: &mut ClockPace) -> bool {
        let next = self.earliest_due();
        if next == NEVER {
            pace.restart();
            return false;
        }
        if cfg!(loom) || self.clock.ever_paused() {
            return self.process_due(self.clock.now(), next);
        }
        pace.turns = pace.turns.saturating_add(1);
        let planned = pace.last;
        if pace.skip > 0 && planned.is_some_and(|last| last.next <= next) {
            pace.skip -= 1;
            return false;
        }
        let now = self.clock.now();
        let due = match planned {
            Some(last) if last.next == next => last.due,
            _ => self.tick_instant(next),
        };
        pace.plan(now, next, due);
        // The same as `floor_tick(now) < next`, without its division.
        if now < due {
            return false;
        }
        self.process_due(now, next)
    }

    /// Fires what is due at `now` in each shard whose next timer is, `next` being the earliest
    /// due tick of them all; returns whether anything fired.
    fn process_due(&self, now: Instant, next: u64) -> bool {
        let now_tick = self.floor_tick(now);
        if now_tick < next {
            return false;
        }
        let mut fired = 0;
        for shard in self.shards.iter() {
            if shard.next_due.load(Ordering::Relaxed) <= now_tick {
                fired += self.process_from(shard, shard.inner.lock(), now);
            }
        }
        fired > 0
    }

    /// For a thread other than worker 0: fires what is due in each shard whose next timer is
    /// overdue by more than [`STAND_IN_GRACE`] (worker 0 is then stuck in a long poll) and
    /// whose lock is free. Returns whether it fired anything.
    pub(crate) fn try_process_overdue(&self) -> bool {
        let next = self.earliest_due();
        if next == NEVER {
            return false;
        }
        let now = self.clock.now();
        let overdue = |next: u64| now >= self.tick_instant(next).saturating_add(STAND_IN_GRACE);
        if !overdue(next) {
            return false;
        }
        let mut fired = 0;
        for shard in self.shards.iter() {
            let next = shard.next_due.load(Ordering::Relaxed);
            if next != NEVER && overdue(next) {
                if let Some(inner) = shard.inner.try_lock() {
                    fired += self.process_from(shard, inner, now);
                }
            }
        }
        fired > 0
    }

    /// The earliest tick something may be due at in any shard, or `NEVER`.
    pub(super) fn earliest_due(&self) -> u64 {
        self.shards
            .iter()
            .map(|shard| shard.next_due.load(Ordering::Relaxed))
            .min()
            .unwrap_or(NEVER)
    }

    /// The earliest tick something may be due at, or `None`.
    pub(crate) fn next_due(&self) -> Option<u64> {
        Some(self.earliest_due()).filter(|&next| next != NEVER)
    }

    /// Fires every timer due at or before `now` (its deadline rounded up to the tick), in
    /// every shard; returns how many fired. It takes every shard's lock, so a batch of wakers
    /// another thread took out before this call is counted in `waking` by the time it returns.
    pub(crate) fn process(&self, now: Instant) -> usize {
        self.shards
            .iter()
            .map(|shard| self.process_from(shard, shard.inner.lock(), now))
            .sum()
    }

    /// Fires what is due at `now` in `shard`, whose lock `inner` is.
    fn process_from<'a>(
        &'a self,
        shard: &'a Shard,
        mut inner: MutexGuard<'a, Inner>,
        now: Instant,
    ) -> usize {
        let mut now_tick = self.floor_tick(now);
        let mut fired = 0;
        let mut wakers = WakeList::new();
        loop {
            if inner.shutdown {
                // The timers left are `shutdown`'s to close, never to fire; the wheel's tick
                // is then the end of time it polls at, not a clock reading.
                return fired;
            }
            // Another thread may have moved the wheel past our reading of the clock while the
            // lock was free (between batches, or before a stand-in's `try_lock`). The wheel
            // then hands out due timers later than `now_tick`; relinking them there would put
            // them straight back in the due list, forever. The wheel's tick came from a clock
            // reading too, so it is not in the future: firing up to it is never early.
            now_tick = now_tick.max(inner.wheel.now());
            // `sleeping_until` is left alone: only worker 0 stores a tick there, as it parks,
            // and only worker 0 and a registration that wakes it store `AWAKE`. A stand-in
            // runs this while worker 0 may be parked, even with no timeout (the
            // timers behind an early `next_due` were cancelled); marking it awake here would
            // let the next registration skip waking it, and that timer would never fire.
            let mut done = false;
            let mut batch = 0;
            while !wakers.is_full() {
                let Some((node, _)) = inner.wheel.poll_with(now_tick, moved_deadline) else {
                    done = true;
                    break;
                };
                if let Some((waker, deadline)) = self.fire_or_relink(&mut inner, node, now_tick) {
                    batch += 1;
                    wakers.push(waker);
                    self.metrics
                        .lateness(now.saturating_duration_since(self.tick_instant(deadline)));
                }
            }
            let next = inner.next_expiration().unwrap_or(NEVER);
            shard.next_due.store(next, Ordering::Relaxed);
            // Relaxed under the lock: whoever takes the lock next sees the batch in flight.
            self.waking.fetch_add(1, Ordering::Relaxed);
            drop(inner);
            // Counted before the wakes, so a woken task that reads the metrics sees its timer.
            self.metrics.add(|m| &m.fired, batch);
            fired += batch as usize;
            wakers.wake_all();
            // Release: the wakes happen before a waiter sees the batch done.
            self.waking.fetch_sub(1, Ordering::Release);
            if done {
                return fired;
            }
            inner = shard.inner.lock();
        }
    }

    /// A node the wheel handed out at `now`: fire it, or, if its owner moved the deadline
    /// later after the wheel read it (`moved_deadline`), link it again there. Returns its
    /// waker and deadline tick when it fired.
    fn fire_or_relink(
        &self,
        inner: &mut Inner,
        node: NonNull<Node<TimerShared>>,
        now: u64,
    ) -> Option<(Option<Waker>, u64)> {
        // SAFETY: a linked node is alive (the owner unlinks it under the lock before freeing
        // it, and we hold the lock); `poll` just unlinked it.
        let node = unsafe { Pin::new_unchecked(node.as_ref()) };
        let shared = node.value();
        // Acquire pairs with the owner's CAS that extended the deadline.
        let mut state = shared.state.load(Ordering::Acquire);
        loop {
            debug_assert!(state <= MAX_TICK, "a linked entry is armed");
            if state > now {
                // SAFETY: as in `register`.
                unsafe { inner.wheel.insert(node, state) };
                return None;
            }
            match shared
                .state
                .compare_exchange(state, FIRING, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => state = actual,
            }
        }
        let waker = shared.waker.take();
        shared.touched();
        // Release: the last access to the entry; its owner may free it once it reads this.
        shared.state.store(FIRED, Ordering::Release);
        Some((waker, state))
    }

    /// What `time::advance` does: moves the paused clock forward by `duration`, fires what
    /// that makes due, and returns once every due timer's waker was woken, those another
    /// thread took out of the wheel just before and is still waking included.
    pub(crate) fn advance_paused(&self, duration: Duration) -> Result<(), ClockError> {
        let now = self.clock.advance(duration)?;
        self.process(now);
        self.wait_for_wakes();
        Ok(())
    }

    /// Waits until every batch of wakers taken out of the wheel before this call has been
    /// woken: after `process`, every timer due by then has fired and its waker was woken.
    fn wait_for_wakes(&self) {
        // Acquire pairs with the Release decrement after a batch's wakes. The shard locks
        // taken by the caller's `process` made every batch taken before it visible here.
        while self.waking.load(Ordering::Acquire) != 0 {
            crate::loom::thread::yield_now();
        }
    }
}

/// The deadline an entry's owner moved it to without the lock, for the wheel to place it
/// by whenever it walks the node (a cascade, or handing it out), instead of relinking it
/// only at the old deadline; 0 (no move) for a state that is not a tick.
///
/// Relaxed: the reading only decides where the node goes. Whether it fires is decided by
/// `fire_or_relink`'s own Acquire load, and a deadline moved after this one is found there.
fn moved_deadline(shared: &TimerShared) -> u64 {
    let state = shared.state.load(Ordering::Relaxed);
    shared.touched();
    if state <= MAX_TICK {
        state
    } else {
        0
    }
}

/// Wakers gathered under the lock, woken after it is released.
pub(super) struct WakeList {
    wakers: [Option<Waker>; WAKE_BATCH],
    len: usize,
}

impl WakeList {
    pub(super) fn new() -> WakeList {
        WakeList {
            wakers: [const { None }; WAKE_BATCH],
            len: 0,
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.len == WAKE_BATCH
    }

    pub(super) fn push(&mut self, waker: Option<Waker>) {
        if let Some(waker) = waker {
            self.wakers[self.len] = Some(waker);
            self.len += 1;
        }
    }

    /// Wakes every waker. A waker that panics (a bug in its code; the panic hook has already
    /// reported it) does not stop the others or take the firing thread down with it: that
    /// thread may be worker 0, and every timer of the runtime depends on it.
    pub(super) fn wake_all(&mut self) {
        for slot in &mut self.wakers[..self.len] {
            if let Some(waker) = slot.take() {
                crate::util::contain(|| waker.wake());
            }
        }
        self.len = 0;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::task::{Context, Waker};

    use super::*;
    use crate::loom::Arc;
    use crate::time::driver::tests::driver_with;
    use crate::time::driver_ref::DriverRef;
    use crate::time::entry::TimerEntry;

    /// A timer of `driver`'s at `deadline`, registered.
    fn registered(driver: &Arc<Driver>, deadline: Instant) -> Pin<Box<TimerEntry>> {
        let mut timer = Box::pin(TimerEntry::new(DriverRef::new(driver), deadline, true));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(timer.as_mut().poll_elapsed(&mut cx).is_pending());
        timer
    }

    /// A pace whose last reading was `turns` turns of `per_turn` each before `at`, with an
    /// estimate of `estimate`.
    fn paced(at: Instant, per_turn: Duration, turns: u32, estimate: Duration) -> ClockPace {
        ClockPace {
            skip: 0,
            turns,
            last: Some(Reading {
                at: at - per_turn * turns,
                next: 0,
                due: at,
            }),
            per_turn: nanos(estimate),
        }
    }

    #[test]
    fn the_plan_skips_a_quarter_of_the_turns_that_fit_before_the_due_tick_at_most_the_cap() {
        let at = Instant::now();
        let turn = Duration::from_micros(10);
        let none = Duration::ZERO;
        let plan = |mut pace: ClockPace, left: Duration| {
            pace.plan(at, 7, at + left);
            assert_eq!(pace.turns, 0);
            assert!(pace
                .last
                .is_some_and(|last| last.at == at && last.next == 7));
            (pace.skip, pace.per_turn)
        };
        // No reading before: nothing to measure the turns from.
        assert_eq!(plan(ClockPace::default(), Duration::from_secs(1)).0, 0);
        // 12 turns of 10 µs fit in 120 µs; a quarter of them.
        assert_eq!(
            plan(paced(at, turn, 4, none), Duration::from_micros(120)),
            (3, 10_000)
        );
        assert_eq!(
            plan(paced(at, turn, 1, none), Duration::from_micros(40)).0,
            1
        );
        assert_eq!(
            plan(paced(at, turn, 1, none), Duration::from_micros(39)).0,
            0
        );
        // Far from the tick, the cap.
        let far = Duration::from_millis(1);
        assert_eq!(plan(paced(at, turn, 4, none), far).0, MAX_UNREAD_TURNS);
        // Turns too short to measure count as a nanosecond each.
        let one = Duration::from_micros(1);
        assert_eq!(plan(paced(at, none, 2, none), one).0, MAX_UNREAD_TURNS);
        // The tick has come: read at every turn.
        assert_eq!(plan(paced(at, turn, 4, none), Duration::ZERO).0, 0);
        // Long turns seen before keep the estimate up: it falls by a quarter a reading.
        let long = Duration::from_millis(1);
        assert_eq!(plan(paced(at, turn, 1, long), far), (0, 750_000));
        assert_eq!(plan(paced(at, turn, 1, long), far * 8), (2, 750_000));
        // And a long mean raises it at once.
        assert_eq!(plan(paced(at, long, 1, turn), far).0, 0);
    }

    #[test]
    fn an_estimate_of_long_turns_falls_only_over_several_readings() {
        let driver = driver_with(1, false);
        let _far = registered(&driver, Instant::now() + Duration::from_secs(10));
        let mut pace = ClockPace {
            per_turn: nanos(Duration::from_secs(3_600)),
            ..ClockPace::default()
        };
        // Short turns, each read: the estimate of an hour drops by a quarter at each reading
        // after the first, and no turn is skipped until it is at most a quarter of the 10 s
        // left, at the 27th reading (3,600 s times 0.75 to the 26th power is about 2.0 s; to
        // the 25th, 2.7 s).
        let mut readings = 0;
        while pace.skip == 0 {
            assert!(!driver.maybe_process_paced(&mut pace));
            readings += 1;
            assert!(readings < 100, "the estimate never fell");
        }
        assert_eq!(readings, 27);
    }

    #[test]
    fn a_timer_due_while_turns_are_skipped_fires_within_the_cap_and_never_early() {
        let driver = driver_with(1, false);
        let deadline = Instant::now() + Duration::from_millis(3);
        let timer = registered(&driver, deadline);
        let mut pace = ClockPace::default();
        let mut turns_after_the_tick = 0;
        let start = std::time::Instant::now();
        while !driver.maybe_process_paced(&mut pace) {
            assert!(!timer.is_elapsed());
            if Instant::now() >= driver.tick_instant(driver.deadline_tick(deadline)) {
                turns_after_the_tick += 1;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the timer never fired"
            );
        }
        assert!(Instant::now() >= deadline, "fired early");
        assert!(timer.is_elapsed());
        // The turns were far shorter than the time left, so some were skipped: once the tick
        // had come, the turn in progress and at most the cap.
        assert!(
            turns_after_the_tick <= MAX_UNREAD_TURNS + 1,
            "{turns_after_the_tick}"
        );
    }

    #[test]
    fn an_earlier_deadline_ends_the_skip_and_fires_by_its_own_tick() {
        let driver = driver_with(1, false);
        let far = Instant::now() + Duration::from_secs(10);
        let _late = registered(&driver, far);
        let mut pace = ClockPace::default();
        // The first reading has nothing to measure turns from; the second plans the cap, the
        // deadline being 10 s away.
        assert!(!driver.maybe_process_paced(&mut pace));
        assert!(!driver.maybe_process_paced(&mut pace));
        assert_eq!(pace.skip, MAX_UNREAD_TURNS);
        // A later timer leaves the earliest deadline, and the skip, as they were.
        let _later = registered(&driver, far + Duration::from_secs(1));
        assert!(!driver.maybe_process_paced(&mut pace));
        assert_eq!(pace.skip, MAX_UNREAD_TURNS - 1);
        // An earlier one is read against at once: the next turn reads the clock and plans
        // against its tick (or fires it, where its tick has come already, as under Miri's
        // clock), and it fires at its own tick, not the far one's.
        let soon = Instant::now() + Duration::from_millis(5);
        let early = registered(&driver, soon);
        let fired = driver.maybe_process_paced(&mut pace);
        assert!(
            fired
                || pace
                    .last
                    .is_some_and(|last| last.next == driver.deadline_tick(soon))
        );
        let start = std::time::Instant::now();
        while !fired && !driver.maybe_process_paced(&mut pace) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "waited for the far timer"
            );
        }
        assert!(early.is_elapsed());
        assert!(Instant::now() >= soon, "fired early");
    }

    #[test]
    fn a_clock_once_paused_is_read_at_every_turn() {
        let driver = driver_with(1, true);
        driver.clock.resume().expect("paused");
        let _far = registered(&driver, Instant::now() + Duration::from_secs(10));
        let mut pace = ClockPace::default();
        for _ in 0..3 {
            assert!(!driver.maybe_process_paced(&mut pace));
        }
        assert!(pace.last.is_none() && pace.skip == 0 && pace.turns == 0);
    }

    #[test]
    fn nothing_pending_forgets_the_reading_and_keeps_the_estimate() {
        let driver = driver_with(1, false);
        let turn = Duration::from_micros(1);
        let mut pace = paced(Instant::now(), turn, 3, turn);
        pace.skip = 5;
        assert!(!driver.maybe_process_paced(&mut pace));
        assert!(pace.last.is_none() && pace.skip == 0 && pace.turns == 0);
        assert_eq!(pace.per_turn, 1_000);
    }
}
