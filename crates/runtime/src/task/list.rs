//! [`OwnedTasks`]: every live task of a runtime, so shutdown can cancel them all.
//!
//! A task waiting on a timer, a channel or another task sits in no run queue; only this list
//! still reaches it when the runtime shuts down. The list holds one reference per task, in
//! shards (each a mutex around a slab) picked by task id so spawns on different workers rarely
//! meet on a lock. Closing the list (shutdown) drains every shard and makes later spawns fail
//! straight into cancellation.
//!
//! # Completed tasks leave in batches
//!
//! Tasks complete in no particular order, so with many of them live the slab entry of the one
//! completing is a cache miss, and taking it out one at a time puts that miss on every
//! completion. Instead, in a shard of at least [`BATCH_FROM`] tasks, a completed task's key
//! goes onto the shard's `done` array (kept warm) and the list keeps its reference; when
//! [`BATCH`] keys have gathered, the completion that fills the array takes all of them out of
//! the slab in one loop, whose loads do not depend on each other and so wait on their misses
//! together, and drops their references after releasing the lock. A completed task thus
//! keeps its memory (not its future, which is gone, nor its output, which its `JoinHandle`
//! holds) until its batch leaves: at most `BATCH - 1` tasks per shard (more while another
//! batch is being freed, below), or until shutdown.
//!
//! # One batch is freed at a time
//!
//! The tasks of a batch are mostly freed by the last of their references, the list's, so a
//! batch leaving is [`BATCH`] frees in a row. Tasks spawned from one thread (an accept loop,
//! `block_on`) come from that thread's part of the allocator, and with glibc's malloc every
//! free of such a block takes that part's lock, which sleeps in the kernel at its first failed
//! attempt. Two workers freeing batches at once meet there: in a two-worker storm, once the
//! spawning had ended, 23 % of the workers' samples were waiting for that lock or waking each
//! other (`docs/benchmarks.md`, "One batch freed at a time"). So batches take turns,
//! under `frees`, and do not wait for each other while there is other work: a completion that
//! finds its batch due and `frees` held keeps the batch's keys in `done` and goes on, and the
//! shard's next completion tries again. Only the completion that fills `done` (2 × `BATCH`
//! keys) waits for its turn, after releasing the shard's lock. A shard thus keeps at most
//! 2 × `BATCH` - 1 completed tasks' memory. With one worker, or an allocator whose frees do
//! not share a lock, the turn costs an uncontended `try_lock` per batch.
//!
//! A smaller shard's slab is in the cache, and its tasks leave one at a time as they
//! complete: there a batch would only hold memory back from the allocator, which hands a
//! task's block straight to the next spawn when it is freed at once (a task spawned and
//! joined in a loop took 290 ns a round trip that way, and 320 to 460 ns with every task
//! batched).
//!
//! The keys in `done` are trusted without a check: a task completes once, and until the
//! shard is closed nothing else takes a task out of it. Once it is closed, shutdown drains
//! it whole, the tasks of `done` with the rest (cancelling a completed task only drops the
//! list's reference), and a completion looks its task up and takes it only if it is still
//! there, as shutdown may have taken it first. Counting live tasks leaves the keys in `done`
//! out.

use std::future::Future;

use slab::Slab;

use super::id::IdSource;
use super::{Notified, Schedule, Task};
use crate::loom::Mutex;
use crate::JoinHandle;

pub(crate) struct OwnedTasks<S: 'static> {
    shards: Box<[Mutex<Shard<S>>]>,
    /// Where the tasks' ids come from.
    ids: IdSource,
    /// Held while a batch's references are dropped: one batch is freed at a time.
    frees: Mutex<()>,
}

/// Completed tasks a shard gathers before taking them out of its slab together.
#[cfg(not(loom))]
const BATCH: usize = 32;
/// Small enough for a model's few tasks to fill.
#[cfg(loom)]
const BATCH: usize = 2;

/// A shard holding fewer tasks than this (16 KiB of slab) takes completed tasks out one at a
/// time.
#[cfg(not(any(loom, miri)))]
const BATCH_FROM: usize = 1024;
/// Every shard batches in a model (a shard holds at least the task completing).
#[cfg(loom)]
const BATCH_FROM: usize = 1;
/// Small enough for tests under Miri to fill a shard quickly.
#[cfg(all(miri, not(loom)))]
const BATCH_FROM: usize = 8;

struct Shard<S: 'static> {
    tasks: Slab<Task<S>>,
    /// Keys of completed tasks still in `tasks`: the first `done_len`, fewer than `BATCH`
    /// unless a due batch is waiting for its turn to be freed, always fewer than
    /// `2 * BATCH`; none once shutdown has drained the shard.
    done: [usize; 2 * BATCH],
    done_len: usize,
    closed: bool,
}

impl<S: Schedule> OwnedTasks<S> {
    /// A list with at least `shards` shards (rounded up to a power of two).
    pub(crate) fn new(shards: usize) -> Self {
        let shards = shards.max(1).next_power_of_two();
        OwnedTasks {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Shard {
                        tasks: Slab::new(),
                        done: [0; 2 * BATCH],
                        done_len: 0,
                        closed: false,
                    })
                })
                .collect(),
            ids: IdSource::default(),
            frees: Mutex::new(()),
        }
    }

    /// A fresh task id.
    pub(crate) fn next_id(&self) -> u64 {
        self.ids.next()
    }

    /// The tasks in the list that have not completed, counted shard by shard (each under
    /// its lock, so the sum is of moments a little apart).
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                let shard = shard.lock();
                shard.tasks.len() - shard.done_len
            })
            .sum()
    }

    fn shard(&self, id: u64) -> &Mutex<Shard<S>> {
        &self.shards[id as usize & (self.shards.len() - 1)]
    }

    /// Creates a task and adds it to the list. Returns its join handle, and the `Notified`
    /// to schedule, or `None` when the list is closed (the task is then already cancelled).
    pub(crate) fn bind<F>(
        &self,
        future: F,
        scheduler: S,
    ) -> (JoinHandle<F::Output>, Option<Notified<S>>)
    where
        F: Future + Send + 'static,
        F::Output: 'static,
    {
        let id = self.next_id();
        let (task, notified, join) = super::new(future, scheduler, id);
        let mut shard = self.shard(id).lock();
        if shard.closed {
            drop(shard);
            drop(notified);
            task.shutdown();
            return (join, None);
        }
        let entry = shard.tasks.vacant_entry();
        // SAFETY: `shard` is the guard of the task's shard (chosen by its id).
        unsafe { task.set_owned_key(entry.key()) };
        entry.insert(task);
        (join, Some(notified))
    }

    /// Takes a completed task out of the list, returning the list's reference; or `None`
    /// when the list keeps the reference until the task's batch leaves (the shard is open and
    /// large), or when shutdown already took it.
    pub(crate) fn remove(&self, task: &Task<S>) -> Option<Task<S>> {
        let mut shard = self.shard(task.id()).lock();
        // SAFETY: `shard` is the guard of the task's shard, chosen by its id.
        let key = unsafe { task.owned_key() };
        if shard.closed || shard.tasks.len() < BATCH_FROM {
            return if shard.tasks.get(key).is_some_and(|held| held.ptr_eq(task)) {
                Some(shard.tasks.remove(key))
            } else {
                None
            };
        }
        let len = shard.done_len + 1;
        shard.done[len - 1] = key;
        if len < BATCH {
            shard.done_len = len;
            return None;
        }
        // The batch is due. It leaves now if no other batch is being freed, or if `done` is
        // full; otherwise it waits for the shard's next completion.
        let turn = self.frees.try_lock();
        if turn.is_none() && len < 2 * BATCH {
            shard.done_len = len;
            return None;
        }
        shard.done_len = 0;
        let done = shard.done;
        let mut batch: [Option<Task<S>>; 2 * BATCH] = [const { None }; 2 * BATCH];
        for (task, &key) in batch.iter_mut().zip(&done[..len]) {
            *task = Some(shard.tasks.remove(key));
        }
        // Dropping a reference may free a task, which need not wait on the shard's lock.
        drop(shard);
        let turn = turn.unwrap_or_else(|| self.frees.lock());
        drop(batch);
        drop(turn);
        None
    }

    /// Closes the list: a task bound from now on is cancelled at once, in [`bind`](Self::bind).
    pub(crate) fn close(&self) {
        for shard in self.shards.iter() {
            shard.lock().closed = true;
        }
    }

    /// Closes the list and cancels every task in it: idle tasks are dropped here, running
    /// ones by their worker when their poll returns.
    ///
    /// Every shard is closed before the first task is cancelled, so a task spawned while a
    /// cancelled future drops is cancelled at once, whichever shard it lands in.
    pub(crate) fn close_and_shutdown_all(&self) {
        self.close();
        for shard in self.shards.iter() {
            let tasks: Vec<Task<S>> = {
                let mut shard = shard.lock();
                // The completed tasks leave with the rest.
                shard.done_len = 0;
                shard.tasks.drain().collect()
            };
            for task in tasks {
                task.shutdown();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::task::Notified;

    /// A scheduler that runs nothing by itself: every cell holds one of its clones, so its
    /// strong count tells how many task cells are still allocated.
    #[derive(Clone)]
    struct Probe(Arc<OwnedTasks<Probe>>);

    impl Schedule for Probe {
        fn schedule(&self, _task: Notified<Probe>) {
            unreachable!("the tasks here complete on their first poll")
        }

        fn release(&self, task: &Task<Probe>) -> Option<Task<Probe>> {
            self.0.remove(task)
        }
    }

    impl Probe {
        /// A list of one shard, and `filler` tasks in it that are never run.
        fn new(filler: usize) -> (Probe, Vec<Notified<Probe>>) {
            let probe = Probe(Arc::new(OwnedTasks::new(1)));
            let filler = (0..filler).map(|_| probe.bind()).collect();
            (probe, filler)
        }

        /// Task cells still allocated.
        fn cells(&self) -> usize {
            Arc::strong_count(&self.0) - 1
        }

        /// Spawns a task that completes on its first poll, without running it.
        fn bind(&self) -> Notified<Probe> {
            let (join, notified) = self.0.bind(async {}, self.clone());
            drop(join);
            notified.expect("the list is open")
        }

        /// Spawns `n` such tasks.
        fn bind_many(&self, n: usize) -> std::vec::IntoIter<Notified<Probe>> {
            (0..n).map(|_| self.bind()).collect::<Vec<_>>().into_iter()
        }

        /// Shuts the list down and drops the filler, after which no cell may be left.
        fn shut_down(self, filler: Vec<Notified<Probe>>) {
            self.0.close_and_shutdown_all();
            drop(filler);
            assert_eq!(self.cells(), 0);
        }
    }

    #[test]
    fn a_small_shard_frees_each_task_as_it_completes() {
        let (probe, filler) = Probe::new(BATCH_FROM - 3);
        let tasks: Vec<_> = (0..2).map(|_| probe.bind()).collect();
        for (i, task) in tasks.into_iter().enumerate() {
            task.run();
            assert_eq!(probe.cells(), BATCH_FROM - 3 + 1 - i);
            assert_eq!(probe.0.len(), BATCH_FROM - 3 + 1 - i);
        }
        probe.shut_down(filler);
    }

    #[test]
    fn a_large_shard_frees_completed_tasks_a_batch_at_a_time() {
        let (probe, filler) = Probe::new(BATCH_FROM);
        let tasks: Vec<_> = (0..2 * BATCH + 1).map(|_| probe.bind()).collect();
        for (i, task) in tasks.into_iter().enumerate() {
            task.run();
            let completed = i + 1;
            assert_eq!(
                probe.0.len(),
                BATCH_FROM + 2 * BATCH + 1 - completed,
                "alive after {completed}"
            );
            let freed = completed / BATCH * BATCH;
            assert_eq!(
                probe.cells(),
                BATCH_FROM + 2 * BATCH + 1 - freed,
                "cells left after {completed} completions"
            );
        }
        probe.0.close_and_shutdown_all();
        // Cancelled by shutdown, the filler tasks are held only by their notifications now.
        assert_eq!(
            probe.cells(),
            BATCH_FROM,
            "shutdown frees the task left in `done`"
        );
        drop(filler);
        assert_eq!(probe.cells(), 0);
    }

    #[test]
    fn a_due_batch_waits_while_another_is_being_freed() {
        let (probe, filler) = Probe::new(BATCH_FROM);
        let mut tasks = probe.bind_many(BATCH + 1);
        let turn = probe.0.frees.lock();
        tasks.by_ref().take(BATCH).for_each(Notified::run);
        assert_eq!(
            probe.0.len(),
            BATCH_FROM + 1,
            "the completed tasks are not live"
        );
        assert_eq!(
            probe.cells(),
            BATCH_FROM + BATCH + 1,
            "the due batch stays while another batch is being freed"
        );
        drop(turn);
        tasks.next().expect("one task left").run();
        assert_eq!(
            probe.cells(),
            BATCH_FROM,
            "the next completion takes the waiting batch with it"
        );
        probe.shut_down(filler);
    }

    #[test]
    fn the_completion_that_fills_done_waits_for_its_turn() {
        let (probe, filler) = Probe::new(BATCH_FROM);
        let mut tasks = probe.bind_many(2 * BATCH);
        let turn = probe.0.frees.lock();
        tasks.by_ref().take(2 * BATCH - 1).for_each(Notified::run);
        assert_eq!(probe.cells(), BATCH_FROM + 2 * BATCH);
        let last = tasks.next().expect("one task left");
        let completing = std::thread::spawn(move || last.run());
        // The last completion takes every completed task out of the slab, then waits for the
        // turn this thread holds before dropping them.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while probe.0.shards[0].lock().tasks.len() > BATCH_FROM {
            assert!(
                std::time::Instant::now() < deadline,
                "the completion never took its batch out"
            );
            std::thread::yield_now();
        }
        assert_eq!(
            probe.cells(),
            BATCH_FROM + 2 * BATCH,
            "no task is freed before the batch's turn"
        );
        drop(turn);
        completing.join().expect("the completion does not panic");
        assert_eq!(probe.cells(), BATCH_FROM);
        probe.shut_down(filler);
    }

    #[test]
    fn shutdown_frees_completed_and_waiting_tasks_alike() {
        let (probe, filler) = Probe::new(BATCH_FROM);
        let done: Vec<_> = (0..BATCH - 1).map(|_| probe.bind()).collect();
        for task in done {
            task.run();
        }
        assert_eq!(probe.0.len(), BATCH_FROM);
        assert_eq!(probe.cells(), BATCH_FROM + BATCH - 1);
        probe.0.close_and_shutdown_all();
        assert_eq!(probe.0.len(), 0);
        assert_eq!(probe.cells(), BATCH_FROM);
        drop(filler);
        assert_eq!(probe.cells(), 0);
    }

    #[test]
    fn a_task_completing_after_shutdown_drained_its_shard_is_not_taken_twice() {
        let (probe, filler) = Probe::new(BATCH_FROM);
        let first = probe.bind();
        let second = probe.bind();
        first.run();
        probe.0.close_and_shutdown_all();
        // Shutdown claimed `second` and cancelled it; running the notification now finds it
        // complete, and a completion in a closed shard looks its task up instead of trusting
        // its key.
        second.run();
        drop(filler);
        assert_eq!(probe.cells(), 0);
        // A spawn after shutdown is cancelled at once and never enters the list.
        let (join, notified) = probe.0.bind(async {}, probe.clone());
        assert!(notified.is_none());
        drop(join);
        assert_eq!(probe.cells(), 0);
    }
}
