// tokio's `flavor` has no counterpart: escapement has one, multi-threaded, runtime.
#[escapement::test(flavor = "current_thread")]
async fn flavor() {}

#[escapement::main(worker_threads = 2, crate = "escapement")]
async fn main() {}
