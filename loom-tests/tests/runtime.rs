//! Model 8d: the whole runtime, with one worker thread, under loom: `block_on` spawns a task
//! and awaits it, then the runtime shuts down. This runs the real scheduler: the injector,
//! the worker's loop, its park on the timer driver, the task state machine, the join waker,
//! and shutdown's handshake with the worker.
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
