//! The current-thread flavor: the runtime's one worker runs on the thread in `block_on`.
//!
//! A runtime from [`Builder::new_current_thread`](crate::Builder::new_current_thread) starts
//! no worker thread. Its worker, the [`Core`] (the run queue and worker 0's park on the timer
//! driver), waits in a [`CoreSlot`] until a thread calls `block_on`. That thread takes it
//! and, until its future completes, is worker 0: it polls the future whenever it is woken,
//! runs the queued tasks in between, fires due timers at every turn, and parks on the driver
//! when there is nothing to do. A task spawned from the future goes onto the local queue, so
//! it runs only when the future yields, as on tokio's current-thread runtime. Outside
//! `block_on` nothing runs: tasks wait in the queues and timers in the wheel.
//!
//! # Who has the core
//!
//! The slot's lock decides. A `block_on` takes the core if it is in the slot and the runtime
//! is not shutting down, and counts itself among the live workers under that lock, so a
//! shutdown that has passed the lock once waits for it. Otherwise the thread polls its future
//! on a parker of its own, as in a multi-threaded runtime's `block_on`, and leaves its
//! unparker in the slot's list of waiters; it looks at the slot again each time it wakes.
//! When the future completes, or panics, the thread puts the core back, unparks every
//! waiter and counts itself out of the live workers, all under the lock. A waiter either
//! finds the core when it looks or was in the list when the core came back, so a core
//! returned is never left unclaimed while a `block_on` waits.
//!
//! A thread that finds the runtime shutting down while it has the core, in its loop or under
//! the lock as it returns, leaves as a worker does at shutdown: it drops what its queue holds,
//! cancels every task, and counts itself out; its future goes on without the core. The
//! shutdown takes the lock once after setting its flag, so a thread that returned before it
//! is already counted out, and a shutdown that does not wait (`shutdown_background`) then
//! cancels the tasks itself. It drops a core it finds in the slot.
//!
//! # Waking the future
//!
//! The future's waker sets a flag and unparks worker 0 through the driver, as a registration of
//! an earlier deadline does. A wake that comes before the thread parks leaves a token, so the
//! park returns at once; one that comes while the thread runs tasks is seen at the next batch's
//! end. Between two polls of the future the thread runs at most `event_interval` tasks (61
//! unless [`Builder::event_interval`](crate::Builder::event_interval) sets another, as
//! tokio's). A task that yields (`yield_now`, `time::advance`, or a spent budget) is held back
//! until the batch ends, so every other queued task runs first, and the future, if woken, goes
//! before the held tasks, which are then queued again last first: the order of tokio, which
//! defers such wakes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

use super::worker::{self, Core, Worker};
use super::Shared;
use crate::loom::{Arc, AtomicBool, Mutex, Ordering, WakeArc};
use crate::park::{Parker, Unparker};
use crate::runtime::Handle;
use crate::task::coop;
use crate::time::driver::Driver;

/// Where the worker of a current-thread runtime waits while no `block_on` runs it.
pub(crate) struct CoreSlot {
    inner: Mutex<SlotInner>,
}

struct SlotInner {
    core: Option<Core>,
    /// The `block_on` calls waiting for the core, each by its parker's unparker.
    waiters: Vec<Unparker>,
}

impl CoreSlot {
    pub(crate) fn new(core: Core) -> CoreSlot {
        CoreSlot {
            inner: Mutex::new(SlotInner {
                core: Some(core),
                waiters: Vec::new(),
            }),
        }
    }

    /// Takes the core, counting the caller among the live workers, unless another thread
    /// has it or the runtime is shutting down; then makes sure `waiter` is in the list.
    fn take_or_wait(&self, handle: &Handle, waiter: &Unparker) -> Option<Core> {
        let shared = &handle.shared;
        let mut inner = self.inner.lock();
        if !shared.is_shutdown() {
            if let Some(core) = inner.core.take() {
                shared.worker_entered();
                return Some(core);
            }
        }
        if !inner.waiters.iter().any(|w| w.is_same(waiter)) {
            inner.waiters.push(waiter.clone());
        }
        None
    }

    /// Takes `waiter` off the list.
    fn stop_waiting(&self, waiter: &Unparker) {
        self.inner.lock().waiters.retain(|w| !w.is_same(waiter));
    }

    /// Unless the runtime is shutting down, puts the core back, wakes every thread waiting
    /// for it, and counts the caller out of the live workers, all under the slot's lock; at
    /// shutdown, returns `false`, leaving the core to the caller, still counted live.
    ///
    /// One step for a shutdown, which takes the lock once after setting its flag: either this
    /// comes first, and the shutdown finds the core in the slot and this thread already out
    /// (so it cancels the tasks itself), or it comes after, and sees the flag.
    fn put_back_unless_shutdown(&self, shared: &Shared, core: &mut Option<Core>) -> bool {
        let mut inner = self.inner.lock();
        if shared.is_shutdown() {
            return false;
        }
        if let Some(core) = core.take() {
            inner.core = Some(core);
            for waiter in &inner.waiters {
                waiter.unpark();
            }
        }
        shared.worker_exited();
        true
    }

    /// At shutdown, once the slot's lock has been taken after shutdown began, every thread
    /// that took the core is counted among the live workers.
    pub(crate) fn barrier(&self) {
        drop(self.inner.lock());
    }

    /// At shutdown: the core, if it is in the slot.
    pub(crate) fn take(&self) -> Option<Core> {
        self.inner.lock().core.take()
    }
}

impl fmt::Debug for CoreSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("CoreSlot")
            .field("has_core", &inner.core.is_some())
            .field("waiters", &inner.waiters.len())
            .finish()
    }
}

/// `block_on` on a current-thread runtime, inside the runtime's context: runs `future` to
/// completion, as worker 0 whenever the core is free (see the module's note).
pub(crate) fn block_on<F: Future>(
    handle: &Handle,
    slot: &CoreSlot,
    mut future: Pin<&mut F>,
) -> F::Output {
    let parker = Parker::new(handle.shared.driver.clone());
    let unparker = parker.unparker();
    let waker = unparker.clone().into_waker();
    let mut cx = Context::from_waker(&waker);
    let _waiting = Waiting {
        slot,
        unparker: &unparker,
    };
    loop {
        if let Some(core) = slot.take_or_wait(handle, &unparker) {
            if let Poll::Ready(output) = drive(handle, slot, core, future.as_mut()) {
                return output;
            }
            // The runtime is shutting down: go on without the core.
        }
        if let Poll::Ready(output) = coop::budget(|| future.as_mut().poll(&mut cx)) {
            return output;
        }
        parker.park_standing_in();
    }
}

/// Takes a `block_on`'s unparker off the slot's list when it returns or unwinds.
struct Waiting<'a> {
    slot: &'a CoreSlot,
    unparker: &'a Unparker,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.slot.stop_waiting(self.unparker);
    }
}

/// Runs the worker on this thread, with `future` polled whenever it is woken, until the
/// future completes (`Ready`) or the runtime shuts down (`Pending`).
fn drive<F: Future>(
    handle: &Handle,
    slot: &CoreSlot,
    core: Core,
    mut future: Pin<&mut F>,
) -> Poll<F::Output> {
    let shared = &handle.shared;
    let mut release = Release::install(handle, slot, core);
    let worker = &mut release.worker;
    let main = WakeArc::new(MainWake {
        woken: AtomicBool::new(true),
        driver: shared.driver.clone(),
    });
    let waker = Waker::from(main.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        if shared.is_shutdown() {
            return Poll::Pending;
        }
        // Acquire pairs with the Release store in `wake`: what the waker's thread did
        // before the wake is visible to the poll.
        if main.woken.swap(false, Ordering::Acquire) {
            if let Poll::Ready(output) = coop::budget(|| future.as_mut().poll(&mut cx)) {
                return Poll::Ready(output);
            }
        }
        let ran = worker.run_batch(shared.event_interval);
        if !ran && !main.woken.load(Ordering::Relaxed) {
            // A wake from here on leaves a token that makes the park return at once.
            worker.park();
        }
    }
}

/// The waker of the future in `block_on` while its thread has the core.
struct MainWake {
    woken: AtomicBool,
    driver: Arc<Driver>,
}

impl Wake for MainWake {
    fn wake(self: WakeArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &WakeArc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.driver.unpark();
    }
}

/// While it lives, this thread is the runtime's worker; when it drops (the future completed,
/// the runtime is shutting down, or a poll panicked), the thread gives the core back.
struct Release<'a> {
    handle: &'a Handle,
    slot: &'a CoreSlot,
    /// `None` once dropped.
    installed: Option<worker::Installed>,
    /// The worker's loop state.
    worker: Worker,
}

impl<'a> Release<'a> {
    fn install(handle: &'a Handle, slot: &'a CoreSlot, core: Core) -> Release<'a> {
        let installed = worker::install(handle, 0, core);
        Release {
            handle,
            slot,
            installed: Some(installed),
            worker: Worker::new(handle.clone(), 0),
        }
    }
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let shared = &self.handle.shared;
        self.worker.end_search();
        let mut core = self.installed.take().and_then(worker::uninstall);
        if !self.slot.put_back_unless_shutdown(shared, &mut core) {
            // As a worker leaving at shutdown (`worker.rs`, `Exit`).
            if let Some(core) = core {
                core.clear();
            }
            shared.owned.close_and_shutdown_all();
            shared.worker_exited();
        }
    }
}
