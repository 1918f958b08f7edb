//! Run queues: `crossbeam-deque`'s lock-free work-stealing deques, or under loom a mutex
//! around a `VecDeque` with the same API.
//!
//! Each worker owns a FIFO [`Local`] queue that others steal from through [`Stealer`]s, and a
//! LIFO one for the tasks it holds back after they yielded (`worker/held.rs`); tasks scheduled
//! from outside the workers go to the shared [`Injector`]. `crossbeam-deque` is a
//! well-kept crate with its own tests, so the loom models check the scheduler's protocols
//! over a simpler queue rather than the deque's internals.
//!
//! The stand-in keeps what those protocols depend on:
//! - A batch steal takes as many tasks as crossbeam-deque 0.8's does (half of the queue,
//!   rounded up, at most 33, or the caller's limit, from the injector and 32 from a worker's
//!   queue; crossbeam's injector may stop earlier, at the end of one of its blocks), and
//!   moves them in two steps, out of the source under its lock and into the thief's queue
//!   under that one's, so that, as in crossbeam, a batch on its way is in neither queue for a
//!   while, where a worker going to sleep may look for it.
//! - A look at whether a queue is empty, or of the injector's length, does not take its lock:
//!   it reads the queue's length, which each change stores (`Release`) before it releases the
//!   lock, with `Acquire`, as crossbeam's `Stealer::is_empty` and `Injector::is_empty` read
//!   their queue's indices. So, as there, a look that nothing orders after a push may miss
//!   the task; under the lock, every look would have seen every push made before it in
//!   loom's schedule, which hid a missing ordering from the models (mutant 92 in
//!   `loom-tests/mutants`).
//! - A steal from the injector, one task or a batch, first looks at the length the same way,
//!   after a `SeqCst` fence, as crossbeam's reads the tail index, and takes nothing when it
//!   reads zero (`Shared::looks_empty`; mutant 96).

#[cfg(not(loom))]
pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker as Local};

#[cfg(loom)]
pub(crate) use imp::{Injector, Local, Steal, Stealer};

#[cfg(loom)]
mod imp {
    use std::collections::VecDeque;
    use std::ops::{Deref, DerefMut};

    use crate::loom::{fence, Arc, AtomicUsize, Mutex, MutexGuard, Ordering};

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

    /// Takes the oldest `count(len)` tasks of the queue that `source` holds locked, releases
    /// it, returns the first of them, and then pushes the others onto `dest`: between the two
    /// locks they are in neither queue.
    fn take_batch<T>(
        mut source: impl DerefMut<Target = VecDeque<T>>,
        dest: &Local<T>,
        count: impl FnOnce(usize) -> usize,
    ) -> Steal<T> {
        let n = count(source.len());
        let mut batch = source.drain(..n).collect::<VecDeque<T>>();
        drop(source);
        let Some(first) = batch.pop_front() else {
            return Steal::Empty;
        };
        if !batch.is_empty() {
            dest.0.lock().extend(batch);
        }
        Steal::Success(first)
    }

    pub(crate) struct Injector<T>(Shared<T>);

    impl<T> Injector<T> {
        pub(crate) fn new() -> Self {
            Injector(Shared::new())
        }
        pub(crate) fn push(&self, task: T) {
            self.0.lock().push_back(task);
        }
        pub(crate) fn steal(&self) -> Steal<T> {
            if self.0.looks_empty() {
                return Steal::Empty;
            }
            match self.0.lock().pop_front() {
                Some(t) => Steal::Success(t),
                None => Steal::Empty,
            }
        }
        pub(crate) fn steal_batch_and_pop(&self, dest: &Local<T>) -> Steal<T> {
            self.steal_batch_with_limit_and_pop(dest, 33)
        }
        pub(crate) fn steal_batch_with_limit_and_pop(
            &self,
            dest: &Local<T>,
            limit: usize,
        ) -> Steal<T> {
            if self.0.looks_empty() {
                return Steal::Empty;
            }
            take_batch(self.0.lock(), dest, |len| len.div_ceil(2).min(limit))
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
        pub(crate) fn len(&self) -> usize {
            // Without the lock, as crossbeam's reads the queue's indices.
            self.0.len.load(Ordering::Acquire)
        }
    }

    /// A queue: its tasks under a lock, and their number, read without it.
    pub(crate) struct Shared<T> {
        tasks: Mutex<VecDeque<T>>,
        len: AtomicUsize,
    }

    impl<T> Shared<T> {
        fn new() -> Shared<T> {
            Shared {
                tasks: Mutex::new(VecDeque::new()),
                len: AtomicUsize::new(0),
            }
        }

        fn lock(&self) -> Locked<'_, T> {
            let tasks = self.tasks.lock();
            let before = tasks.len();
            Locked {
                tasks,
                len: &self.len,
                before,
            }
        }

        fn is_empty(&self) -> bool {
            // Acquire pairs with the Release store of the change it reads.
            self.len.load(Ordering::Acquire) == 0
        }

        /// How an injector's steal starts, as crossbeam's does: a `SeqCst` fence, then a look
        /// at the length without the lock; it takes nothing when this is `true`. Were it to
        /// look under the lock, every steal would see every push that loom's schedule put
        /// before it, which hid from the models a missing fence after a push (mutant 96 in
        /// `loom-tests/mutants`). Crossbeam skips the fence when it knows the queue spans two
        /// of its blocks, and so is not empty; the stand-in always fences.
        fn looks_empty(&self) -> bool {
            fence(Ordering::SeqCst);
            // Relaxed, as crossbeam reads the tail index: the lock, taken when it is not
            // zero, orders the tasks.
            self.len.load(Ordering::Relaxed) == 0
        }
    }

    /// A queue, locked; as it is released, it stores the queue's length if that changed.
    pub(crate) struct Locked<'a, T> {
        tasks: MutexGuard<'a, VecDeque<T>>,
        len: &'a AtomicUsize,
        /// The length when the lock was taken.
        before: usize,
    }

    impl<T> Deref for Locked<'_, T> {
        type Target = VecDeque<T>;

        fn deref(&self) -> &VecDeque<T> {
            &self.tasks
        }
    }

    impl<T> DerefMut for Locked<'_, T> {
        fn deref_mut(&mut self) -> &mut VecDeque<T> {
            &mut self.tasks
        }
    }

    impl<T> Drop for Locked<'_, T> {
        fn drop(&mut self) {
            // Still under the lock (the guard drops after this), so the stores come in the
            // order of the changes. Release publishes the change to a look that reads it, as
            // crossbeam's push stores the deque's back index after writing the task. Only a
            // change is stored: every store is one more value a look may read, and loom tries
            // each, so storing at every lock grew the two-worker models by a third.
            if self.tasks.len() != self.before {
                self.len.store(self.tasks.len(), Ordering::Release);
            }
        }
    }

    /// A queue, and whether its owner pops the newest task (stealers take the oldest).
    pub(crate) struct Local<T>(Arc<Shared<T>>, bool);

    impl<T> Local<T> {
        pub(crate) fn new_fifo() -> Self {
            Local(Arc::new(Shared::new()), false)
        }
        pub(crate) fn new_lifo() -> Self {
            Local(Arc::new(Shared::new()), true)
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
            self.0.is_empty()
        }
        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }
    }

    pub(crate) struct Stealer<T>(Arc<Shared<T>>);

    impl<T> Stealer<T> {
        pub(crate) fn steal_batch_and_pop(&self, dest: &Local<T>) -> Steal<T> {
            take_batch(self.0.lock(), dest, |len| len.div_ceil(2).min(32))
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }
}
