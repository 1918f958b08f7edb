//! Names a port from tokio reaches for, at tokio's paths: the `runtime` module with
//! `Runtime`, `Builder`, `Handle`, `RuntimeFlavor` and `RuntimeMetrics`; the flavor a handle
//! reports; what a `TryCurrentError` says about why there was no runtime; and the task counts
//! of `RuntimeMetrics` (`num_workers`, `num_alive_tasks`, `global_queue_depth`), which, as
//! tokio's, reads the runtime each time it is asked; `runtime::Id` and `Handle::id`;
//! `runtime::worker_index` on each kind of thread.

mod support;

use std::sync::mpsc;

use escapement::runtime::{
    worker_index, Builder, Handle, Id, Runtime, RuntimeFlavor, RuntimeMetrics,
};

use support::wait_until;

#[test]
fn the_runtime_module_holds_tokios_names() {
    let rt: Runtime = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let handle: Handle = rt.handle().clone();
    let metrics: RuntimeMetrics = handle.metrics();
    assert_eq!(metrics.num_workers(), 2);
    // The crate root names the same types.
    let _: escapement::Runtime = rt;
}

#[test]
fn each_builder_gives_its_flavor() {
    let current = Builder::new_current_thread().build().unwrap();
    assert_eq!(
        current.handle().runtime_flavor(),
        RuntimeFlavor::CurrentThread
    );
    let inside = current.block_on(async { Handle::current().runtime_flavor() });
    assert_eq!(inside, RuntimeFlavor::CurrentThread);
    let multi = Runtime::new().unwrap();
    let inside = multi.block_on(async { Handle::current().runtime_flavor() });
    assert_eq!(inside, RuntimeFlavor::MultiThread);
}

#[test]
fn try_current_outside_a_runtime_is_missing_context() {
    let error = Handle::try_current().unwrap_err();
    assert!(error.is_missing_context());
    assert!(!error.is_thread_local_destroyed());
    assert_eq!(
        error.to_string(),
        "this thread is not in an escapement runtime"
    );
}

/// Asks for the current runtime from its destructor, which a thread runs as it exits.
struct AskOnExit(mpsc::Sender<(bool, bool)>);

impl Drop for AskOnExit {
    fn drop(&mut self) {
        let error = Handle::try_current().expect_err("no runtime while the thread exits");
        let _ = self.0.send((
            error.is_missing_context(),
            error.is_thread_local_destroyed(),
        ));
    }
}

thread_local! {
    static ASK_ON_EXIT: std::cell::RefCell<Option<AskOnExit>> = const { std::cell::RefCell::new(None) };
}

/// Thread-local destructors run in the reverse order the thread first touched them (glibc's
/// `__cxa_thread_atexit_impl`): touching ours first makes it run after the runtime's.
#[cfg(target_os = "linux")]
#[test]
fn try_current_as_a_thread_exits_tells_the_locals_are_gone() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        ASK_ON_EXIT.with(|ask| *ask.borrow_mut() = Some(AskOnExit(tx)));
        // Touches the runtime's thread-local, after ours.
        assert!(Handle::try_current().is_err());
    })
    .join()
    .unwrap();
    let (missing, destroyed) = rx.recv().unwrap();
    assert!(destroyed && !missing);
}

#[test]
fn metrics_count_alive_tasks_and_the_global_queue() {
    let rt = Builder::new().worker_threads(1).build().unwrap();
    assert_eq!(rt.metrics().num_alive_tasks(), 0);
    assert_eq!(rt.metrics().global_queue_depth(), 0);

    // Hold the only worker, then spawn from outside: the spawns wait in the global queue.
    let (release, held) = mpsc::channel::<()>();
    let (started, worker_busy) = mpsc::channel();
    let blocker = rt.spawn(async move {
        started.send(()).unwrap();
        held.recv().unwrap();
    });
    worker_busy.recv().unwrap();
    let queued: Vec<_> = (0..3).map(|_| rt.spawn(async {})).collect();
    let metrics = rt.metrics();
    assert_eq!(metrics.num_alive_tasks(), 4);
    assert_eq!(metrics.global_queue_depth(), 3);

    release.send(()).unwrap();
    rt.block_on(blocker).unwrap();
    for task in queued {
        rt.block_on(task).unwrap();
    }
    // A finished task leaves the count just after its handle sees it finish.
    wait_until("every task has left the count", || {
        rt.metrics().num_alive_tasks() == 0
    });
    assert_eq!(rt.metrics().global_queue_depth(), 0);
}

#[test]
fn blocking_closures_are_not_alive_tasks() {
    let rt = Builder::new().worker_threads(1).build().unwrap();
    let (release, held) = mpsc::channel::<()>();
    let blocking = rt.spawn_blocking(move || held.recv().unwrap());
    assert_eq!(rt.metrics().num_alive_tasks(), 0);
    release.send(()).unwrap();
    rt.block_on(blocking).unwrap();
}

#[test]
fn a_metrics_view_reads_the_runtime_when_asked() {
    let rt = Builder::new().worker_threads(1).build().unwrap();
    // Taken before anything ran, and kept: a polling loop ported from tokio ends.
    let metrics = rt.metrics();
    assert_eq!(metrics.num_alive_tasks(), 0);
    let (release, held) = mpsc::channel::<()>();
    let task = rt.spawn(async move { held.recv().unwrap() });
    assert_eq!(
        metrics.num_alive_tasks(),
        1,
        "the view sees the spawn after it"
    );
    release.send(()).unwrap();
    wait_until("the task has left the count", || {
        metrics.num_alive_tasks() == 0
    });
    rt.block_on(task).unwrap();

    let registered = metrics.timers_registered();
    rt.block_on(async { escapement::time::sleep(std::time::Duration::from_millis(1)).await });
    assert_eq!(metrics.timers_registered(), registered + 1);
    assert_eq!(metrics.live_timers(), 0);
    drop(rt);
    assert_eq!(
        metrics.num_workers(),
        1,
        "readable after the runtime is gone"
    );
}

/// As tokio's: a worker thread's index below the worker count, 0 for a current-thread
/// runtime's `block_on`; `None` on a multi-threaded runtime's `block_on` thread, a blocking
/// thread, in `block_in_place`'s closure (the worker went elsewhere) and outside runtimes.
#[test]
fn worker_index_names_the_worker_on_this_thread() {
    assert_eq!(worker_index(), None);
    let rt = Builder::new().worker_threads(2).build().unwrap();
    let (tasks, outside) = rt.block_on(async {
        let tasks: Vec<_> = (0..64)
            .map(|_| escapement::spawn(async { worker_index() }))
            .collect();
        let mut seen = Vec::new();
        for task in tasks {
            seen.push(task.await.unwrap());
        }
        let blocking = escapement::task::spawn_blocking(worker_index)
            .await
            .unwrap();
        let in_place = escapement::spawn(async {
            let before = worker_index();
            let inside = escapement::task::block_in_place(worker_index);
            (before, inside)
        })
        .await
        .unwrap();
        (seen, (worker_index(), blocking, in_place))
    });
    assert!(
        tasks.iter().all(|index| matches!(index, Some(0 | 1))),
        "{tasks:?}"
    );
    let (in_block_on, blocking, (before, inside)) = outside;
    assert_eq!((in_block_on, blocking), (None, None));
    assert!(matches!(before, Some(0 | 1)), "{before:?}");
    assert_eq!(inside, None);

    let current = Builder::new_current_thread().build().unwrap();
    let (body, task) = current.block_on(async {
        let task = escapement::spawn(async { worker_index() });
        (worker_index(), task.await.unwrap())
    });
    assert_eq!((body, task), (Some(0), Some(0)));
    assert_eq!(worker_index(), None);
}

#[test]
fn a_runtime_has_one_id_that_no_other_live_runtime_shares() {
    let runtimes: Vec<Runtime> = (0..3)
        .map(|_| Builder::new().worker_threads(1).build().unwrap())
        .collect();
    let ids: Vec<Id> = runtimes.iter().map(|rt| rt.handle().id()).collect();
    let distinct: std::collections::HashSet<Id> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), 3, "{ids:?}");
    for (rt, &id) in runtimes.iter().zip(&ids) {
        // The same through every handle: a clone, the current one in block_on and in a task.
        assert_eq!(rt.handle().clone().id(), id);
        let (in_block_on, in_task) = rt.block_on(async {
            let task = escapement::spawn(async { Handle::current().id() });
            (Handle::current().id(), task.await.unwrap())
        });
        assert_eq!((in_block_on, in_task), (id, id));
        // It prints as a number.
        assert!(id.to_string().parse::<u64>().unwrap() > 0);
    }
}
