#[escapement::test(name = " ")]
async fn blank_name() {}

#[escapement::test(crate = escapement)]
async fn crate_without_quotes() {}

#[escapement::test(crate = "not a path")]
async fn crate_not_a_path() {}

fn main() {}
