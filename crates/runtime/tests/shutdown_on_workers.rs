//! What a shutdown leaves to the workers, as tokio's does: a task still in its poll when
//! `shutdown_timeout` gives up finds its runtime's timers pending (not a "shut down" panic)
//! and is cancelled once the poll returns, while a timer of that runtime polled by another
//! runtime's task still panics; and the destructors the workers run as they cancel the tasks
//! run on worker threads, where `block_on` panics, so one that would wait for a task the
//! workers cancel later cannot hang the drop.

mod support;

use std::future::{pending, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use escapement::time::sleep;
use escapement::{Handle, JoinHandle};

use support::{running, wait_until, within};

/// A bound that only catches hangs.
const LIMIT: Duration = Duration::from_secs(60);

/// Pending forever; its destructor calls `block_on` on the future in `target` (if one was
/// put there), and counts whether that panicked and whether it ran on a worker thread.
struct BlocksOnWhenDropped {
    target: Arc<Mutex<Option<JoinHandle<()>>>>,
    panicked: Arc<AtomicUsize>,
    on_a_worker: Arc<AtomicUsize>,
}

impl Future for BlocksOnWhenDropped {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

impl Drop for BlocksOnWhenDropped {
    fn drop(&mut self) {
        let thread = std::thread::current();
        if thread
            .name()
            .is_some_and(|name| name.starts_with("escapement-worker"))
        {
            self.on_a_worker.fetch_add(1, Ordering::SeqCst);
        }
        let target = self.target.lock().unwrap().take();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let handle = Handle::current();
            match target {
                Some(task) => drop(handle.block_on(task)),
                None => handle.block_on(async {}),
            }
        }));
        if outcome.is_err() {
            self.panicked.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn block_on_in_a_destructor_the_workers_run_at_shutdown_panics() {
    within(LIMIT, || {
        let rt = running(1);
        let panicked = Arc::new(AtomicUsize::new(0));
        let on_a_worker = Arc::new(AtomicUsize::new(0));
        let task = rt.spawn(BlocksOnWhenDropped {
            target: Arc::default(),
            panicked: panicked.clone(),
            on_a_worker: on_a_worker.clone(),
        });
        // Let the worker poll it once, so it waits in the owned list.
        rt.block_on(escapement::task::yield_now());
        drop(rt);
        assert_eq!(
            on_a_worker.load(Ordering::SeqCst),
            1,
            "the worker cancelled the task"
        );
        assert_eq!(
            panicked.load(Ordering::SeqCst),
            1,
            "block_on on the worker panicked"
        );
        assert!(futures::executor::block_on(task)
            .expect_err("cancelled")
            .is_cancelled());
    });
}

#[test]
fn a_destructor_waiting_for_a_task_cancelled_later_does_not_hang_the_drop() {
    within(LIMIT, || {
        let rt = running(1);
        let panicked = Arc::new(AtomicUsize::new(0));
        let on_a_worker = Arc::new(AtomicUsize::new(0));
        // Each waiter's destructor waits for a pending task spawned right after it; the
        // workers cancel the tasks shard by shard, so most waiters go before their targets.
        const PAIRS: usize = 8;
        for _ in 0..PAIRS {
            let target = Arc::new(Mutex::new(None));
            drop(rt.spawn(BlocksOnWhenDropped {
                target: target.clone(),
                panicked: panicked.clone(),
                on_a_worker: on_a_worker.clone(),
            }));
            *target.lock().unwrap() = Some(rt.spawn(pending::<()>()));
        }
        rt.block_on(escapement::task::yield_now());
        drop(rt);
        assert_eq!(on_a_worker.load(Ordering::SeqCst), PAIRS);
        assert_eq!(panicked.load(Ordering::SeqCst), PAIRS);
    });
}

/// Spawns on `rt` a task that spins in its first poll until released, then awaits a 5 ms
/// sleep of `rt`; returns its handle and its release, once the task spins.
fn spawn_stuck_then_sleeping(rt: &escapement::Runtime) -> (JoinHandle<()>, Arc<AtomicBool>) {
    let spinning = Arc::new(AtomicBool::new(false));
    let release = Arc::new(AtomicBool::new(false));
    let task = {
        let (spinning, release) = (spinning.clone(), release.clone());
        rt.spawn(async move {
            spinning.store(true, Ordering::SeqCst);
            while !release.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            sleep(Duration::from_millis(5)).await;
        })
    };
    wait_until("the task to spin", || spinning.load(Ordering::SeqCst));
    (task, release)
}

#[test]
fn a_task_whose_poll_outlives_shutdown_timeout_finds_its_timers_pending_and_is_cancelled() {
    within(LIMIT, || {
        for workers in [1, 2] {
            let rt = running(workers);
            let (task, release) = spawn_stuck_then_sleeping(&rt);
            rt.shutdown_timeout(Duration::from_millis(50));
            release.store(true, Ordering::SeqCst);
            wait_until("the task to finish", || task.is_finished());
            let error = futures::executor::block_on(task).expect_err("cancelled");
            assert!(error.is_cancelled(), "{workers} workers: {error:?}");
        }
    });
}

#[test]
fn a_timer_of_a_shut_down_runtime_polled_in_another_runtimes_task_still_panics() {
    within(LIMIT, || {
        let gone = running(1);
        let timer = {
            let _context = gone.enter();
            sleep(Duration::from_secs(60))
        };
        drop(gone);
        let other = running(1);
        let error = other
            .block_on(other.spawn(timer))
            .expect_err("the poll panicked");
        assert!(error.is_panic(), "{error:?}");
    });
}
