//! Run queues: `crossbeam-deque`'s lock-free work-stealing deques, or under loom a mutex
//! around a `VecDeque` with the same API.
//!
//! Each worker owns a FIFO [`Local`] queue that others steal from through [`Stealer`]s, and a
//! LIFO one for the tasks it holds back after they yielded (`worker.rs`); tasks scheduled
//! from outside the workers go to the shared [`Injector`]. `crossbeam-deque` is a
//! well-kept crate with its own tests, so the loom models check the scheduler's protocols
//! over a simpler queue rather than the deque's internals.
//!
//! The stand-in keeps what those protocols depend on: a batch steal takes as many tasks as
//! crossbeam-deque 0.8's does (half of the queue, rounded up, at most 33 from the injector
//! and 32 from a worker's queue; crossbeam's injector may stop earlier, at the end of one of
//! its blocks), and moves them in two steps, out of the source under its lock and into the
//! thief's queue under that one's, so that, as in crossbeam, a batch on its way is in neither
//! queue for a while, where a worker going to sleep may look for it.

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

    /// Takes the oldest `count(len)` tasks of `source`, returns the first of them, and then
    /// pushes the others onto `dest`: between the two locks they are in neither queue.
    fn take_batch<T>(
        source: &Mutex<VecDeque<T>>,
        dest: &Local<T>,
        count: impl FnOnce(usize) -> usize,
    ) -> Steal<T> {
        let mut batch = {
            let mut source = source.lock();
            let n = count(source.len());
            source.drain(..n).collect::<VecDeque<T>>()
        };
        let Some(first) = batch.pop_front() else {
            return Steal::Empty;
        };
        if !batch.is_empty() {
            dest.0.lock().extend(batch);
        }
        Steal::Success(first)
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
        pub(crate) fn steal_batch_and_pop(&self, dest: &Local<T>) -> Steal<T> {
            take_batch(&self.0, dest, |len| len.div_ceil(2).min(33))
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
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }
        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }
    }

    pub(crate) struct Stealer<T>(Arc<Mutex<VecDeque<T>>>);

    impl<T> Stealer<T> {
        pub(crate) fn steal_batch_and_pop(&self, dest: &Local<T>) -> Steal<T> {
            take_batch(&self.0, dest, |len| len.div_ceil(2).min(32))
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }
    }
}
