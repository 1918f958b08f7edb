// Lints about the function itself reach it as they reach a plain function: here, one never
// called is dead code.
#![deny(dead_code)]

#[escapement::main]
async fn main() {}

#[escapement::main]
async fn never_called() -> u32 {
    1
}
