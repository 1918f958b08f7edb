//! [`TimerEntry`]: the owner's side of a timer, embedded in a future.
//!
//! The driver's design note (`driver.rs`) gives the entry's states and who moves them. This
//! side registers lazily, on the first poll (or at a reset, as tokio's does); checks `state`
//! after registering its waker; moves the deadline later with a CAS and without the lock; and
//! frees the entry without the lock only once it reads `FIRED` or `SHUTDOWN`.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use escapement_wheel::Node;
use pin_project_lite::pin_project;

use super::driver::{Registered, TimerShared, CLOSING, FIRED, FIRING, MAX_TICK, SHUTDOWN};
use super::driver_ref::DriverRef;
use super::Instant;
use crate::loom::Ordering;

pin_project! {
    /// One timer: the driver it belongs to (counted in the shard it registers in), its
    /// deadline, and its wheel node.
    pub(crate) struct TimerEntry {
        driver: DriverRef,
        deadline: Instant,
        // Whether the driver knows the node since it was last armed: its `state` is then
        // meaningful, and dropping the entry may need the lock. Only the owner reads it.
        registered: bool,
        // Whether the deadline may already have passed at the first poll, so that poll reads
        // the clock. Not for a deadline set a tick or more past a clock reading just taken
        // (`sleep(d)`), which saves the common first poll a clock read.
        may_be_past: bool,
        #[pin]
        node: Node<TimerShared>,
    }

    impl PinnedDrop for TimerEntry {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if !*this.registered {
                // Never linked, or disarmed after its fire by an interval's tick that read
                // `FIRED` with Acquire: freed without the lock, so it too is checked against
                // the driver's last access under loom.
                this.node.into_ref().value().dying();
                return;
            }
            let node = this.node.into_ref();
            // Acquire pairs with the driver's Release store of its last access.
            let state = node.value().state.load(Ordering::Acquire);
            if state != FIRED && state != SHUTDOWN {
                this.driver.cancel(node, this.driver.shard());
            }
            node.value().dying();
        }
    }
}

impl TimerEntry {
    /// A timer for `deadline`; `may_be_past` unless the deadline was set a tick or more after
    /// a clock reading just taken.
    pub(crate) fn new(driver: DriverRef, deadline: Instant, may_be_past: bool) -> TimerEntry {
        TimerEntry {
            driver,
            deadline,
            registered: false,
            may_be_past,
            node: Node::new(TimerShared::new()),
        }
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Now, by the clock of the driver the timer belongs to.
    pub(crate) fn now(&self) -> Instant {
        self.driver.clock().now()
    }

    /// The driver the timer belongs to.
    #[cfg(loom)]
    pub(crate) fn driver_ref(&self) -> &super::driver::Driver {
        &self.driver
    }

    /// Whether the timer has fired (as the driver or a poll saw it), or, once its runtime shut
    /// down, whether its deadline has passed (its poll then completes).
    pub(crate) fn is_elapsed(&self) -> bool {
        self.registered
            && match self.node.value().state.load(Ordering::Acquire) {
                FIRING | FIRED => true,
                CLOSING | SHUTDOWN => self.deadline <= self.driver.clock().now(),
                _ => false,
            }
    }

    /// Completes once the deadline has passed; registers on the first poll.
    ///
    /// # Panics
    ///
    /// If the runtime the timer belongs to has shut down, unless the deadline has passed or
    /// one of its workers polls the timer's task, which it then cancels.
    #[track_caller]
    pub(crate) fn poll_elapsed(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let node = this.node.into_ref();
        let shared = node.value();
        if !*this.registered {
            // A deadline already past completes now, whatever the wheel's last tick (it moves
            // only as timers are processed, so it can lag the clock).
            if *this.may_be_past && *this.deadline <= this.driver.clock().now() {
                *this.registered = true;
                shared.state.store(FIRED, Ordering::Relaxed);
                return Poll::Ready(());
            }
            // The waker goes in before the node is linked, so a fire that follows finds it.
            // SAFETY: the node is not linked (never, or no more: the driver stored `FIRED`
            // last, or it was shut down), so no other thread reaches the slot until
            // `register` links it under its shard's lock, which publishes the write.
            unsafe { shared.waker.register_exclusive(cx.waker()) };
            // Only once the waker is in: a clone that panicked leaves the timer as it was,
            // unregistered, where its state (`FIRED` until it is armed) means nothing.
            *this.registered = true;
            let tick = this.driver.deadline_tick(*this.deadline);
            return match this.driver.register(node, this.driver.shard(), tick) {
                Registered::Pending => Poll::Pending,
                Registered::Elapsed => Poll::Ready(()),
                Registered::Shutdown => after_shutdown(*this.deadline, this.driver),
            };
        }
        // The waker goes in before `state` is read, so a fire that follows is sure to find it.
        shared.waker.register(cx.waker());
        // Acquire pairs with the driver's stores of `FIRING` and `FIRED`.
        match shared.state.load(Ordering::Acquire) {
            FIRING | FIRED => Poll::Ready(()),
            CLOSING | SHUTDOWN => after_shutdown(*this.deadline, this.driver),
            _ => Poll::Pending,
        }
    }

    /// Moves the deadline. With `reregister`, the timer is armed for it at once (and a waker
    /// registered earlier is woken then), even one never polled, as tokio's reset does: it
    /// fires, and `is_elapsed` turns true, without a poll, waking no one until a poll gives
    /// it a waker. Without `reregister`, a timer that already fired, or was never armed, is
    /// armed only at its next poll, and one that fired lets go of its waker.
    pub(crate) fn reset(self: Pin<&mut Self>, deadline: Instant, reregister: bool) {
        let this = self.project();
        let earlier = deadline < *this.deadline;
        *this.deadline = deadline;
        *this.may_be_past = true;
        if !*this.registered && !reregister {
            return;
        }
        let node = this.node.into_ref();
        let shared = node.value();
        let tick = this.driver.deadline_tick(deadline);
        if !*this.registered {
            // Never armed, or disarmed after it fired (below): the driver does not know the
            // node, and its waker slot is empty. Counted as a registration, not a reset.
            *this.registered = true;
            let due = deadline <= this.driver.clock().now();
            this.driver.reregister(node, this.driver.shard(), tick, due);
            return;
        }
        this.driver.metrics().add(|m| &m.resets, 1);
        let state = shared.state.load(Ordering::Acquire);
        if state <= MAX_TICK && (tick > state || (tick == state && !earlier)) {
            // Not earlier than the armed deadline, nor in an earlier tick: the node may stay
            // where it is. (An earlier deadline in the same tick may have passed already, and
            // then completes at the next poll, below.) The CAS fails if the driver claimed the
            // entry meanwhile; AcqRel pairs with its Acquire load.
            if shared
                .state
                .compare_exchange(state, tick, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
        let mut state = shared.state.load(Ordering::Acquire);
        if !reregister && state == FIRING {
            // The driver is firing it, and holds the lock until it has stored `FIRED`.
            this.driver.wait_for_fire(this.driver.shard());
            // Acquire pairs with the driver's Release store of `FIRED`.
            state = shared.state.load(Ordering::Acquire);
            debug_assert_eq!(state, FIRED, "a fire finishes under the lock");
        }
        if !reregister && state == FIRED {
            *this.registered = false;
            // The driver is done with the entry, so the waker of the poll that saw it fire
            // goes now rather than at the next poll: an unarmed timer holds no task alive.
            drop(shared.waker.take());
            return;
        }
        if state == SHUTDOWN {
            return;
        }
        // Moving earlier, or re-arming: a deadline already past fires at once.
        let due = deadline <= this.driver.clock().now();
        this.driver.reregister(node, this.driver.shard(), tick, due);
    }
}

/// A poll of a timer whose runtime shut down: one whose deadline has passed completes, as it
/// would have fired by now. Any other will never fire. In a task of that runtime whose poll
/// outlived the shutdown's timeout, on the worker running it, it stays pending: the worker
/// cancels the task once the poll returns (as tokio's, whose timers shut down only after its
/// workers' last polls). Anywhere else it panics.
#[track_caller]
fn after_shutdown(deadline: Instant, driver: &DriverRef) -> Poll<()> {
    if deadline <= driver.clock().now() {
        Poll::Ready(())
    } else if crate::scheduler::worker::polls_a_task_on(driver) {
        Poll::Pending
    } else {
        panic!("a timer was polled after the escapement runtime that created it shut down");
    }
}

impl fmt::Debug for TimerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerEntry")
            .field("deadline", &self.deadline)
            .field("registered", &self.registered)
            .finish_non_exhaustive()
    }
}
