//! The blocking pool's own tests: shutdown, idle threads and their keep-alive, a refused
//! thread start, and `spawn_now` past the cap.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A job that runs a closure, or on cancel its other one.
struct Run {
    run: Box<dyn FnOnce() + Send>,
    cancel: Box<dyn FnOnce() + Send>,
}

impl Job for Run {
    fn run(self) {
        (self.run)()
    }

    fn cancel(self) {
        (self.cancel)()
    }
}

/// A job that runs `f` and must not be cancelled.
fn run(f: impl FnOnce() + Send + 'static) -> Run {
    Run {
        run: Box::new(f),
        cancel: Box::new(|| panic!("a job was cancelled")),
    }
}

/// A start the system refuses.
fn refuse(
    _builder: thread::Builder,
    _pool: Arc<BlockingPool<Run>>,
    _runtime: Option<Handle>,
) -> io::Result<thread::JoinHandle<()>> {
    Err(io::Error::other("refused for the test"))
}

/// Waits (at most 10 s, for a loaded machine) until the pool has `count` threads.
fn wait_for_threads(pool: &BlockingPool<Run>, count: usize) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while pool.threads() != count {
        assert!(
            Instant::now() < give_up,
            "the pool has {} threads, not {count}",
            pool.threads()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn shutdown_runs_the_queued_jobs_and_waits_for_them_and_the_running_one() {
    let pool = Arc::new(BlockingPool::new(1, Duration::MAX));
    let (started, running) = std::sync::mpsc::channel();
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let ran = Arc::new(AtomicUsize::new(0));
    let first = ran.clone();
    BlockingPool::spawn(
        &pool,
        run(move || {
            started.send(()).unwrap();
            gate.recv().unwrap();
            first.fetch_add(1, Ordering::SeqCst);
        }),
    );
    // The cap: the second job queues behind the first.
    let second = ran.clone();
    BlockingPool::spawn(
        &pool,
        run(move || {
            second.fetch_add(10, Ordering::SeqCst);
        }),
    );
    running.recv().unwrap();
    pool.shutdown();
    // The busy thread runs it once its job returns; until then the shutdown's wait times
    // out.
    assert!(!pool.wait_for_exit(Some(Instant::now() + Duration::from_millis(10))));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    release.send(()).unwrap();
    assert!(pool.wait_for_exit(None));
    assert_eq!(ran.load(Ordering::SeqCst), 11);
    assert_eq!(pool.threads(), 0);
    // A job spawned after the shutdown is cancelled at once.
    let cancelled = Arc::new(AtomicUsize::new(0));
    let third = cancelled.clone();
    BlockingPool::spawn(
        &pool,
        Run {
            run: Box::new(|| panic!("a job spawned after the shutdown ran")),
            cancel: Box::new(move || {
                third.fetch_add(1, Ordering::SeqCst);
            }),
        },
    );
    assert_eq!(cancelled.load(Ordering::SeqCst), 1);
}

#[test]
fn idle_threads_exit_after_the_keep_alive() {
    let pool = Arc::new(BlockingPool::new(4, Duration::from_millis(5)));
    BlockingPool::spawn(&pool, run(|| ()));
    wait_for_threads(&pool, 0);
}

#[test]
fn an_idle_thread_takes_the_next_job_instead_of_a_new_thread() {
    let pool = Arc::new(BlockingPool::new(4, Duration::MAX));
    let (done, finished) = std::sync::mpsc::channel();
    for i in 0..20 {
        let done = done.clone();
        // Queued jobs and jobs given now alike.
        if i % 2 == 0 {
            BlockingPool::spawn(&pool, run(move || done.send(()).unwrap()));
        } else {
            BlockingPool::spawn_now(&pool, Box::new(move || done.send(()).unwrap()), None)
                .expect("the idle thread");
        }
        finished.recv().unwrap();
        // Once the thread waits again it is the one the next job goes to.
        wait_for_idle(&pool);
    }
    assert_eq!(pool.threads(), 1);
    pool.shutdown();
    assert!(pool.wait_for_exit(None));
}

#[test]
fn a_refused_start_with_no_thread_left_cancels_the_queue_and_panics() {
    let pool = Arc::new(BlockingPool::new(4, Duration::MAX));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let job = {
        let cancelled = cancelled.clone();
        Run {
            run: Box::new(|| panic!("a job ran without a thread")),
            cancel: Box::new(move || {
                cancelled.fetch_add(1, Ordering::SeqCst);
            }),
        }
    };
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        BlockingPool::spawn_with(&pool, job, refuse)
    }))
    .expect_err("no thread can run the job");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains("refused for the test"), "{message}");
    assert_eq!(cancelled.load(Ordering::SeqCst), 1);
    assert_eq!(pool.threads(), 0);
    assert!(pool.state.lock().queue.is_empty());
    // The pool still works once the system starts threads again.
    let (done, finished) = std::sync::mpsc::channel();
    BlockingPool::spawn(&pool, run(move || done.send(()).unwrap()));
    finished.recv().unwrap();
    pool.shutdown();
    assert!(pool.wait_for_exit(None));
}

#[test]
fn a_refused_start_with_only_a_now_job_running_cancels_the_queue_and_panics() {
    // The only thread runs a job given now (a handed-off worker's loop, which returns only
    // at shutdown): it would take the queue only after that.
    let pool = Arc::new(BlockingPool::new(4, Duration::MAX));
    let (release, gate) = std::sync::mpsc::channel::<()>();
    BlockingPool::spawn_now(&pool, Box::new(move || gate.recv().unwrap()), None)
        .expect("a thread for the job");
    wait_for_threads(&pool, 1);
    let cancelled = Arc::new(AtomicUsize::new(0));
    let job = {
        let cancelled = cancelled.clone();
        Run {
            run: Box::new(|| panic!("a job ran behind the job given now")),
            cancel: Box::new(move || {
                cancelled.fetch_add(1, Ordering::SeqCst);
            }),
        }
    };
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        BlockingPool::spawn_with(&pool, job, refuse)
    }))
    .expect_err("no thread that takes queued jobs is left");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains("refused for the test"), "{message}");
    assert_eq!(cancelled.load(Ordering::SeqCst), 1);
    release.send(()).unwrap();
    pool.shutdown();
    assert!(pool.wait_for_exit(None));
}

/// A pool of at most `max_threads` threads, one of them busy with a job that waits for
/// the returned `release`, then sends `busy` to `done`, whose receiver is `finished`.
fn with_a_busy_thread<T: Send + 'static>(max_threads: usize, busy: T) -> BusyPool<T> {
    let pool = Arc::new(BlockingPool::new(max_threads, Duration::MAX));
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let (done, finished) = std::sync::mpsc::channel();
    let first = done.clone();
    BlockingPool::spawn(
        &pool,
        run(move || {
            gate.recv().unwrap();
            first.send(busy).unwrap();
        }),
    );
    BusyPool {
        pool,
        release,
        done,
        finished,
    }
}

struct BusyPool<T> {
    pool: Arc<BlockingPool<Run>>,
    release: std::sync::mpsc::Sender<()>,
    done: std::sync::mpsc::Sender<T>,
    finished: std::sync::mpsc::Receiver<T>,
}

#[test]
fn a_refused_start_with_a_busy_thread_queues_the_job_for_it() {
    let BusyPool {
        pool,
        release,
        done,
        finished,
    } = with_a_busy_thread(4, 1);
    // The only thread is busy, so this job asks for a second one, which is refused.
    BlockingPool::spawn_with(&pool, run(move || done.send(2).unwrap()), refuse);
    assert_eq!(pool.threads(), 1);
    release.send(()).unwrap();
    assert_eq!(finished.recv().unwrap(), 1);
    assert_eq!(finished.recv().unwrap(), 2);
    pool.shutdown();
    assert!(pool.wait_for_exit(None));
}

#[test]
fn spawn_now_runs_past_the_cap_while_a_job_waits_behind_it() {
    let BusyPool {
        pool,
        release,
        done,
        finished,
    } = with_a_busy_thread(1, "busy");
    // Behind the cap: waits for the busy thread.
    let queued = done.clone();
    BlockingPool::spawn(&pool, run(move || queued.send("queued").unwrap()));
    let now = done.clone();
    BlockingPool::spawn_now(&pool, Box::new(move || now.send("now").unwrap()), None)
        .expect("a thread for the job");
    assert_eq!(finished.recv().unwrap(), "now");
    // Its thread counts against the cap again, which the busy thread fills: it leaves
    // rather than run the queued job beside the busy one.
    wait_for_threads(&pool, 1);
    assert_eq!(pool.state.lock().exempt, 0);
    release.send(()).unwrap();
    assert_eq!(finished.recv().unwrap(), "busy");
    assert_eq!(finished.recv().unwrap(), "queued");
    pool.shutdown();
    assert!(pool.wait_for_exit(None));
}

#[test]
fn spawn_now_refused_or_after_shutdown_drops_the_job_and_counts_nothing() {
    let pool = Arc::new(BlockingPool::<Run>::new(1, Duration::MAX));
    let ran = Arc::new(AtomicUsize::new(0));
    let job = |ran: &Arc<AtomicUsize>| -> NowJob {
        let ran = ran.clone();
        Box::new(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })
    };
    let refused = BlockingPool::spawn_now_with(&pool, job(&ran), |_, _, _| {
        Err(io::Error::other("refused for the test"))
    });
    assert!(refused.is_err());
    {
        let state = pool.state.lock();
        assert_eq!((state.threads, state.exempt), (0, 0));
    }
    pool.shutdown();
    assert!(BlockingPool::spawn_now(&pool, job(&ran), None).is_err());
    assert!(pool.wait_for_exit(None));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

/// Waits (at most 10 s) until every thread of the pool is idle.
fn wait_for_idle(pool: &BlockingPool<Run>) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let state = pool.state.lock();
        if state.idle == state.threads && state.notified == 0 {
            return;
        }
        drop(state);
        assert!(Instant::now() < give_up, "the pool never went idle");
        std::thread::sleep(Duration::from_millis(1));
    }
}
