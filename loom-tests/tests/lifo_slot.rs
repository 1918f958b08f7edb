//! Model 18: a worker's LIFO slot (`task/slot.rs`) on its own. A thief takes from the slot
//! twice, while the owner spawns a task into it, then a second one (into the slot if the
//! thief emptied it, into the run queue if not), and runs what is left. Each task runs
//! exactly once, whichever thread takes it: a take that is not one atomic swap can hand one
//! reference to two threads. A thief that takes a task touches memory that its spawner
//! wrote, and the put's `Release` and the take's `Acquire` are all that order the two: loom
//! reports a causality violation on the task's state word without either. Every task
//! finishes and every cell is freed.
#![cfg(loom)]

use escapement::loom_api::{LifoSlot, Tasks};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

#[test]
fn a_task_in_the_slot_runs_once_whichever_thread_takes_it() {
    loom::model(|| {
        let tasks = Tasks::new();
        let slot = Arc::new(LifoSlot::new());
        let runs = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let spawn = |which: usize| {
            let runs = runs.clone();
            slot.spawn(&tasks, async move {
                runs[which].fetch_add(1, Ordering::SeqCst);
            })
        };

        let thief = {
            let slot = slot.clone();
            thread::spawn(move || {
                slot.run_one();
                slot.run_one();
            })
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
