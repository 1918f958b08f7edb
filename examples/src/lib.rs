//! The examples live beside this file, as `[[example]]` targets; this library is empty.
