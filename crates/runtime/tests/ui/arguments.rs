#[escapement::test]
async fn takes_an_argument(count: usize) {}

#[escapement::main]
async fn main(args: Vec<String>) {}
