//! Model 18: a worker's LIFO slot (`task/slot.rs`) on its own. A thief takes from the slot
//! once, while the owner spawns a task into it, then a second one (into the slot if the
//! thief emptied it, into the run queue if not), and runs what is left. Each task runs
//! exactly once, whichever thread takes it: a take that is not one atomic swap can hand one
//! reference to two threads. Each task sees what its spawner wrote before the spawn: the
//! put's `Release` and the take's `Acquire` are all that order the two when the thief takes
//! the task, and loom reports a causality violation without either. Every task finishes and
//! every cell is freed.
#![cfg(loom)]

use escapement::loom_api::{LifoSlot, Tasks};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// What the owner writes before each spawn, for the task it spawns to read.
struct Written([UnsafeCell<usize>; 2]);

// SAFETY: each cell is written by the owner before it spawns the one task that reads it, and
// read by that task alone; the model checks that the spawn orders the two.
unsafe impl Sync for Written {}

#[test]
fn a_task_in_the_slot_runs_once_whichever_thread_takes_it() {
    loom::model(|| {
        let tasks = Tasks::new();
        let slot = Arc::new(LifoSlot::new());
        let runs = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        // What the owner wrote before each spawn, which the task reads.
        let written = Arc::new(Written([UnsafeCell::new(0), UnsafeCell::new(0)]));
        let spawn = |which: usize| {
            // SAFETY: the task that reads it is spawned below, after this write.
            written.0[which].with_mut(|value| unsafe { *value = which + 1 });
            let (runs, written) = (runs.clone(), written.clone());
            slot.spawn(&tasks, async move {
                // SAFETY: the spawn ordered the owner's write before this read.
                let value = written.0[which].with(|value| unsafe { *value });
                assert_eq!(value, which + 1, "task {which} sees what its spawner wrote");
                runs[which].fetch_add(1, Ordering::SeqCst);
            })
        };

        let thief = {
            let slot = slot.clone();
            thread::spawn(move || slot.run_one())
        };
        let first = spawn(0);
        // Into the slot if the thief has taken the first task, into the queue otherwise.
        let second = spawn(1);
        while slot.run_one() || tasks.run_one() {}
        thief.join().unwrap();
        while slot.run_one() || tasks.run_one() {}

        assert!(slot.is_empty());
        for (which, runs) in runs.iter().enumerate() {
            assert_eq!(runs.load(Ordering::SeqCst), 1, "task {which} ran once");
        }
        assert!(first.is_finished() && second.is_finished());
        drop((first, second));
        assert_eq!(tasks.alive(), 0);
        assert_eq!(tasks.cells(), 0, "every task cell freed");
    });
}
