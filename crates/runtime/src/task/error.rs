//! [`JoinError`]: why a task produced no output.

use std::any::Any;
use std::fmt;
use std::io;

use super::id::Id;
use crate::util::SyncWrapper;

/// A task ended without an output: it was cancelled (by [`abort`](crate::JoinHandle::abort)
/// or by runtime shutdown), or it panicked.
pub struct JoinError {
    id: u64,
    repr: Repr,
}

enum Repr {
    Cancelled,
    Panic {
        payload: SyncWrapper<Box<dyn Any + Send + 'static>>,
        /// The payload's text when it is a string, copied so `Display` needs no access to the
        /// payload itself.
        message: Option<String>,
    },
}

impl JoinError {
    pub(crate) fn cancelled(id: u64) -> JoinError {
        JoinError {
            id,
            repr: Repr::Cancelled,
        }
    }

    pub(crate) fn panic(id: u64, payload: Box<dyn Any + Send + 'static>) -> JoinError {
        let message = panic_message(payload.as_ref()).map(str::to_owned);
        JoinError {
            id,
            repr: Repr::Panic {
                payload: SyncWrapper::new(payload),
                message,
            },
        }
    }

    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic { .. })
    }

    /// The panic's payload, for `std::panic::resume_unwind`.
    ///
    /// # Panics
    ///
    /// If the task did not panic (it was cancelled); [`try_into_panic`] does not panic.
    ///
    /// [`try_into_panic`]: JoinError::try_into_panic
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .expect("`JoinError::into_panic` called on a task that was cancelled, not panicked")
    }

    /// The panic's payload, or the error back if the task did not panic.
    ///
    /// # Errors
    ///
    /// Returns `self` if the task was cancelled.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic { payload, .. } => Ok(payload.into_inner()),
            Repr::Cancelled => Err(self),
        }
    }

    /// The task's id, unique among the process's tasks: the one
    /// [`JoinHandle::id`](crate::JoinHandle::id) gave.
    pub fn id(&self) -> Id {
        Id::new(self.id)
    }

    /// The task's id: [`id`](JoinError::id), under its earlier name.
    #[deprecated(note = "renamed `id`, as tokio names it")]
    pub fn task_id(&self) -> Id {
        self.id()
    }
}

/// The panic message, when the payload is a string.
fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "task {} was cancelled", self.id),
            Repr::Panic {
                message: Some(message),
                ..
            } => write!(f, "task {} panicked with message {message:?}", self.id),
            Repr::Panic { message: None, .. } => write!(f, "task {} panicked", self.id),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "JoinError::Cancelled({:?})", self.id()),
            Repr::Panic {
                message: Some(message),
                ..
            } => write!(f, "JoinError::Panic({:?}, {message:?}, ...)", self.id()),
            Repr::Panic { message: None, .. } => {
                write!(f, "JoinError::Panic({:?}, ...)", self.id())
            }
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for io::Error {
    fn from(error: JoinError) -> io::Error {
        io::Error::other(match error.repr {
            Repr::Cancelled => "task was cancelled",
            Repr::Panic { .. } => "task panicked",
        })
    }
}
