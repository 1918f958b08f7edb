// A test takes no arguments; it keeps them in the expansion, so the body that uses them
// brings no second error.
#[escapement::test]
async fn takes_an_argument(count: usize) {
    assert_eq!(count, 1);
}

#[escapement::main]
async fn main(args: Vec<String>) {}
