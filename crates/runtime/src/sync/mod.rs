//! Small synchronization building blocks, written against the loom facade.

mod atomic_waker;

pub(crate) use atomic_waker::AtomicWaker;
