#[escapement::main]
struct Main;

fn main() {}
