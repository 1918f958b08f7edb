// Only tokio's two names, as strings.
#[escapement::test(flavor = "single")]
async fn an_unknown_flavor() {}

#[escapement::test(flavor = multi_thread)]
async fn not_a_string() {}

// One worker is what "current_thread" means.
#[escapement::test(flavor = "current_thread", worker_threads = 2)]
async fn a_count_for_the_current_thread() {}

#[escapement::main(flavor = "multi_thread", flavor = "multi_thread")]
async fn main() {}
