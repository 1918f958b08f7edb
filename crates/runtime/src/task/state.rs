//! The task's state word: lifecycle bits, join-handle bits and the reference count, in one
//! `AtomicUsize` so every transition is a single compare-and-swap.
//!
//! | bit             | set by                                   | cleared by                       |
//! |-----------------|------------------------------------------|----------------------------------|
//! | `RUNNING`       | the thread that polls or cancels the task | that thread, when it stops       |
//! | `COMPLETE`      | that thread, once the output is stored    | never                            |
//! | `NOTIFIED`      | a wake or abort that schedules the task   | the worker that starts running it |
//! | `CANCELLED`     | `abort` and runtime shutdown              | never                            |
//! | `JOIN_INTEREST` | spawn                                     | dropping the `JoinHandle`        |
//! | `JOIN_WAKER`    | the `JoinHandle`, after writing its waker | see below                        |
//!
//! A reference is held by the `JoinHandle`, by every `Waker`, by the runtime's list of owned
//! tasks, and by the one `Notified` that a run queue holds (or the worker running it). A
//! task is created with three: join handle, owned list, first notification.
//!
//! **Notified while running.** A wake that finds `RUNNING` only sets `NOTIFIED`; the worker
//! sees it when the poll returns and schedules the task again, handing the reference it ran
//! with to the new `Notified`. So a task woken while running is never lost and never runs on
//! two threads at once.
//!
//! **The join waker slot.** While `JOIN_WAKER` is clear, only the `JoinHandle` touches the
//! slot; once it writes its waker it sets the bit, and from then on the task side may read
//! it. To change the waker, the handle first clears the bit, which fails once `COMPLETE` is
//! set. After completing, the task side wakes the waker and clears the bit; whichever of the
//! two sides finds the other gone drops the waker.

use std::fmt;

use crate::loom::{AtomicUsize, Ordering};

/// The task is being polled or cancelled by one thread, which alone may touch the future.
const RUNNING: usize = 0b00_0001;
/// The future is gone and its output (or error) stored; set once, never cleared.
const COMPLETE: usize = 0b00_0010;
/// The task is scheduled: a run queue holds its `Notified`, or, while `RUNNING`, the worker
/// will schedule it again when the poll returns.
const NOTIFIED: usize = 0b00_0100;
/// Abort or shutdown asked for the task to be dropped instead of polled.
const CANCELLED: usize = 0b00_1000;
/// The `JoinHandle` still exists and will read the output.
const JOIN_INTEREST: usize = 0b01_0000;
/// The join waker slot holds a waker and belongs to the task side.
const JOIN_WAKER: usize = 0b10_0000;
/// The bits below the reference count.
const STATE_BITS: u32 = 6;
/// One reference.
const REF_ONE: usize = 1 << STATE_BITS;
/// A new task: referenced by its `JoinHandle`, the owned list and its first `Notified`.
const INITIAL: usize = (3 * REF_ONE) | JOIN_INTEREST | NOTIFIED;

/// A copy of the state word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(usize);

impl Snapshot {
    pub(crate) fn is_running(self) -> bool {
        self.0 & RUNNING != 0
    }
    pub(crate) fn is_complete(self) -> bool {
        self.0 & COMPLETE != 0
    }
    pub(crate) fn is_notified(self) -> bool {
        self.0 & NOTIFIED != 0
    }
    pub(crate) fn is_cancelled(self) -> bool {
        self.0 & CANCELLED != 0
    }
    pub(crate) fn is_join_interested(self) -> bool {
        self.0 & JOIN_INTEREST != 0
    }
    pub(crate) fn is_join_waker_set(self) -> bool {
        self.0 & JOIN_WAKER != 0
    }
    pub(crate) fn ref_count(self) -> usize {
        self.0 >> STATE_BITS
    }
    fn is_idle(self) -> bool {
        self.0 & (RUNNING | COMPLETE) == 0
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("running", &self.is_running())
            .field("complete", &self.is_complete())
            .field("notified", &self.is_notified())
            .field("cancelled", &self.is_cancelled())
            .field("join_interest", &self.is_join_interested())
            .field("join_waker", &self.is_join_waker_set())
            .field("refs", &self.ref_count())
            .finish()
    }
}

/// What the worker holding a `Notified` should do with it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToRunning {
    /// Poll the future.
    Poll,
    /// Drop the future: the task was aborted.
    Cancel,
    /// Someone else owns the task (shutdown claimed it, or it completed); drop the reference.
    Failed,
}

/// What follows a poll that returned `Pending`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToIdle {
    /// Nothing; the worker's reference was released.
    Idle,
    /// Woken during the poll: schedule it again, with the reference the transition took for
    /// the new `Notified`, then release the worker's.
    Notified,
    /// Aborted during the poll: cancel it now, still `RUNNING`.
    Cancel,
}

/// What a wake should do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToNotified {
    /// Nothing more.
    Nothing,
    /// Schedule a `Notified` (which owns the reference the transition set aside). A waker
    /// woken by value releases its own reference only after that: the scheduler runs on the
    /// task's memory, which the `Notified`, once queued, may let another thread free.
    Submit,
    /// The last reference is gone: free the task.
    Dealloc,
}

/// The state word of one task.
pub(crate) struct State(AtomicUsize);

impl State {
    pub(crate) fn new() -> State {
        State(AtomicUsize::new(INITIAL))
    }

    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.0.load(Ordering::Acquire))
    }

    /// Runs `f` on the state in a compare-and-swap loop; `f` returns the new state (or `None`
    /// to leave it) and a value to return.
    fn update<R>(&self, mut f: impl FnMut(Snapshot) -> (Option<Snapshot>, R)) -> R {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            let (next, result) = f(Snapshot(current));
            let Some(next) = next else { return result };
            match self
                .0
                .compare_exchange_weak(current, next.0, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return result,
                Err(actual) => current = actual,
            }
        }
    }

    /// The holder of a `Notified` starts running the task.
    pub(crate) fn transition_to_running(&self) -> ToRunning {
        self.update(|s| {
            debug_assert!(s.is_notified(), "running a task that was not notified");
            if !s.is_idle() {
                return (None, ToRunning::Failed);
            }
            let next = Snapshot((s.0 | RUNNING) & !NOTIFIED);
            let action = if s.is_cancelled() {
                ToRunning::Cancel
            } else {
                ToRunning::Poll
            };
            (Some(next), action)
        })
    }

    /// A poll returned `Pending`.
    pub(crate) fn transition_to_idle(&self) -> ToIdle {
        self.update(|s| {
            debug_assert!(s.is_running() && !s.is_complete());
            if s.is_cancelled() {
                return (None, ToIdle::Cancel);
            }
            if s.is_notified() {
                // A reference for the new `Notified`: the worker keeps its own until the
                // task is queued (see `ToNotified::Submit`).
                (Some(Snapshot((s.0 & !RUNNING) + REF_ONE)), ToIdle::Notified)
            } else {
                debug_assert!(s.ref_count() > 1, "the owned list still holds a reference");
                (Some(Snapshot((s.0 & !RUNNING) - REF_ONE)), ToIdle::Idle)
            }
        })
    }

    /// The output is stored: clears `RUNNING`, sets `COMPLETE`. Returns the state before.
    pub(crate) fn transition_to_complete(&self) -> Snapshot {
        let prev = Snapshot(self.0.fetch_xor(RUNNING | COMPLETE, Ordering::AcqRel));
        debug_assert!(prev.is_running() && !prev.is_complete());
        prev
    }

    /// A waker that gives up its reference wakes the task.
    pub(crate) fn transition_to_notified_by_val(&self) -> ToNotified {
        self.update(|s| {
            if s.is_running() {
                // The worker will reschedule it; our reference goes.
                debug_assert!(s.ref_count() > 1);
                (
                    Some(Snapshot((s.0 | NOTIFIED) - REF_ONE)),
                    ToNotified::Nothing,
                )
            } else if s.is_complete() || s.is_notified() {
                let next = Snapshot(s.0 - REF_ONE);
                let action = if next.ref_count() == 0 {
                    ToNotified::Dealloc
                } else {
                    ToNotified::Nothing
                };
                (Some(next), action)
            } else {
                // A reference for the `Notified`; the caller releases its own after
                // submitting it.
                (
                    Some(Snapshot((s.0 | NOTIFIED) + REF_ONE)),
                    ToNotified::Submit,
                )
            }
        })
    }

    /// A waker that keeps its reference wakes the task.
    pub(crate) fn transition_to_notified_by_ref(&self) -> ToNotified {
        self.update(|s| {
            if s.is_complete() || s.is_notified() {
                (None, ToNotified::Nothing)
            } else if s.is_running() {
                (Some(Snapshot(s.0 | NOTIFIED)), ToNotified::Nothing)
            } else {
                (
                    Some(Snapshot((s.0 | NOTIFIED) + REF_ONE)),
                    ToNotified::Submit,
                )
            }
        })
    }

    /// `abort`: marks the task cancelled; returns `true` when the caller must submit a
    /// `Notified` (with a reference this transition took) so a worker drops the future.
    pub(crate) fn transition_to_notified_and_cancel(&self) -> bool {
        self.update(|s| {
            if s.is_cancelled() || s.is_complete() {
                (None, false)
            } else if s.is_running() || s.is_notified() {
                // The running worker, or the worker that takes the queued `Notified`, sees it.
                (Some(Snapshot(s.0 | CANCELLED | NOTIFIED)), false)
            } else {
                (Some(Snapshot((s.0 | CANCELLED | NOTIFIED) + REF_ONE)), true)
            }
        })
    }

    /// Runtime shutdown: marks the task cancelled, and claims it (sets `RUNNING`) when no
    /// thread is running it. Returns whether the caller claimed it and must cancel it now.
    pub(crate) fn transition_to_shutdown(&self) -> bool {
        self.update(|s| {
            let claim = s.is_idle();
            let next = if claim {
                s.0 | CANCELLED | RUNNING
            } else {
                s.0 | CANCELLED
            };
            (Some(Snapshot(next)), claim)
        })
    }

    /// The `JoinHandle` is dropped. Returns the state before; the bits cleared are
    /// `JOIN_INTEREST` and, unless the task is complete, `JOIN_WAKER` (giving the slot back
    /// to the handle so it can drop the waker).
    pub(crate) fn unset_join_interest(&self) -> Snapshot {
        self.update(|s| {
            debug_assert!(s.is_join_interested());
            let next = if s.is_complete() {
                s.0 & !JOIN_INTEREST
            } else {
                s.0 & !(JOIN_INTEREST | JOIN_WAKER)
            };
            (Some(Snapshot(next)), s)
        })
    }

    /// The handle has written its waker: hands the slot to the task side. Fails with the
    /// current state if the task completed first.
    pub(crate) fn set_join_waker(&self) -> Result<Snapshot, Snapshot> {
        self.update(|s| {
            debug_assert!(s.is_join_interested() && !s.is_join_waker_set());
            if s.is_complete() {
                (None, Err(s))
            } else {
                let next = Snapshot(s.0 | JOIN_WAKER);
                (Some(next), Ok(next))
            }
        })
    }

    /// The handle wants to replace its waker: takes the slot back. Fails with the current
    /// state if the task completed first.
    pub(crate) fn unset_join_waker(&self) -> Result<Snapshot, Snapshot> {
        self.update(|s| {
            debug_assert!(s.is_join_interested());
            if s.is_complete() {
                // The task side may already have woken the waker and cleared `JOIN_WAKER`
                // since the handle saw it set.
                (None, Err(s))
            } else {
                debug_assert!(s.is_join_waker_set());
                let next = Snapshot(s.0 & !JOIN_WAKER);
                (Some(next), Ok(next))
            }
        })
    }

    /// The task side is done with the join waker after completing. Returns the state before.
    pub(crate) fn unset_join_waker_after_complete(&self) -> Snapshot {
        let prev = Snapshot(self.0.fetch_and(!JOIN_WAKER, Ordering::AcqRel));
        debug_assert!(prev.is_complete() && prev.is_join_waker_set());
        prev
    }

    pub(crate) fn ref_inc(&self) {
        // Relaxed: a new reference is made from an existing one, which already keeps the
        // task alive; the decrement that frees it is what must synchronize.
        let prev = self.0.fetch_add(REF_ONE, Ordering::Relaxed);
        if prev > isize::MAX as usize {
            std::process::abort();
        }
    }

    /// Drops `count` references; returns whether they were the last.
    pub(crate) fn ref_dec(&self, count: usize) -> bool {
        let prev = Snapshot(self.0.fetch_sub(count * REF_ONE, Ordering::AcqRel));
        debug_assert!(prev.ref_count() >= count, "task reference count underflow");
        prev.ref_count() == count
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.load().fmt(f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_new_task_is_notified_with_three_references() {
        let s = State::new().load();
        assert!(s.is_notified() && s.is_join_interested() && !s.is_running());
        assert_eq!(s.ref_count(), 3);
    }

    #[test]
    fn a_wake_while_running_reschedules_once_the_poll_returns() {
        let state = State::new();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        state.ref_inc(); // a waker
        assert_eq!(state.transition_to_notified_by_val(), ToNotified::Nothing);
        assert_eq!(state.transition_to_idle(), ToIdle::Notified);
        let s = state.load();
        assert!(s.is_notified() && !s.is_running());
        assert_eq!(
            s.ref_count(),
            4,
            "a reference for the new Notified, the worker's kept until it is queued"
        );
    }

    #[test]
    fn a_wake_of_an_idle_task_submits_it_exactly_once() {
        let state = State::new();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.transition_to_idle(), ToIdle::Idle);
        assert_eq!(state.load().ref_count(), 2);
        assert_eq!(state.transition_to_notified_by_ref(), ToNotified::Submit);
        assert_eq!(
            state.transition_to_notified_by_ref(),
            ToNotified::Nothing,
            "already queued"
        );
        assert_eq!(state.load().ref_count(), 3);
    }

    #[test]
    fn abort_of_an_idle_task_submits_it_cancelled() {
        let state = State::new();
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        assert_eq!(state.transition_to_idle(), ToIdle::Idle);
        assert!(state.transition_to_notified_and_cancel());
        assert!(
            !state.transition_to_notified_and_cancel(),
            "a second abort does nothing"
        );
        assert_eq!(state.transition_to_running(), ToRunning::Cancel);
    }

    #[test]
    fn shutdown_claims_only_an_idle_task() {
        let state = State::new();
        assert!(
            state.transition_to_shutdown(),
            "notified but not running: claimed"
        );
        assert_eq!(
            state.transition_to_running(),
            ToRunning::Failed,
            "the queued Notified backs off"
        );
        let running = State::new();
        assert_eq!(running.transition_to_running(), ToRunning::Poll);
        assert!(!running.transition_to_shutdown());
        assert_eq!(running.transition_to_idle(), ToIdle::Cancel);
    }

    #[test]
    fn join_waker_slot_changes_hands() {
        let state = State::new();
        assert!(state.set_join_waker().is_ok());
        assert!(state.unset_join_waker().is_ok());
        assert!(state.set_join_waker().is_ok());
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        let prev = state.transition_to_complete();
        assert!(prev.is_join_waker_set());
        assert!(state.unset_join_waker_after_complete().is_join_interested());
        let before = state.unset_join_interest();
        assert!(before.is_complete() && !before.is_join_waker_set());
    }

    /// The handle saw its waker set and goes to replace it, but the task completes, wakes
    /// it and clears the bit first: taking the slot back fails, as the task is complete.
    #[test]
    fn a_handle_replacing_its_waker_after_the_task_side_cleared_it_finds_it_complete() {
        let state = State::new();
        assert!(state.set_join_waker().is_ok());
        assert_eq!(state.transition_to_running(), ToRunning::Poll);
        state.transition_to_complete();
        state.unset_join_waker_after_complete();
        let now = state.unset_join_waker().expect_err("the task completed");
        assert!(now.is_complete() && !now.is_join_waker_set());
    }
}
