#[escapement::test(worker_threads = "2")]
async fn a_string() {}

#[escapement::test(worker_threads = 0)]
async fn zero() {}

#[escapement::test(worker_threads = -1)]
async fn negative() {}

#[escapement::test(worker_threads = 1.5)]
async fn a_float() {}

#[escapement::test(worker_threads = N)]
async fn a_constant() {}

#[escapement::main(worker_threads)]
async fn main() {}
