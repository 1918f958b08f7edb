//! Model 14: the `spawn_blocking` pool. Two threads hand it a job each while its threads
//! start, go idle and are woken.
//!
//! - Before any shutdown, both jobs run: whether a job went to a new thread, to an idle one,
//!   or waited behind the cap, some thread takes it (a lost wake-up leaves the model
//!   blocked, which loom reports).
//! - A shutdown after both spawns returned runs both jobs (the pool's threads empty the queue
//!   before they exit), and every pool thread exits.
//! - A job spawned as the pool shuts down either runs or is cancelled, exactly once, and the
//!   shutdown's wait returns either way.
//! - A job given to run at once (`spawn_now`, as `block_in_place` hands a worker over) runs
//!   past the cap while the only thread the cap allows waits for it, and goes to the thread
//!   that ran a first job whether that thread is still running it, about to wait, or waiting.
//! - The shutdown's wait returns only once every pool thread has ended, also one that has
//!   left the count of threads and is still exiting (its stop callback and the runtime's
//!   handle are dropped outside the lock). A shutdown on one of the pool's own threads waits
//!   for the others, and the last of them to exit wakes it.
//! - A job given now stays outside the cap for as long as it runs, so a job queued meanwhile
//!   gets a thread of its own; and a second job given now does not count on the thread woken
//!   for the first.
#![cfg(loom)]

use escapement::loom_api::{BlockingPool, JobCount};
use loom::thread;

/// Two jobs spawned from two threads before the pool shuts down; `wait` says whether the
/// model waits for both to run before the shutdown. Either way both run, exactly once: the
/// pool's threads run what was queued before the shutdown.
fn two_spawns(max_threads: usize, wait: bool) {
    loom::model(move || {
        let pool = BlockingPool::new(max_threads);
        let count = JobCount::new();
        let spawner = {
            let (pool, count) = (pool.clone(), count.clone());
            thread::spawn(move || pool.spawn(count))
        };
        pool.spawn(count.clone());
        spawner.join().unwrap();
        if wait {
            count.wait_for(2);
        }
        pool.shutdown_and_wait();
        assert_eq!(
            (count.get(), count.cancelled()),
            (2, 0),
            "every job queued before the shutdown runs, exactly once"
        );
    });
}

#[test]
fn one_thread_runs_both_jobs_in_turn() {
    two_spawns(1, true);
}

#[test]
fn two_threads_share_the_jobs_without_losing_one() {
    two_spawns(2, true);
}

#[test]
fn a_shutdown_behind_the_jobs_runs_each_once() {
    two_spawns(1, false);
}

#[test]
fn a_spawn_racing_the_shutdown_runs_or_is_cancelled_once() {
    loom::model(|| {
        let pool = BlockingPool::new(1);
        let count = JobCount::new();
        let spawner = {
            let (pool, count) = (pool.clone(), count.clone());
            thread::spawn(move || pool.spawn(count))
        };
        pool.shutdown_and_wait();
        spawner.join().unwrap();
        assert_eq!(
            count.get() + count.cancelled(),
            1,
            "the job ran or was cancelled, once"
        );
    });
}

#[test]
fn a_job_given_now_runs_past_the_cap_beside_a_job_that_waits_for_it() {
    loom::model(|| {
        let pool = BlockingPool::new(1);
        let count = JobCount::new();
        // Holds the only thread the cap allows until the job below has run.
        pool.spawn_after(count.clone(), 1);
        assert!(pool.spawn_now(count.clone()));
        count.wait_for(2);
        pool.shutdown_and_wait();
        assert_eq!(count.get(), 2);
    });
}

#[test]
fn a_job_given_now_wakes_the_thread_going_idle_or_starts_one() {
    loom::model(|| {
        let pool = BlockingPool::new(1);
        let count = JobCount::new();
        pool.spawn(count.clone());
        count.wait_for(1);
        // The thread that ran the first job is running, about to wait, or waiting.
        assert!(pool.spawn_now(count.clone()));
        count.wait_for(2);
        pool.shutdown_and_wait();
        assert_eq!(count.get(), 2);
    });
}

/// A thread running a job given now (a worker handed over by `block_in_place`, whose loop
/// runs on) stays outside the cap for as long as the job runs, not only until it starts it:
/// a job queued meanwhile gets a thread of its own under a cap of one, rather than waiting
/// behind the worker's loop (which here waits for it: loom reports the deadlock).
#[test]
fn a_job_queued_while_a_job_given_now_runs_gets_a_thread_of_its_own() {
    loom::model(|| {
        let pool = BlockingPool::new(1);
        let count = JobCount::new();
        assert!(pool.spawn_now_after(count.clone(), 1));
        pool.spawn(count.clone());
        count.wait_for(2);
        pool.shutdown_and_wait();
        assert_eq!(count.get(), 2);
    });
}

/// Two jobs given now (two workers handed over) while one thread of the pool goes idle: the
/// first may go to that thread, the second then to a new one, not behind the first on the
/// thread already woken for it (the first waits for the second, as a worker's loop may wait
/// for the other worker's tasks: loom reports the deadlock).
#[test]
fn a_second_job_given_now_does_not_count_on_a_thread_woken_for_the_first() {
    loom::model(|| {
        let pool = BlockingPool::new(1);
        let count = JobCount::new();
        pool.spawn(count.clone());
        count.wait_for(1);
        assert!(pool.spawn_now_after(count.clone(), 2));
        assert!(pool.spawn_now(count.clone()));
        count.wait_for(3);
        pool.shutdown_and_wait();
        assert_eq!(count.get(), 3);
    });
}

#[test]
fn the_shutdown_waits_for_a_thread_still_exiting() {
    loom::model(|| {
        let pool = BlockingPool::new(1);
        let count = JobCount::new();
        pool.spawn(count.clone());
        pool.shutdown_and_wait();
        assert_eq!(count.get(), 1);
        assert!(
            pool.no_thread_holds_it(),
            "a pool thread outlived the shutdown's wait"
        );
    });
}

/// A shutdown on one of the pool's threads (the runtime dropped in a `block_in_place`
/// closure, on the thread the worker was handed to) waits for the pool's other threads only:
/// the last of them to exit must wake it, though the count it leaves is one, not zero.
#[test]
fn a_shutdown_on_a_pool_thread_is_woken_by_the_last_other_thread() {
    loom::model(|| {
        let pool = BlockingPool::new(1);
        let count = JobCount::new();
        pool.spawn(count.clone());
        assert!(pool.spawn_now_shutting_down(count.clone()));
        count.wait_for(2);
        pool.shutdown_and_wait();
        assert!(
            pool.no_thread_holds_it(),
            "a pool thread outlived the shutdown's wait"
        );
    });
}
