//! `task::Id`, `task::id()` and `task::try_id()`: a task reads the id its `JoinHandle`,
//! `AbortHandle` and `JoinError` report, in its future, in its future's destructor when it
//! completes, panics or is cancelled, in the destructor of an output nobody reads, and in a
//! blocking closure; the future `block_on` drives and threads outside the runtime have none;
//! ids of live tasks differ, print as numbers, and key maps; ids are one sequence for the
//! process, so two runtimes and a `LocalSet` never give the same one.

mod support;

use std::collections::HashSet;
use std::sync::mpsc;

use escapement::task::{self, Id};
use escapement::time::{sleep, Duration};

use support::{paused, running};

/// Sends the id of the task it is dropped in.
struct ReportOnDrop(mpsc::Sender<Option<Id>>);

impl Drop for ReportOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(task::try_id());
    }
}

#[test]
fn a_task_reads_the_id_its_handles_report() {
    paused(2).block_on(async {
        let task = escapement::spawn(async {
            let before = task::id();
            // Across a timer the task may come back on another worker.
            sleep(Duration::from_millis(5)).await;
            (before, task::id())
        });
        let expected = task.id();
        assert_eq!(task.abort_handle().id(), expected);
        let (before, after) = task.await.unwrap();
        assert_eq!((before, after), (expected, expected));
    });
}

#[test]
fn a_join_error_carries_the_id_of_its_task() {
    running(1).block_on(async {
        let panicking = escapement::spawn(async { panic!("on purpose") });
        let expected = panicking.id();
        assert_eq!(panicking.await.unwrap_err().id(), expected);

        let pending = escapement::spawn(std::future::pending::<()>());
        let expected = pending.id();
        pending.abort();
        let error = pending.await.unwrap_err();
        assert!(error.is_cancelled());
        assert_eq!(error.id(), expected);
    });
}

#[test]
fn a_futures_destructor_runs_as_its_task() {
    let rt = running(1);
    let (tx, rx) = mpsc::channel();

    // Completing: the future is dropped right after its last poll.
    let guard = ReportOnDrop(tx.clone());
    let done = rt.spawn(async move {
        let _guard = guard;
    });
    let id = done.id();
    rt.block_on(done).unwrap();
    assert_eq!(rx.recv().unwrap(), Some(id));

    // Panicking.
    let guard = ReportOnDrop(tx.clone());
    let panicked = rt.spawn(async move {
        let _guard = guard;
        panic!("on purpose");
    });
    let id = panicked.id();
    assert!(rt.block_on(panicked).unwrap_err().is_panic());
    assert_eq!(rx.recv().unwrap(), Some(id));

    // Cancelled while waiting.
    let guard = ReportOnDrop(tx);
    let waiting = rt.spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    });
    let id = waiting.id();
    waiting.abort();
    assert!(rt.block_on(waiting).unwrap_err().is_cancelled());
    assert_eq!(rx.recv().unwrap(), Some(id));
}

#[test]
fn an_output_nobody_reads_drops_as_its_task() {
    let rt = running(1);
    let (tx, rx) = mpsc::channel();
    // The handle is dropped first: the task drops its output as it completes.
    let (go, wait) = mpsc::channel::<()>();
    let output = ReportOnDrop(tx.clone());
    let detached = rt.spawn(async move {
        let _ = wait.recv();
        output
    });
    let id = detached.id();
    drop(detached);
    go.send(()).unwrap();
    assert_eq!(rx.recv().unwrap(), Some(id));

    // The handle is dropped after the task finished: the handle's drop drops the output.
    let output = ReportOnDrop(tx);
    let finished = rt.spawn(async move { output });
    let id = finished.id();
    while !finished.is_finished() {
        std::thread::yield_now();
    }
    drop(finished);
    assert_eq!(rx.recv().unwrap(), Some(id));
}

#[test]
fn a_blocking_closure_runs_as_its_task() {
    running(1).block_on(async {
        let blocking = task::spawn_blocking(task::try_id);
        let expected = blocking.id();
        assert_eq!(blocking.await.unwrap(), Some(expected));
    });
}

#[test]
fn block_on_and_threads_outside_run_no_task() {
    assert_eq!(task::try_id(), None);
    let rt = running(1);
    let inside = rt.block_on(async {
        escapement::spawn(async {}).await.unwrap();
        task::try_id()
    });
    assert_eq!(inside, None);
    assert_eq!(task::try_id(), None);
}

#[test]
#[should_panic(expected = "must be called from inside a task")]
fn id_outside_a_task_panics() {
    let _ = task::id();
}

#[test]
fn ids_of_live_tasks_differ_and_print_as_numbers() {
    running(2).block_on(async {
        let tasks: Vec<_> = (0..100)
            .map(|_| escapement::spawn(std::future::pending::<()>()))
            .collect();
        let ids: HashSet<Id> = tasks.iter().map(|task| task.id()).collect();
        assert_eq!(ids.len(), tasks.len());
        for id in &ids {
            let number: u64 = id.to_string().parse().expect("a number");
            assert_eq!(format!("{id:?}"), format!("Id({number})"));
        }
        for task in tasks {
            task.abort();
        }
    });
}

#[test]
fn ids_differ_across_runtimes_and_local_sets() {
    let first = running(1);
    let second = running(1);
    let local = task::LocalSet::new();
    let mut ids = HashSet::new();
    for _ in 0..10 {
        assert!(ids.insert(first.spawn(async {}).id()));
        assert!(ids.insert(second.spawn(async {}).id()));
        assert!(ids.insert(second.spawn_blocking(|| {}).id()));
        assert!(ids.insert(local.spawn_local(async {}).id()));
    }
    let from_inside = local.block_on(&first, async {
        let spawned = escapement::spawn(async { task::id() }).await.unwrap();
        let local = task::spawn_local(async { task::id() }).await.unwrap();
        (spawned, local)
    });
    assert_ne!(from_inside.0, from_inside.1);
    assert!(ids.insert(from_inside.0) && ids.insert(from_inside.1));
}
