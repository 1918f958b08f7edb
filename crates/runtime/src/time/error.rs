//! Time errors.

use std::fmt;
use std::io;

/// The deadline of a [`timeout`](crate::time::timeout) passed before its future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl Elapsed {
    pub(crate) fn new() -> Elapsed {
        Elapsed(())
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// An error of kind [`TimedOut`](io::ErrorKind::TimedOut) that carries the `Elapsed`
/// (`get_ref` finds it) and displays as it does, "deadline has elapsed". Tokio's conversion
/// gives the kind alone, displayed as "timed out"; code that matches on the kind sees no
/// difference.
///
/// # Examples
///
/// ```
/// use std::io;
/// use escapement::time::{error::Elapsed, timeout, Duration};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let elapsed = timeout(Duration::ZERO, std::future::pending::<()>()).await.unwrap_err();
/// let error = io::Error::from(elapsed);
/// assert_eq!(error.kind(), io::ErrorKind::TimedOut);
/// assert_eq!(error.to_string(), "deadline has elapsed");
/// assert!(error.get_ref().is_some_and(|inner| inner.is::<Elapsed>()));
/// # });
/// ```
impl From<Elapsed> for io::Error {
    fn from(elapsed: Elapsed) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, elapsed)
    }
}
