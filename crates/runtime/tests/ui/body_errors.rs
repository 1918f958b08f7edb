// Errors inside the body point at the user's code, not at the attribute.

#[escapement::main]
async fn main() {
    let count: u32 = "one";
}

#[escapement::main]
async fn returns_a_number() -> u32 {
    let answer = 42;
    "forty-two"
}

#[escapement::main]
async fn the_error_type_comes_from_the_signature() -> Result<(), std::num::ParseIntError> {
    let number: u8 = "300".parse()?;
    let text: &str = number;
    Ok(())
}
