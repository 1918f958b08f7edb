//! Run queues: `crossbeam-deque`'s lock-free work-stealing deques, or under loom a mutex
//! around a `VecDeque` with the same API.
//!
//! Each worker owns a FIFO [`Local`] queue that others steal from through [`Stealer`]s, and a
//! LIFO one for the tasks it holds back after they yielded (`worker.rs`); tasks scheduled
//! from outside the workers go to the shared [`Injector`]. `crossbeam-deque` is a
//! well-kept crate with its own tests, so the loom models check the scheduler's protocols
//! over a simpler queue rather than the deque's internals.

#[cfg(not(loom))]
pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker as Local};

#[cfg(loom)]
pub(crate) use imp::{Injector, Local, Steal, Stealer};

#[cfg(loom)]
mod imp {
    use std::collections::VecDeque;

    use crate::loom::{Arc, Mutex};

    pub(crate) enum Steal<T> {
        Empty,
        Success(T),
        /// Never produced here; kept so code matching on crossbeam's `Steal` compiles.
        #[allow(dead_code)]
        Retry,
    }

    impl<T> Steal<T> {
        pub(crate) fn success(self) -> Option<T> {
            match self {
                Steal::Success(t) => Some(t),
                _ => None,
            }
        }

        pub(crate) fn is_retry(&self) -> bool {
            matches!(self, Steal::Retry)
        }
    }

    fn take<T>(queue: &Mutex<VecDeque<T>>) -> Steal<T> {
        match queue.lock().pop_front() {
            Some(t) => Steal::Success(t),
            None => Steal::Empty,
        }
    }

    pub(crate) struct Injector<T>(Mutex<VecDeque<T>>);

    impl<T> Injector<T> {
        pub(crate) fn new() -> Self {
            Injector(Mutex::new(VecDeque::new()))
        }
        pub(crate) fn push(&self, task: T) {
            self.0.lock().push_back(task);
        }
        pub(crate) fn steal(&self) -> Steal<T> {
            take(&self.0)
        }
        pub(crate) fn steal_batch_and_pop(&self, _dest: &Local<T>) -> Steal<T> {
            take(&self.0)
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }
        pub(crate) fn len(&self) -> usize {
            self.0.lock().len()
        }
    }

    /// A queue, and whether its owner pops the newest task (stealers take the oldest).
    pub(crate) struct Local<T>(Arc<Mutex<VecDeque<T>>>, bool);

    impl<T> Local<T> {
        pub(crate) fn new_fifo() -> Self {
            Local(Arc::new(Mutex::new(VecDeque::new())), false)
        }
        pub(crate) fn new_lifo() -> Self {
            Local(Arc::new(Mutex::new(VecDeque::new())), true)
        }
        pub(crate) fn push(&self, task: T) {
            self.0.lock().push_back(task);
        }
        pub(crate) fn pop(&self) -> Option<T> {
            let mut queue = self.0.lock();
            if self.1 {
                queue.pop_back()
            } else {
                queue.pop_front()
            }
        }
        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }
    }

    pub(crate) struct Stealer<T>(Arc<Mutex<VecDeque<T>>>);

    impl<T> Stealer<T> {
        pub(crate) fn steal_batch_and_pop(&self, _dest: &Local<T>) -> Steal<T> {
            take(&self.0)
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }
    }
}
