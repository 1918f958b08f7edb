//! [`Idle`]: which workers sleep, and the protocol that keeps a wakeup from being lost
//! between "a worker decides to sleep" and "another thread makes work for it".
//!
//! A worker is running, searching (looking for work to steal) or sleeping. The state word
//! counts searching workers in its low 16 bits and sleeping ones in the bits above; the list of
//! sleepers sits behind a mutex.
//!
//! - **Notifying.** A thread that makes work (pushes a task) then issues a `SeqCst` fence and
//!   reads the state. If a worker is searching, that worker will find the work; otherwise, if
//!   one sleeps, it pops a sleeper, counts it as searching, and unparks it.
//! - **Ending a search.** A searching worker that found a task stops searching; the last one
//!   to stop notifies as above, since the notifiers that skipped while it searched may have
//!   left more than the one task it took.
//! - **Going to sleep.** A worker adds itself to the sleepers and the count (a `SeqCst`
//!   read-modify-write, which also drops its searching count), issues a `SeqCst` fence, then
//!   checks every queue once more before it parks. If it finds work there it stays awake,
//!   and searches unless half the workers already do: a notifier may have left that work to
//!   it, and it may run another task first, so the end of its search must pass the look on.
//!   (Refused a search, it takes what it found from the injector or its own queues itself.)
//! - **Leaving work to the searchers.** If half the workers already search and the work
//!   found is only in the others' queues, which a worker takes only by searching, the worker
//!   parks after all, as tokio's does, rather than come round to the same look for as long
//!   as the work waits. It issues a `SeqCst` fence after its look and then reads the
//!   searching count: each searcher counted there ends its search later in the `SeqCst`
//!   order, and so after the fence. It ends it either by announcing a sleep, and then its own
//!   look after its fence sees what this worker's saw, or by finding work, and then, if no
//!   other search has begun meanwhile, it is the last and wakes a sleeper (this worker, still
//!   announced, or another), whose search begins after the fence too. A searcher that looks
//!   again may itself park by this rule while others search; the last of them cannot.
//! - **Taking a batch.** A worker that moves several tasks into its queue at once (a batch
//!   from the injector or from another worker) has them in neither queue for a while, where
//!   a worker going to sleep may look in vain. A searcher covers that with the end of its
//!   search; a worker that is not searching notifies as a push does, once the batch is in.
//!
//! Either the notifier's read comes after the sleeper's announcement in the single `SeqCst`
//! order, and it sees the sleeper, or it comes before, and then the sleeper's re-check sees
//! the task. A notifier that skips because a searcher exists leaves the task to the searchers:
//! one that finds work, this task or another, stops searching, and the last to stop wakes a
//! sleeper for the rest; one that finds nothing announces its sleep after the notifier's read
//! in that order, so its re-check finds the task.

use std::fmt;

use crate::loom::{fence, AtomicUsize, Mutex, Ordering};

/// One searching worker in the state word.
const SEARCHING_ONE: usize = 1;
/// The searching count's bits.
const SEARCHING_MASK: usize = (1 << 16) - 1;
/// One sleeping worker in the state word.
const SLEEPING_ONE: usize = 1 << 16;

pub(crate) struct Idle {
    state: AtomicUsize,
    sleepers: Mutex<Vec<usize>>,
}

impl Idle {
    pub(crate) fn new(workers: usize) -> Idle {
        assert!(workers <= SEARCHING_MASK, "too many worker threads");
        Idle {
            state: AtomicUsize::new(0),
            sleepers: Mutex::new(Vec::with_capacity(workers)),
        }
    }

    /// After making work: the worker to unpark, if one should wake to take it.
    pub(crate) fn worker_to_notify(&self) -> Option<usize> {
        fence(Ordering::SeqCst);
        if !should_wake(self.state.load(Ordering::SeqCst)) {
            return None;
        }
        let mut sleepers = self.sleepers.lock();
        // The count may have changed before we took the lock.
        if !should_wake(self.state.load(Ordering::SeqCst)) {
            return None;
        }
        let worker = sleepers.pop()?;
        // One fewer sleeping, one more searching: the woken worker starts out searching.
        self.state
            .fetch_sub(SLEEPING_ONE - SEARCHING_ONE, Ordering::SeqCst);
        Some(worker)
    }

    /// The worker is going to sleep: announces it (its search ends, if `searching`), looks
    /// at the queues once more (`look`), and returns whether it may park: it saw no work, or
    /// saw work only in the other workers' queues while half the workers search, and leaves
    /// that work to them. It stays announced either way; `end_sleep` ends it.
    pub(crate) fn announce_sleep(
        &self,
        worker: usize,
        searching: bool,
        workers: usize,
        look: impl FnOnce() -> WorkSeen,
    ) -> bool {
        self.transition_to_sleeping(worker, searching);
        match look() {
            WorkSeen::Nothing => true,
            WorkSeen::Its => false,
            WorkSeen::Others => self.leave_to_searchers(workers),
        }
    }

    /// Adds the worker to the sleepers; the caller checks the queues again afterwards.
    fn transition_to_sleeping(&self, worker: usize, searching: bool) {
        let mut sleepers = self.sleepers.lock();
        sleepers.push(worker);
        let delta = if searching {
            SLEEPING_ONE - SEARCHING_ONE
        } else {
            SLEEPING_ONE
        };
        self.state.fetch_add(delta, Ordering::SeqCst);
        drop(sleepers);
        // Orders the announcement before the caller's re-check of the queues; pairs with the
        // fence in `worker_to_notify`.
        fence(Ordering::SeqCst);
    }

    /// The worker is awake again, after its park or, if `parked` is false, after its look
    /// found work. Returns whether it searches now: a notifier that took it off the sleepers
    /// counts it as searching; and a worker whose look found work searches unless half the
    /// workers already do (a lone worker never searches). That work may be what a notifier
    /// left to it when it searched, or what a worker took in a batch while it looked (which
    /// then woke no one, as this worker searched or was awake), and it may run another task
    /// first (from the injector, on the turn that looks there first): the end of its search
    /// passes the look for the rest on to a sleeper.
    pub(crate) fn end_sleep(&self, worker: usize, parked: bool, workers: usize) -> bool {
        if !self.transition_from_sleeping(worker) {
            return true;
        }
        !parked && workers > 1 && self.try_transition_to_searching(workers)
    }

    /// The worker is awake again. Returns `true` if it took itself off the sleepers (it
    /// woke by itself), `false` if a notifier did (it is counted as searching).
    pub(crate) fn transition_from_sleeping(&self, worker: usize) -> bool {
        let mut sleepers = self.sleepers.lock();
        match sleepers.iter().position(|&w| w == worker) {
            Some(position) => {
                sleepers.swap_remove(position);
                self.state.fetch_sub(SLEEPING_ONE, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    /// A searching worker found work and stops searching. Returns the worker to unpark when
    /// it was the last searcher: a notifier that saw it searching left its work to it and
    /// woke no one, and there may be more work than the one task it took, which it now
    /// runs (for as long as that takes), so another worker must look.
    pub(crate) fn end_search(&self) -> Option<usize> {
        let prev = self.state.fetch_sub(SEARCHING_ONE, Ordering::SeqCst);
        if prev & SEARCHING_MASK == 1 {
            self.worker_to_notify()
        } else {
            None
        }
    }

    /// A running worker starts searching, unless half the workers already are (more would
    /// only contend).
    pub(crate) fn try_transition_to_searching(&self, workers: usize) -> bool {
        if self.searchers_are_enough(workers) {
            return false;
        }
        self.state.fetch_add(SEARCHING_ONE, Ordering::SeqCst);
        true
    }

    /// Whether half the workers or more search (so at least one does): then no other starts.
    fn searchers_are_enough(&self, workers: usize) -> bool {
        let state = self.state.load(Ordering::SeqCst);
        2 * (state & SEARCHING_MASK) >= workers
    }

    /// A worker going to sleep, which saw work only in the other workers' queues after its
    /// announcement: whether to leave it to the searchers, as half the workers or more
    /// search. The fence orders the look before the searchers' later looks, or before the
    /// search of the worker the last of them wakes (see the module notes).
    fn leave_to_searchers(&self, workers: usize) -> bool {
        fence(Ordering::SeqCst);
        self.searchers_are_enough(workers)
    }
}

/// Where a worker going to sleep saw work when it looked again.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WorkSeen {
    Nothing,
    /// Work the worker takes itself: in the injector or in its own queues.
    Its,
    /// Work only in the other workers' queues, which it takes by stealing (searching).
    Others,
}

fn should_wake(state: usize) -> bool {
    state & SEARCHING_MASK == 0 && state >= SLEEPING_ONE
}

impl fmt::Debug for Idle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.load(Ordering::Relaxed);
        f.debug_struct("Idle")
            .field("searching", &(state & SEARCHING_MASK))
            .field("sleeping", &(state / SLEEPING_ONE))
            .finish()
    }
}
