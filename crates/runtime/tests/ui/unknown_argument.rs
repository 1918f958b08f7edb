// tokio's `crate` has no counterpart: the expansion always names `::escapement`.
#[escapement::test(crate = "escapement")]
async fn renamed_crate() {}

#[escapement::main(worker_threads = 2, threads = 2)]
async fn main() {}
