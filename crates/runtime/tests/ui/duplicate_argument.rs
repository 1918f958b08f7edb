#[escapement::test(worker_threads = 1, start_paused = true, worker_threads = 2)]
async fn worker_threads_twice() {}

#[escapement::main(start_paused = true, start_paused = false)]
async fn main() {}
