//! Model 8e: `block_in_place` hands a runtime's only worker to a new thread of the blocking
//! pool (it has none idle) while a task polls, with another task in the worker's queue. The
//! queued task runs on the new thread (it moved with the queue, and no other thread takes
//! from it), the calling task, woken by the queued one's completion while the old thread may
//! still be in its poll, is neither lost nor run twice, and the shutdown waits for both
//! threads without waiting forever: the live count took the new thread on before it started
//! and gives the old one back when it leaves its loop. (A hand-off to an idle thread of the
//! pool is model 14's.)
//!
//! Three threads running the whole runtime make a large model: with two preemptions it
//! explores 82,712 interleavings in about 7 s on the CI machine's kind, with three
//! 2,480,659 in six and a half minutes, so it is bounded at two whatever
//! `LOOM_MAX_PREEMPTIONS` says.
#![cfg(loom)]

#[test]
fn a_queued_task_moves_with_the_worker_and_shutdown_waits_for_both_threads() {
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
