//! Model 8d: the whole runtime, with one worker thread, under loom: `block_on` spawns a task
//! and awaits it, then the runtime shuts down. This runs the real scheduler: the injector,
//! the worker's loop, its park on the timer driver, the task state machine, the join waker,
//! and shutdown's handshake with the worker. Also a task that yields, which the worker holds
//! back and must not park on, a `JoinSet` awaited in `block_on`, and, with two workers, a
//! task queued locally by a worker whose thread then blocks, which the other worker must be
//! woken to steal, and a task held back after a yield by a worker that then blocks, which the
//! other must take, also when it has already searched and is going to sleep. And a spawn
//! from outside racing the runtime's drop, which must leave nothing in the injector.
#![cfg(loom)]

#[test]
fn block_on_a_spawned_task_then_shut_down() {
    loom::model(|| {
        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .build()
            .unwrap();
        let answer = runtime.block_on(async { escapement::spawn(async { 6 * 7 }).await });
        assert_eq!(answer.unwrap(), 42);
        drop(runtime);
    });
}

/// A task that yields on the only worker is held back, in no queue. With nothing else to run,
/// the worker must queue it again rather than park: otherwise nothing runs it, and `block_on`,
/// awaiting it, waits with the parked worker (loom reports the deadlock).
#[test]
fn a_task_that_yields_on_the_only_worker_runs_again() {
    loom::model(|| {
        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .build()
            .unwrap();
        let answer = runtime.block_on(async {
            escapement::spawn(async {
                escapement::task::yield_now().await;
                6 * 7
            })
            .await
        });
        assert_eq!(answer.unwrap(), 42);
        drop(runtime);
    });
}

/// A `JoinSet` awaited in `block_on` while its task finishes on the worker: the task's end
/// queues its key and then wakes the set's waiter, and `join_next` registers its waker before
/// it reads the queue, so whichever comes first, the key is found or the waiter is woken.
#[test]
fn join_set_task_finishing_on_the_worker_wakes_join_next() {
    loom::model(|| {
        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .build()
            .unwrap();
        let output = runtime.block_on(async {
            let mut set = escapement::task::JoinSet::new();
            set.spawn(async { 6 * 7 });
            set.join_next().await
        });
        assert_eq!(output.expect("one task").unwrap(), 42);
        drop(runtime);
    });
}

/// A flag that a thread blocks on until another sets it, as a long poll would block.
struct Flag(loom::sync::Mutex<bool>, loom::sync::Condvar);

impl Flag {
    fn set(&self) {
        *self.0.lock().unwrap() = true;
        self.1.notify_one();
    }

    fn wait(&self) {
        let mut set = self.0.lock().unwrap();
        while !*set {
            set = self.1.wait(set).unwrap();
        }
    }
}

/// Checks `model` on a runtime of two workers, with a new flag, at one preemption whatever
/// `LOOM_MAX_PREEMPTIONS` says: three threads running the whole runtime make a large model.
fn check_two_workers(model: fn(escapement::Runtime, loom::sync::Arc<Flag>)) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(1);
    builder.check(move || {
        let runtime = escapement::Builder::new()
            .worker_threads(2)
            .build()
            .unwrap();
        let flag = loom::sync::Arc::new(Flag(loom::sync::Mutex::new(false), Default::default()));
        model(runtime, flag);
    });
}

/// Two workers: a task spawns another and then blocks its worker's thread until that one has
/// run (as a long poll would). The new task goes to this worker's own queue, which it will not
/// get back to, so the push must wake the other worker, asleep by then or about to be, to
/// steal it: a local push notifies as an injector push does, and the worker that ran the
/// first task, woken to search for it, stops searching before its poll (a searcher counted
/// during the poll would keep that wake from being sent). Otherwise the other worker sleeps
/// through it and nothing runs the new task: loom reports the deadlock.
#[test]
fn a_task_spawned_by_a_blocked_worker_is_stolen_by_the_other() {
    check_two_workers(|runtime, ran| {
        runtime.block_on(async move {
            escapement::spawn(async move {
                let child = ran.clone();
                drop(escapement::spawn(async move { child.set() }));
                ran.wait();
            })
            .await
            .unwrap();
        });
        drop(runtime);
    });
}

/// Two workers: a task spawns another that blocks its worker's thread until the first has run
/// again, then yields. The second may go to the other worker; if it stays, the first is held
/// back on its worker, which then blocks in the second's poll, and the other worker must take
/// the held task: it looks at held tasks when it finds nothing else, and, going to sleep,
/// counts them when it looks again (`work_seen_by`). Otherwise nothing runs it (loom reports the
/// deadlock).
#[test]
fn a_task_held_back_by_a_blocked_worker_is_taken_by_the_other() {
    check_two_workers(|runtime, ran| {
        runtime.block_on(async move {
            escapement::spawn(async move {
                let waiting = ran.clone();
                let blocking = escapement::spawn(async move { waiting.wait() });
                escapement::task::yield_now().await;
                ran.set();
                blocking.await.unwrap();
            })
            .await
            .unwrap();
        });
        drop(runtime);
    });
}

/// Two workers: the other worker looks for work while the first is in a task that waits at
/// a gate, finds none, and is going to sleep; meanwhile the task passes the gate, spawns a
/// task that blocks the worker's thread until the first has run again, and yields. The
/// spawn wakes no one (the other worker is not asleep yet), and the yield holds the first
/// task back on the worker that then blocks: the other worker, looking again as it goes to
/// sleep, must count held tasks as work (`work_seen_by`), or it sleeps through them and nothing
/// runs the held task (loom reports the deadlock). `block_on`'s thread holds the gate until
/// it has yielded to the workers, so one preemption, of the other worker between its search
/// and its sleep, is enough to reach that order.
///
/// A worker going to sleep that sees work only in the other's queues may leave it to the
/// searchers when half the workers search (`idle.rs`); with none searching, as when the held
/// task waits here, it must stay awake, or it leaves the held task to no one (mutant 81).
#[test]
fn a_task_held_back_while_the_other_worker_goes_to_sleep_is_counted_as_work() {
    check_two_workers(|runtime, ran| {
        let gate = loom::sync::Arc::new(loom::sync::Mutex::new(()));
        let closed = gate.lock().unwrap();
        let gated = gate.clone();
        runtime.block_on(async move {
            let first = escapement::spawn(async move {
                drop(gated.lock().unwrap());
                let waiting = ran.clone();
                let blocking = escapement::spawn(async move { waiting.wait() });
                escapement::task::yield_now().await;
                ran.set();
                blocking.await.unwrap();
            });
            loom::thread::yield_now();
            drop(closed);
            first.await.unwrap();
        });
        drop(runtime);
    });
}

/// Two workers: the other worker looks for work while the first is in a task that waits at
/// a gate, finds none, and is going to sleep; meanwhile the task passes the gate, spawns a
/// task, and blocks its worker's thread until that one has run. The new task goes to the
/// worker's LIFO slot, which it will not get back to, and the spawn wakes no one when it
/// finds the other worker searching: that worker, looking again as it goes to sleep, must
/// count the slot's task as work and take it (`work_seen_by`), or it sleeps through it
/// (mutant 85) and loom reports the deadlock.
#[test]
fn a_task_in_the_slot_while_the_other_worker_goes_to_sleep_is_counted_as_work() {
    check_two_workers(|runtime, ran| {
        let gate = loom::sync::Arc::new(loom::sync::Mutex::new(()));
        let closed = gate.lock().unwrap();
        let gated = gate.clone();
        runtime.block_on(async move {
            let first = escapement::spawn(async move {
                drop(gated.lock().unwrap());
                let child = ran.clone();
                drop(escapement::spawn(async move { child.set() }));
                ran.wait();
            });
            loom::thread::yield_now();
            drop(closed);
            first.await.unwrap();
        });
        drop(runtime);
    });
}

/// Two workers: `block_on`'s thread spawns three tasks, which go to the injector; the first
/// blocks its worker's thread until the second has run, the third does nothing. A worker that
/// is awake but not searching can take the first two in one batch (half of the injector,
/// rounded up), run the first and keep the second in its own queue, while the other worker
/// takes the third, runs it and, finding nothing more (the batch is in neither queue on its
/// way), goes to sleep; the spawns woke no one, as neither worker slept then. The worker that
/// took the batch must then wake the other to steal the second task, or nothing runs it
/// (loom reports the deadlock).
#[test]
fn a_batch_taken_from_the_injector_by_a_worker_not_searching_wakes_the_other() {
    check_two_workers(|runtime, ran| {
        runtime.block_on(async move {
            let waiting = ran.clone();
            let first = escapement::spawn(async move { waiting.wait() });
            let second = escapement::spawn(async move { ran.set() });
            let third = escapement::spawn(async {});
            first.await.unwrap();
            second.await.unwrap();
            third.await.unwrap();
        });
        drop(runtime);
    });
}

/// One worker: a plain thread spawns a task while the model's thread drops the runtime. A
/// spawn that got into the task list before the shutdown closed it pushes its task onto the
/// injector, perhaps after the shutdown's last drain of it; so the push then reads the
/// shutdown flag, after a `SeqCst` fence, and drains the injector itself when it is set. The
/// fence pairs with the one a steal issues before it looks at the injector, which the drain
/// does after the flag's `SeqCst` store: without it the push may read the flag unset while
/// the drain reads the injector empty, and the task is never freed (loom reports the leak;
/// mutant 96).
#[test]
fn a_spawn_from_outside_racing_the_shutdown_leaves_nothing_in_the_injector() {
    loom::model(|| {
        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        let spawner = loom::thread::spawn(move || drop(handle.spawn(async {})));
        drop(runtime);
        spawner.join().unwrap();
    });
}
