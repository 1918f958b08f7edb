#[escapement::test]
#[test]
async fn tested_twice() {}

fn main() {}
