//! The `spawn_blocking` pool, for the loom models: jobs that count themselves, and a count the
//! models wait on.

use std::time::Duration;

use crate::loom::{Arc, Mutex};

/// The `spawn_blocking` thread pool, running jobs that count themselves.
pub struct BlockingPool {
    inner: Arc<crate::task::BlockingPool<CountJob>>,
}

/// A count that jobs raise and a model waits on, with the jobs cancelled beside it.
pub struct JobCount {
    count: Mutex<usize>,
    cancelled: Mutex<usize>,
    changed: crate::loom::Condvar,
}

impl JobCount {
    pub fn new() -> Arc<JobCount> {
        Arc::new(JobCount {
            count: Mutex::new(0),
            cancelled: Mutex::new(0),
            changed: crate::loom::Condvar::new(),
        })
    }

    /// The jobs run so far.
    pub fn get(&self) -> usize {
        *self.count.lock()
    }

    /// The jobs cancelled so far.
    pub fn cancelled(&self) -> usize {
        *self.cancelled.lock()
    }

    /// Blocks until `count` jobs have run (loom reports a deadlock if they never do).
    pub fn wait_for(&self, count: usize) {
        let mut ran = self.count.lock();
        while *ran < count {
            ran = self.changed.wait(ran);
        }
    }
}

impl JobCount {
    fn add_one(&self) {
        *self.count.lock() += 1;
        self.changed.notify_all();
    }
}

/// A job that waits until a [`JobCount`] reaches `after`, then adds one to it.
struct CountJob {
    count: Arc<JobCount>,
    after: usize,
}

impl crate::task::Job for CountJob {
    fn run(self) {
        self.count.wait_for(self.after);
        self.count.add_one();
    }

    /// Counted apart; nothing waits on it but the model, which checks it.
    fn cancel(self) {
        *self.count.cancelled.lock() += 1;
    }
}

impl BlockingPool {
    /// A pool of at most `max_threads` threads that keep idle ones until it shuts down (loom
    /// has no time).
    pub fn new(max_threads: usize) -> BlockingPool {
        BlockingPool {
            inner: Arc::new(crate::task::BlockingPool::new(max_threads, Duration::MAX)),
        }
    }

    /// Queues a job that adds one to `count`.
    pub fn spawn(&self, count: Arc<JobCount>) {
        self.spawn_after(count, 0);
    }

    /// Queues a job that waits until `count` reaches `after`, then adds one to it.
    pub fn spawn_after(&self, count: Arc<JobCount>, after: usize) {
        crate::task::BlockingPool::spawn(&self.inner, CountJob { count, after });
    }

    /// Runs a job that adds one to `count` at once, on an idle thread or a new one, as
    /// `block_in_place` hands a worker over; returns whether the pool took it.
    pub fn spawn_now(&self, count: Arc<JobCount>) -> bool {
        crate::task::BlockingPool::spawn_now(&self.inner, Box::new(move || count.add_one()), None)
            .is_ok()
    }

    /// Runs at once, as [`spawn_now`](Self::spawn_now) does, a job that waits until `count`
    /// reaches `after`, then adds one to it: a worker handed over by `block_in_place`, whose
    /// loop runs on while the pool runs other jobs.
    pub fn spawn_now_after(&self, count: Arc<JobCount>, after: usize) -> bool {
        let job = move || {
            count.wait_for(after);
            count.add_one();
        };
        crate::task::BlockingPool::spawn_now(&self.inner, Box::new(job), None).is_ok()
    }

    /// Runs at once, as [`spawn_now`](Self::spawn_now) does, a job that shuts the pool down
    /// from its own thread and waits for the pool's other threads to exit, as a runtime dropped
    /// in a `block_in_place` closure does; then it adds one to `count`. Returns whether the
    /// pool took it.
    pub fn spawn_now_shutting_down(&self, count: Arc<JobCount>) -> bool {
        let pool = self.inner.clone();
        let job = move || {
            pool.shutdown();
            pool.wait_for_exit(None);
            count.add_one();
        };
        crate::task::BlockingPool::spawn_now(&self.inner, Box::new(job), None).is_ok()
    }

    /// Whether this handle and its clones are all that hold the pool: every pool thread,
    /// which holds it until it ends, has ended.
    pub fn no_thread_holds_it(&self) -> bool {
        Arc::strong_count(&self.inner) == 1
    }

    /// Shuts the pool down and waits until its threads have exited.
    pub fn shutdown_and_wait(&self) {
        self.inner.shutdown();
        self.inner.wait_for_exit(None);
    }
}

impl Clone for BlockingPool {
    fn clone(&self) -> BlockingPool {
        BlockingPool {
            inner: self.inner.clone(),
        }
    }
}
