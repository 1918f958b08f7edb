//! Handing a worker to another thread.
//!
//! A worker is its [`Core`] (its queue and what it parks on) and its index, not its thread.
//! While the thread polls a task it is in the `Polling` role (`ROLE`), and
//! [`task::block_in_place`](crate::task::block_in_place) may then move the core to another
//! thread, which runs the same worker's loop, so the tasks queued here and, for worker 0, the
//! timers go on while the closure blocks this one. The steps, all on the old thread:
//!
//! 1. Take the core out of `LOCAL`, its queue of held tasks with it; count the new thread
//!    among the live workers (shutdown waits for it) and among the driver's active threads
//!    (a paused clock does not jump while it starts).
//! 2. Give the core to a thread of the blocking pool, which runs the loop: an idle one, or
//!    a new one whatever the pool's cap (`spawn_now`), so a worker never waits behind
//!    blocking closures. If the pool is shut down or the system refuses a new thread, put
//!    everything back: the closure then blocks this worker, as any blocking call would, and
//!    the stand-ins of the other workers cover its timers.
//! 3. Mark `LOCAL` as in the closure while it runs: the thread may block there
//!    (`Handle::block_on` works), and, its core gone, a task woken there goes to the
//!    injector. It still counts among the live workers, so a runtime dropped there waits for
//!    the others but not for itself, and not for blocking closures, as from async code.
//! 4. When the closure returns (or panics), take the core back if it is still in the slot:
//!    the thread given the job has not started the loop yet, as happens when the closure is
//!    short. Step 1 is undone (`put_core_back`), `ROLE` says `Polling` again, and the old
//!    thread goes on as the worker; the job, when it runs, finds the slot empty and returns
//!    its thread to the pool. The slot's lock decides who has the core, so exactly one of the
//!    two threads runs the worker.
//! 5. Otherwise, once the poll returns, `ROLE` says `HandedOff` and the old thread leaves the
//!    loop, its own exit balancing the count of step 1. It was active until then, so a
//!    paused clock does not jump while the closure runs. A pool thread then goes back to the
//!    pool, where the next hand-off may take it; a thread the runtime started as a worker
//!    exits.
//!
//! A task woken on the old thread between steps 1 and 4 goes to the injector: `push_local`
//! finds no queue. Nothing else of the worker stays behind: its `Worker` on the old stack
//! keeps only the turn counter, the countdowns to the next look at the injector and the next
//! release of the held tasks, the tuning of its interval, the stealing heuristics and, for
//! worker 0, the pace of its clock readings. A take-back in step 4 goes on with them (for
//! worker 0, a few turns without a reading at most); the thread given the core starts them
//! afresh, as a new worker would.

use std::cell::Cell;
use std::time::Instant;

use super::local::{Role, LOCAL, ROLE};
use super::{Core, Shared, Worker};
use crate::loom::{Arc, Mutex};
use crate::runtime::Handle;
use crate::task::BlockingPool;

/// Hands the worker on this thread to a new thread, if this thread is a worker polling a
/// task (the steps are in the module's note). Until the returned guard drops, this thread may
/// block. On a thread whose worker went to another thread earlier in the same poll (a second
/// `block_in_place`, or one inside the first's closure) there is nothing to hand off, but the
/// thread may block again all the same; nor if the new thread could not start, when the
/// thread keeps its worker and blocks it. `None`, with nothing changed, anywhere else.
pub(crate) fn hand_off() -> Option<InClosure> {
    match ROLE.try_with(Cell::get).ok()? {
        Role::Polling => {}
        Role::HandedOff => {
            return Some(InClosure {
                was_in_closure: set_in_closure(true),
                taken: None,
            })
        }
        Role::Other => return None,
    }
    // Step 1.
    let (core, handle, index, busy) = LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        let local = local.as_mut().expect("a polling worker is in LOCAL");
        let core = Core {
            queue: local.queue.take().expect("a polling worker has its queue"),
            held: local.held.take().expect("a polling worker holds its tasks"),
            park: local.park.take().expect("a polling worker has its park"),
        };
        let busy = local.busy_since.take().map(|since| since.elapsed());
        (core, local.handle.clone(), local.index, busy)
    });
    let shared = &handle.shared;
    // Its busy time so far, counted while this thread is still the worker: the next thread
    // counts from when it takes the core.
    if let Some(busy) = busy {
        shared.driver.metrics().worker_busy(index, busy);
    }
    shared.worker_entered();
    shared.driver.activate();
    // Step 2: the core travels through a slot, so that a job that never runs leaves it
    // behind.
    let slot = Arc::new(Mutex::new(Some(core)));
    let job = Box::new({
        let (handle, slot) = (handle.clone(), slot.clone());
        move || {
            let core = slot.lock().take();
            if let Some(core) = core {
                Worker::new(handle, index).run(core);
            }
        }
    });
    if BlockingPool::spawn_now(&shared.blocking, job, Some(handle.clone())).is_err() {
        let core = slot
            .lock()
            .take()
            .expect("a job that never ran left the core");
        put_core_back(shared, core);
        // The closure blocks the worker, but it is still a closure: `block_on` works in it.
        return Some(InClosure {
            was_in_closure: set_in_closure(true),
            taken: None,
        });
    }
    // Step 3: this thread's timer metrics go to the shared block from now on, and a
    // shutdown waits for it only after it has woken the timers, which the closure may be
    // waiting on.
    shared.driver.metrics().exit_worker();
    shared.worker_in_closure(true);
    ROLE.with(|role| role.set(Role::HandedOff));
    Some(InClosure {
        was_in_closure: set_in_closure(true),
        taken: Some(Slot {
            slot,
            handle,
            index,
        }),
    })
}

/// Gives `core`, which no other thread took, back to this thread's worker, undoing step 1:
/// the count of a new live worker and of an active thread for the driver.
fn put_core_back(shared: &Shared, core: Core) {
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        let local = local.as_mut().expect("still in LOCAL");
        local.queue = Some(core.queue);
        local.held = Some(core.held);
        local.park = Some(core.park);
        local.busy_since = shared.driver.metrics().enabled().then(Instant::now);
    });
    shared.driver.deactivate();
    shared.worker_exited();
}

/// Says whether this thread's worker is in the closure of `block_in_place`; returns what it
/// said before.
fn set_in_closure(in_closure: bool) -> bool {
    LOCAL
        .try_with(|local| {
            local
                .borrow_mut()
                .as_mut()
                .is_some_and(|local| std::mem::replace(&mut local.in_closure, in_closure))
        })
        .unwrap_or(false)
}

/// From [`hand_off`]: while it lives, the thread may block. When it drops (the closure
/// returned or panicked), the thread says again whether it is in a closure as it did before,
/// and, if this guard handed the worker off, takes the core back if no thread has taken it
/// from the slot yet (step 4) and goes on as the worker; otherwise it is a worker thread
/// without a core until its poll returns.
pub(crate) struct InClosure {
    was_in_closure: bool,
    /// The core's way to the new thread, if this guard's call handed it off.
    taken: Option<Slot>,
}

/// Where a handed-off core waits for the thread that runs it (step 2).
struct Slot {
    slot: Arc<Mutex<Option<Core>>>,
    handle: Handle,
    index: usize,
}

impl Drop for InClosure {
    fn drop(&mut self) {
        set_in_closure(self.was_in_closure);
        let Some(taken) = &self.taken else {
            return;
        };
        taken.handle.shared.worker_in_closure(false);
        // The lock decides between this thread and the job: whichever takes the core runs
        // the worker, and the other finds the slot empty.
        let core = taken.slot.lock().take();
        if let Some(core) = core {
            let shared = &taken.handle.shared;
            put_core_back(shared, core);
            shared.driver.metrics().enter_worker(taken.index);
            ROLE.with(|role| role.set(Role::Polling));
        }
    }
}
