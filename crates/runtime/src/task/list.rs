//! [`OwnedTasks`]: every live task of a runtime, so shutdown can cancel them all.
//!
//! A task waiting on a timer, a channel or another task sits in no run queue; only this list
//! still reaches it when the runtime shuts down. The list holds one reference per task, in
//! shards (each a mutex around a slab) picked by task id so spawns on different workers rarely
//! meet on a lock. A task leaves when it completes; closing the list (shutdown) drains every
//! shard and makes later spawns fail straight into cancellation.

use std::future::Future;

use slab::Slab;

use super::{Notified, Schedule, Task};
use crate::loom::{AtomicU64, Mutex, Ordering};
use crate::JoinHandle;

pub(crate) struct OwnedTasks<S: 'static> {
    shards: Box<[Mutex<Shard<S>>]>,
    /// The next task id.
    next_id: AtomicU64,
}

struct Shard<S: 'static> {
    tasks: Slab<Task<S>>,
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
                        closed: false,
                    })
                })
                .collect(),
            next_id: AtomicU64::new(1),
        }
    }

    /// A fresh task id.
    pub(crate) fn next_id(&self) -> u64 {
        // Relaxed: ids need only be unique, which the atomic increment gives.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The tasks in the list, counted shard by shard (each under its lock, so the sum is of
    /// moments a little apart).
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().tasks.len())
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
        F::Output: Send + 'static,
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
        task.set_owned_key(entry.key());
        entry.insert(task);
        (join, Some(notified))
    }

    /// Takes a completed task out of the list, returning the list's reference, or `None` if
    /// shutdown already took it.
    pub(crate) fn remove(&self, task: &Task<S>) -> Option<Task<S>> {
        let mut shard = self.shard(task.id()).lock();
        let key = task.owned_key();
        if shard.tasks.get(key).is_some_and(|held| held.ptr_eq(task)) {
            Some(shard.tasks.remove(key))
        } else {
            None
        }
    }

    /// Closes the list and cancels every task in it: idle tasks are dropped here, running
    /// ones by their worker when their poll returns.
    ///
    /// Every shard is closed before the first task is cancelled, so a task spawned while a
    /// cancelled future drops is cancelled at once, whichever shard it lands in.
    pub(crate) fn close_and_shutdown_all(&self) {
        for shard in self.shards.iter() {
            shard.lock().closed = true;
        }
        for shard in self.shards.iter() {
            let tasks: Vec<Task<S>> = shard.lock().tasks.drain().collect();
            for task in tasks {
                task.shutdown();
            }
        }
    }
}
