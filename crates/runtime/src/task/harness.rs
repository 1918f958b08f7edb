//! The typed half of a task: what each vtable entry does, for one `(F, S)`.

use std::future::Future;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use super::coop;
use super::error::JoinError;
use super::raw::{Cell, Header, Stage, Vtable};
use super::state::{ToIdle, ToRunning};
use super::{waker, Notified, Schedule, Task};
use crate::time::driver::ClockHold;

/// Typed access to one task cell.
pub(crate) struct Harness<F: Future, S> {
    cell: NonNull<Cell<F, S>>,
    _types: PhantomData<(F, S)>,
}

impl<F, S> Harness<F, S>
where
    F: Future + Send + 'static,
    F::Output: 'static,
    S: Schedule,
{
    pub(crate) const VTABLE: Vtable = Vtable {
        poll: Self::poll_raw,
        schedule: Self::schedule_raw,
        dealloc: Self::dealloc_raw,
        try_read_output: Self::try_read_output_raw,
        drop_join_handle: Self::drop_join_handle_raw,
        shutdown: Self::shutdown_raw,
        hold_clock: Self::hold_clock_raw,
    };

    /// # Safety
    ///
    /// `header` is the header of a live `Cell<F, S>`.
    unsafe fn from_header(header: NonNull<Header>) -> Self {
        Harness {
            cell: header.cast(),
            _types: PhantomData,
        }
    }

    fn cell(&self) -> &Cell<F, S> {
        // SAFETY: a harness is made only from a live cell's header (`from_header`), and the
        // caller of every vtable entry holds a reference that keeps the cell alive.
        unsafe { self.cell.as_ref() }
    }

    fn header_ptr(&self) -> NonNull<Header> {
        self.cell.cast()
    }

    // ---- vtable entries ------------------------------------------------------------------

    /// # Safety
    ///
    /// The caller gives up a `Notified` reference to a live `Cell<F, S>`.
    unsafe fn poll_raw(header: NonNull<Header>) {
        // SAFETY: the caller's contract.
        unsafe { Self::from_header(header) }.poll();
    }

    /// # Safety
    ///
    /// `header` is the header of a live `Cell<F, S>`.
    unsafe fn hold_clock_raw(header: NonNull<Header>) -> Option<ClockHold> {
        // SAFETY: the caller's contract.
        unsafe { Self::from_header(header) }
            .cell()
            .scheduler
            .hold_clock()
    }

    /// # Safety
    ///
    /// The caller set aside a reference for the new `Notified`.
    unsafe fn schedule_raw(header: NonNull<Header>) {
        // SAFETY: the caller's contract: the reference passes to the `Notified`.
        let harness = unsafe { Self::from_header(header) };
        // SAFETY: as above.
        let notified = Notified(unsafe { Task::from_raw(header) });
        harness.cell().scheduler.schedule(notified);
    }

    /// # Safety
    ///
    /// No reference to the cell remains.
    unsafe fn dealloc_raw(header: NonNull<Header>) {
        // Under loom the free writes the task's cells, so that a model sees a free that does
        // not happen after another thread's last use of them (as when the last reference's
        // decrement does not acquire the others').
        #[cfg(loom)]
        {
            // SAFETY: no reference remains, and the cell is still allocated.
            let cell = unsafe { header.cast::<Cell<F, S>>().as_ref() };
            cell.stage.with_mut(|_| ());
            cell.join_waker.with_mut(|_| ());
        }
        // SAFETY: the cell was allocated by `Box` in `Cell::allocate`, and no reference
        // remains, so nothing else can touch it.
        drop(unsafe { Box::from_raw(header.cast::<Cell<F, S>>().as_ptr()) });
    }

    /// # Safety
    ///
    /// `dst` points to a `Poll<Result<F::Output, JoinError>>`, or is null (then the waker is
    /// registered and nothing is read); the caller is the task's `JoinHandle`, used
    /// exclusively (through `&mut` or by value): the call may write the join waker's slot
    /// and move the output out.
    unsafe fn try_read_output_raw(header: NonNull<Header>, dst: *mut (), waker: &Waker) {
        // SAFETY: the caller holds the join handle's reference.
        let harness = unsafe { Self::from_header(header) };
        // A null `dst` asks only to register the waker: the output stays in the task.
        if harness.can_read_output(waker) && !dst.is_null() {
            let dst = dst.cast::<Poll<Result<F::Output, JoinError>>>();
            // SAFETY: the caller's contract on `dst`.
            unsafe { *dst = Poll::Ready(harness.take_output()) };
        }
    }

    /// # Safety
    ///
    /// The caller is the task's `JoinHandle`, giving up its reference.
    unsafe fn drop_join_handle_raw(header: NonNull<Header>) {
        // SAFETY: the caller holds the join handle's reference.
        unsafe { Self::from_header(header) }.drop_join_handle();
    }

    /// # Safety
    ///
    /// The caller gives up the owned list's reference.
    unsafe fn shutdown_raw(header: NonNull<Header>) {
        // SAFETY: the caller holds the owned list's reference.
        unsafe { Self::from_header(header) }.shutdown();
    }

    // ---- the operations ------------------------------------------------------------------

    fn poll(self) {
        match self.cell().header.state.transition_to_running() {
            ToRunning::Poll => {
                // SAFETY: the running reference keeps the task alive for the whole poll, and
                // the waker is not dropped (`ManuallyDrop`), so it owns no reference; clones
                // of it take their own.
                let waker = ManuallyDrop::new(unsafe { waker::from_header(self.header_ptr()) });
                let mut cx = Context::from_waker(&waker);
                if self.poll_future(&mut cx).is_ready() {
                    return self.complete();
                }
                match self.cell().header.state.transition_to_idle() {
                    ToIdle::Idle => {}
                    ToIdle::Notified => {
                        // SAFETY: the transition took a reference for the new `Notified`.
                        let notified = Notified(unsafe { Task::from_raw(self.header_ptr()) });
                        if coop::yield_noted() {
                            self.cell().scheduler.schedule_yielded(notified);
                        } else {
                            self.cell().scheduler.schedule_woken_while_running(notified);
                        }
                        // The worker's reference kept the task alive while it was scheduled
                        // (the queued `Notified` may already be running elsewhere).
                        self.drop_references(1);
                    }
                    ToIdle::Cancel => {
                        self.cancel_future();
                        self.complete();
                    }
                }
            }
            ToRunning::Cancel => {
                self.cancel_future();
                self.complete();
            }
            ToRunning::Failed => self.drop_references(1),
        }
    }

    /// Polls the future, storing its output (or its panic) when it finishes.
    fn poll_future(&self, cx: &mut Context<'_>) -> Poll<()> {
        // As the task: the poll, and the drop of its future when it ends.
        super::id::run_as(self.cell().header.id, || self.poll_future_as_task(cx))
    }

    /// [`poll_future`](Self::poll_future)'s work, run with the task's id set.
    fn poll_future_as_task(&self, cx: &mut Context<'_>) -> Poll<()> {
        /// Drops the future in place if its poll unwinds, while the panic is still in flight,
        /// as tokio does: a `MutexGuard` in the future's state poisons its mutex, and
        /// `thread::panicking()` is true in its destructors. A destructor that panics there
        /// too aborts the process, as any panic while unwinding does.
        struct DropOnUnwind<'a, F, S>(&'a Harness<F, S>)
        where
            F: Future + Send + 'static,
            F::Output: 'static,
            S: Schedule;

        impl<F, S> Drop for DropOnUnwind<'_, F, S>
        where
            F: Future + Send + 'static,
            F::Output: 'static,
            S: Schedule,
        {
            fn drop(&mut self) {
                self.0.drop_stage_unguarded();
            }
        }

        let stage = &self.cell().stage;
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            let on_unwind = DropOnUnwind(self);
            let poll = stage.with_mut(|stage| {
                // SAFETY: this thread set `RUNNING`, so it alone touches the stage.
                let Stage::Running(future) = (unsafe { &mut *stage }) else {
                    unreachable!("a task is polled only while its future is there");
                };
                // SAFETY: the future is never moved out of the cell while it is `Running`
                // (it is dropped in place), so pinning it there is sound.
                let future = unsafe { Pin::new_unchecked(future) };
                super::coop::budget(|| future.poll(cx))
            });
            mem::forget(on_unwind);
            poll
        }));
        match result {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                // The future goes first. As in tokio, a panic in its destructor is the
                // task's: the output is dropped and the join handle gets the panic.
                match panic::catch_unwind(AssertUnwindSafe(|| self.drop_stage_unguarded())) {
                    Ok(()) => self.store_output(Ok(output)),
                    Err(panic) => {
                        crate::util::contain(|| drop(output));
                        let id = self.cell().header.id;
                        self.store_output(Err(JoinError::panic(id, panic)));
                    }
                }
                Poll::Ready(())
            }
            Err(panic) => {
                // The future is gone already, dropped as the panic unwound.
                self.store_output(Err(JoinError::panic(self.cell().header.id, panic)));
                Poll::Ready(())
            }
        }
    }

    /// Drops the future of a cancelled task and stores the cancellation.
    fn cancel_future(&self) {
        let id = self.cell().header.id;
        // As the task, so its future's destructor sees its id.
        let dropped = super::id::run_as(id, || {
            panic::catch_unwind(AssertUnwindSafe(|| self.drop_stage_unguarded()))
        });
        let error = match dropped {
            Ok(()) => JoinError::cancelled(id),
            Err(panic) => JoinError::panic(id, panic),
        };
        self.store_output(Err(error));
    }

    /// Drops the future where it is pinned (a panic in its destructor is swallowed) and
    /// stores the output in its place.
    fn store_output(&self, output: Result<F::Output, JoinError>) {
        self.drop_stage();
        self.cell().stage.with_mut(|stage| {
            // SAFETY: this thread holds `RUNNING`; the stage is `Consumed`, which has nothing
            // to drop, so overwriting it leaks nothing.
            unsafe { ptr::write(stage, Stage::Finished(output)) };
        });
    }

    /// Drops whatever the stage holds, swallowing a panic from its destructor.
    fn drop_stage(&self) {
        crate::util::contain(|| self.drop_stage_unguarded());
    }

    /// Drops whatever the stage holds *in place*, leaving `Consumed`. A pinned future must be
    /// dropped where it lives: moving it out first would, for one, unlink an intrusive timer
    /// from the wrong address. If the destructor panics, the stage still ends `Consumed`.
    fn drop_stage_unguarded(&self) {
        /// Writes `Consumed` over a stage whose contents were dropped, even while unwinding.
        struct Consumed<F: Future>(*mut Stage<F>);

        impl<F: Future> Drop for Consumed<F> {
            fn drop(&mut self) {
                // SAFETY: the stage's old contents were dropped (or their drop unwound), so
                // the slot holds no live value; writing does not drop what was there.
                unsafe { ptr::write(self.0, Stage::Consumed) };
            }
        }

        self.cell().stage.with_mut(|stage| {
            let _consumed = Consumed(stage);
            // SAFETY: the caller holds the right to the stage (`RUNNING`, or the output after
            // `COMPLETE`), so nothing else touches it; the guard refills it right after.
            unsafe { ptr::drop_in_place(stage) };
        });
    }

    /// The output is stored: publish it, wake the joiner, release the task's references.
    fn complete(self) {
        let state = &self.cell().header.state;
        let prev = state.transition_to_complete();
        crate::util::contain(|| {
            if !prev.is_join_interested() {
                // Nobody will read the output; its destructor runs as the task.
                super::id::run_as(self.cell().header.id, || self.drop_stage_unguarded());
            } else if prev.is_join_waker_set() {
                self.cell().join_waker.with(|waker| {
                    // SAFETY: `JOIN_WAKER` gives the task side read access to the slot.
                    if let Some(waker) = unsafe { &*waker } {
                        waker.wake_by_ref();
                    }
                });
                if !state.unset_join_waker_after_complete().is_join_interested() {
                    // The handle left while we were waking; the waker is ours to drop.
                    self.take_join_waker();
                }
            }
        });
        // SAFETY: a borrowed view of the task for the scheduler; `ManuallyDrop` keeps it from
        // releasing a reference it does not own.
        let me = ManuallyDrop::new(unsafe { Task::<S>::from_raw(self.header_ptr()) });
        let released = self.cell().scheduler.release(&me);
        let count = match released {
            // The owned list's reference comes back with the task; release it with ours.
            Some(task) => {
                mem::forget(task);
                2
            }
            None => 1,
        };
        self.drop_references(count);
    }

    fn drop_references(self, count: usize) {
        if self.cell().header.state.ref_dec(count) {
            // SAFETY: those were the last references.
            unsafe { Self::dealloc_raw(self.header_ptr()) };
        }
    }

    fn take_join_waker(&self) -> Option<Waker> {
        self.cell().join_waker.with_mut(|waker| {
            // SAFETY: the caller owns the slot (by the `JOIN_WAKER` protocol).
            unsafe { (*waker).take() }
        })
    }

    /// The join handle asks whether the output is there, registering `waker` if not.
    fn can_read_output(&self, waker: &Waker) -> bool {
        let state = &self.cell().header.state;
        let snapshot = state.load();
        if snapshot.is_complete() {
            return true;
        }
        if snapshot.is_join_waker_set() {
            let same = self.cell().join_waker.with(|slot| {
                // SAFETY: with `JOIN_WAKER` set both sides may read the slot; nobody writes.
                unsafe { &*slot }
                    .as_ref()
                    .is_some_and(|w| w.will_wake(waker))
            });
            if same {
                return false;
            }
            // Take the slot back to replace the waker.
            if state.unset_join_waker().is_err() {
                return true;
            }
        }
        self.cell().join_waker.with_mut(|slot| {
            // SAFETY: `JOIN_WAKER` is clear, so the handle owns the slot.
            unsafe { *slot = Some(waker.clone()) };
        });
        if state.set_join_waker().is_err() {
            // Completed meanwhile; the slot is still ours: empty it.
            self.take_join_waker();
            return true;
        }
        false
    }

    /// Takes the output out; the caller saw `COMPLETE` and is the join handle.
    fn take_output(&self) -> Result<F::Output, JoinError> {
        let stage = self.cell().stage.with_mut(|stage| {
            // SAFETY: after `COMPLETE` the join handle owns the stage.
            mem::replace(unsafe { &mut *stage }, Stage::Consumed)
        });
        match stage {
            Stage::Finished(output) => output,
            _ => panic!("a JoinHandle was polled after it returned Ready"),
        }
    }

    fn drop_join_handle(self) {
        let prev = self.cell().header.state.unset_join_interest();
        let waker = if prev.is_complete() {
            // The output is ours, and so is the waker slot unless the task side still
            // holds it (it will drop the waker when it sees the handle gone). The output's
            // destructor runs as the task.
            super::id::run_as(self.cell().header.id, || self.drop_stage());
            if prev.is_join_waker_set() {
                None
            } else {
                self.take_join_waker()
            }
        } else {
            // The transition took the slot back.
            self.take_join_waker()
        };
        self.drop_references(1);
        // Last: the waker is user code, whose drop may panic, and the panic goes on out of
        // the handle's drop; by now the handle's reference is released, so it leaks no task.
        drop(waker);
    }

    fn shutdown(self) {
        if self.cell().header.state.transition_to_shutdown() {
            // Claimed: the owned list's reference now runs the cancellation.
            self.cancel_future();
            self.complete();
        } else {
            self.drop_references(1);
        }
    }
}
