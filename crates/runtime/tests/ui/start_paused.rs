#[escapement::test(start_paused = 1)]
async fn an_integer() {}

#[escapement::test(start_paused = "true")]
async fn a_string() {}

#[escapement::main(start_paused(true))]
async fn main() {}
