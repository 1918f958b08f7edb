//! Firing. Worker 0's turn ([`Driver::maybe_process`]), a stand-in's
//! ([`Driver::try_process_overdue`]) and a pass over every shard ([`Driver::process`]) all
//! come down to `process_from`: it takes a shard's due timers out of its wheel under the
//! shard's lock, at most [`WAKE_BATCH`] at a time, and wakes them after releasing it. Each
//! timer is claimed with `FIRING`, its waker taken, and `FIRED` published last, as the design
//! note of `time::driver` describes.

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

impl Driver {
    /// Fires what is due, if the earliest deadline has come; cheap when it has not (one
    /// relaxed load per shard when no timer is pending, plus a clock read otherwise).
    pub(crate) fn maybe_process(&self) -> bool {
        let next = self.earliest_due();
        if next == NEVER {
            return false;
        }
        let now = self.clock.now();
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
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake()));
            }
        }
        self.len = 0;
    }
}
