#[escapement::test]
fn not_async() {}

#[escapement::main]
fn main() {}
