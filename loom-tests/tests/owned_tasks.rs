//! Model 16: completed tasks leave the owned list in batches (of two under loom), the
//! completion that fills a batch taking the others out of the list and freeing them after its
//! lock is released, one batch at a time. Completions on two threads fill one batch, or two,
//! the second falling due while the first is being freed; completions race a shutdown
//! draining the list, on either side of the batch filling up. Every future is dropped once,
//! every task's memory is freed once (loom reports a use after free, and any `Arc` left alive:
//! each task holds one), and shutdown takes a task out only if no batch has.
#![cfg(loom)]

use escapement::loom_api::Tasks;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Counts its drops.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Spawns `n` tasks that complete on their first poll, their join handles dropped.
fn spawn_ready(tasks: &Tasks, n: usize) -> Arc<AtomicUsize> {
    let dropped = Arc::new(AtomicUsize::new(0));
    for _ in 0..n {
        let tracked = Tracked(dropped.clone());
        drop(tasks.spawn(async move {
            let _tracked = tracked;
        }));
    }
    dropped
}

/// A thread that runs queued tasks until the queue is empty.
fn runner(tasks: &Tasks) -> thread::JoinHandle<()> {
    let tasks = tasks.clone();
    thread::spawn(move || while tasks.run_one() {})
}

/// Runs the queued tasks on two threads at once, until both find the queue empty.
fn run_on_two_threads(tasks: &Tasks) {
    let first = runner(tasks);
    let second = runner(tasks);
    first.join().unwrap();
    second.join().unwrap();
}

#[test]
fn completions_on_two_threads_fill_a_batch() {
    loom::model(|| {
        let tasks = Tasks::new();
        let dropped = spawn_ready(&tasks, 2);
        run_on_two_threads(&tasks);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
        assert_eq!(tasks.alive(), 0, "no completed task counts as live");
        assert_eq!(
            tasks.cells(),
            0,
            "the full batch was freed without a shutdown"
        );
        tasks.shutdown();
    });
}

#[test]
fn a_batch_due_while_another_is_freed_leaves_with_the_next_completion() {
    loom::model(|| {
        let tasks = Tasks::new();
        let dropped = spawn_ready(&tasks, 4);
        run_on_two_threads(&tasks);
        assert_eq!(dropped.load(Ordering::SeqCst), 4);
        assert_eq!(
            tasks.alive(),
            0,
            "a batch waiting for its turn keeps every key"
        );
        // Two batches fell due. The second was freed too, or, if it fell due while the
        // first was being freed, waits for the next completion, which frees it.
        let last = spawn_ready(&tasks, 1);
        while tasks.run_one() {}
        assert_eq!(last.load(Ordering::SeqCst), 1);
        assert_eq!(tasks.alive(), 0, "the waiting batch left whole");
        assert!(
            tasks.cells() < 2,
            "no completed batch is left once nothing else is being freed"
        );
        tasks.shutdown();
        assert_eq!(tasks.cells(), 0);
    });
}

#[test]
fn completions_filling_a_batch_racing_shutdown() {
    loom::model(|| {
        let tasks = Tasks::new();
        let dropped = spawn_ready(&tasks, 3);
        let runner = runner(&tasks);
        tasks.shutdown();
        runner.join().unwrap();
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            3,
            "each future dropped once"
        );
        assert_eq!(tasks.alive(), 0);
        assert_eq!(
            tasks.cells(),
            0,
            "every task freed, by its batch or by shutdown"
        );
    });
}
