//! Tasks held back after a yield.
//!
//! A task that wakes itself to yield (`yield_now`, `time::advance`, or a spent budget) is
//! held back, out of the run queue, as tokio defers such wakes, so that the yield lets
//! everything else that is ready run first: its worker puts it on a second queue of its
//! core, `held`. The worker queues the held tasks again, last first (`held` is LIFO):
//! - when it has nothing else to run: its queue and the injector are empty (before it would
//!   steal, and so before it would park);
//! - every `event_interval` turns
//!   ([`DEFAULT_EVENT_INTERVAL`](super::DEFAULT_EVENT_INTERVAL), 61, unless the builder sets
//!   it), behind its queue, so tasks that keep each other queued cannot starve them
//!   (whatever `held` holds then, those held on the thread the core came from included), as
//!   tokio's workers wake their deferred tasks every `event_interval` turns. Not at the
//!   turns that look at the injector first: a tuned `global_queue_interval` falls to 2
//!   turns when a task's polls take a millisecond, and the task that yielded would then run
//!   again every other turn, ahead of the tasks woken meanwhile (the lateness benchmark's
//!   `long` scenario: 8 ms late at the median instead of 1);
//! - on a current-thread runtime, when its batch of turns ends (its queue is empty, or it ran
//!   its most turns), after `block_on`'s future has had its turn, if woken.
//!
//! Unlike tokio's deferred wakes, held tasks can be stolen, though last: a worker that finds
//! nothing in the others' queues, the injector or the others' LIFO slots takes the oldest half
//! of another's `held`, and runs them oldest first. So a worker blocked in a long poll does not
//! keep them waiting for its length: `work_seen_by` counts them in the idle protocol's recheck,
//! and the poll that blocks came from a queue whose push woke a worker, if one slept (a hold
//! wakes none, while queueing several held tasks again does, see `defer_yielded`). `held`
//! travels with the core through `block_in_place`, and at shutdown its tasks are dropped with
//! the queue's and cancelled. A held task is still notified, so a wake from elsewhere meanwhile
//! does not move it forward; but those aborted while held are queued again before the others
//! (`requeue_held`), so a task that aborts one held beside it and then yields finds it done.

use super::local::{WorkerLocal, LOCAL};
use super::{Local, Shared, Task};

/// Holds back a task that woke itself to yield, if this thread runs a worker of its
/// runtime, until the worker queues it again (the module's note says when); gives the task
/// back otherwise (a thread whose worker went to another in `block_in_place`), to be
/// scheduled at once.
pub(crate) fn defer_yielded(shared: &Shared, task: Task) -> Result<(), Task> {
    let mut task = Some(task);
    let _ = LOCAL.try_with(|local| match &*local.borrow() {
        Some(WorkerLocal {
            handle,
            held: Some(held),
            ..
        }) if std::ptr::eq(&*handle.shared, shared) => {
            held.push(task.take().expect("held once"));
        }
        _ => {}
    });
    // No sleeping worker is woken for it, as for a push onto the run queue: the task was
    // running, so its worker is awake, and a poll that would block that worker next comes
    // from a queue, whose push woke one or found it searching (`release_yielded` wakes one
    // too when it queues several). One that searches finds the held task, and one that goes
    // to sleep sees it when it looks again (`work_seen_by`).
    task.map_or(Ok(()), Err)
}

/// How many of the held tasks that were not aborted [`requeue_held`] keeps aside at once while
/// it moves the aborted ones ahead of them: a buffer on the stack, so the release allocates
/// nothing.
const HELD_KEPT_ASIDE: usize = 32;

/// Moves the tasks of `held` to `queue`, last held first, and the aborted ones before the
/// others; if `run_first`, returns the first instead of queueing it. Returns it with how many
/// tasks left `held`.
///
/// An abort wakes its task, but a held task is already notified, so the wake cannot move it
/// forward; without this, a task that aborts a task held beside it and then yields would be
/// queued again before it (held last, it comes out first) and find it not yet finished, where
/// tokio, whose deferred tasks are not notified, has already run the abort. A lone held task
/// has nothing to go before, so the common release, one task that yields in a loop, reads no
/// task's state. With many held at once, an aborted one found after more than
/// [`HELD_KEPT_ASIDE`] others goes ahead of the later ones only.
pub(super) fn requeue_held(
    held: &Local<Task>,
    queue: &Local<Task>,
    run_first: bool,
) -> (Option<Task>, usize) {
    struct Out<'a> {
        queue: &'a Local<Task>,
        first: Option<Task>,
        run_first: bool,
        count: usize,
    }

    impl Out<'_> {
        fn put(&mut self, task: Task) {
            self.count += 1;
            if self.run_first && self.first.is_none() {
                self.first = Some(task);
            } else {
                self.queue.push(task);
            }
        }

        fn put_all(&mut self, tasks: &mut [Option<Task>]) {
            for task in tasks.iter_mut().filter_map(Option::take) {
                self.put(task);
            }
        }
    }

    let mut out = Out {
        queue,
        first: None,
        run_first,
        count: 0,
    };
    let Some(last) = held.pop() else {
        return (None, 0);
    };
    let Some(second) = held.pop() else {
        out.put(last);
        return (out.first, out.count);
    };
    let mut aside: [Option<Task>; HELD_KEPT_ASIDE] = [const { None }; HELD_KEPT_ASIDE];
    let mut kept = 0;
    for task in [last, second]
        .into_iter()
        .chain(std::iter::from_fn(|| held.pop()))
    {
        if task.is_cancelled() {
            out.put(task);
            continue;
        }
        if kept == HELD_KEPT_ASIDE {
            out.put_all(&mut aside);
            kept = 0;
        }
        aside[kept] = Some(task);
        kept += 1;
    }
    out.put_all(&mut aside[..kept]);
    (out.first, out.count)
}
