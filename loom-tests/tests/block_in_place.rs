//! Model 8e: `block_in_place` hands a runtime's only worker to a new thread of the blocking
//! pool (it has none idle) while a task polls, with another task in the worker's queue. The
//! closure returns at once, so its return races the new thread for the worker: the new thread
//! takes it and runs the queued task (it moved with the queue, and no other thread takes from
//! it), or the old thread takes it back and runs that task itself, and the new thread finds
//! nothing to run. Either way exactly one thread runs the worker, the calling task, woken by
//! the queued one's completion while the old thread may still be in its poll, is neither lost
//! nor run twice, and the shutdown waits for both threads without waiting forever: the live
//! count took the new thread on before it started and gives one back when the old thread
//! leaves its loop or takes the worker back. (A hand-off to an idle thread of the pool is
//! model 14's.)
//!
//! Three threads running the whole runtime make a large model: with two preemptions it
//! explores 35,886 interleavings, with three many times as many, which the mutants'
//! runs would take four times over, so it is bounded at two whatever `LOOM_MAX_PREEMPTIONS`
//! says.
#![cfg(loom)]

#[test]
fn a_queued_task_runs_once_whichever_thread_has_the_worker_and_shutdown_waits_for_both() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .build()
            .unwrap();
        let answer = runtime.block_on(async {
            escapement::spawn(async {
                let queued = escapement::spawn(async { 6 });
                let seven = escapement::task::block_in_place(|| 7);
                queued.await.unwrap() * seven
            })
            .await
        });
        assert_eq!(answer.unwrap(), 42);
        drop(runtime);
    });
}
