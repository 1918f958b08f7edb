// tokio's `unhandled_panic` (unstable there) has no counterpart: a panicking task here
// always becomes a `JoinError`.
#[escapement::test(unhandled_panic = "shutdown_runtime")]
async fn shuts_down_on_a_panic() {}

#[escapement::main(worker_threads = 2, threads = 2)]
async fn main() {}
