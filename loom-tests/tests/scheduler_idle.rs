//! Model 8a: the scheduler's idle protocol. A worker finds no work and goes to sleep while
//! another thread pushes work and notifies. The worker must not sleep through the work: it
//! announces itself as sleeping, issues a `SeqCst` fence, then checks the queue again; the
//! notifier pushes, issues a `SeqCst` fence, then reads the sleepers. One of the two reads
//! sees the other's write.
//!
//! The queue is an atomic flag written and read with plain stores and loads, standing for the
//! lock-free deques the runtime uses outside loom (a mutex queue would order the two threads
//! by itself and hide a missing fence). A stand-in's short park that an unpark races with
//! reports that unpark, so the stand-in does not sleep again through it; a park consumes
//! every unpark's token; and the last worker to stop searching wakes a sleeper for the work
//! the notifiers left to the searchers.
#![cfg(loom)]

use escapement::loom_api::{Driver, Idle, Parker};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

#[test]
fn work_pushed_while_a_worker_goes_to_sleep_is_not_lost() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let idle = Arc::new(Idle::new(2));
        let work = Arc::new(AtomicBool::new(false));
        let (parker, unparker) = Parker::new(&driver);

        let worker = {
            let (idle, work) = (idle.clone(), work.clone());
            thread::spawn(move || {
                // The worker's loop, cut down to waiting for one piece of work.
                while !work.load(Ordering::Acquire) {
                    idle.transition_to_sleeping(1, false);
                    if work.load(Ordering::Acquire) {
                        idle.transition_from_sleeping(1);
                        break;
                    }
                    parker.park();
                    idle.transition_from_sleeping(1);
                }
            })
        };

        work.store(true, Ordering::Release);
        if let Some(sleeper) = idle.worker_to_notify() {
            assert_eq!(sleeper, 1);
            unparker.unpark();
        }
        worker.join().unwrap();
    });
}

/// A stand-in that woke from a short park with nothing to do sleeps again without going back
/// to its caller; so its park must say whether an unpark came, even one that came after the
/// timeout ended the wait and before the park was over, whose token the park then takes.
/// Told "timed out" then, the thread would sleep through the unpark for good.
#[test]
fn an_unpark_racing_a_park_that_timed_out_is_not_lost() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let (parker, unparker) = Parker::new(&driver);
        let unparking = thread::spawn(move || unparker.unpark());
        if !parker.park_briefly() {
            // Nothing came: the stand-in's next park, with no timeout.
            parker.park();
        }
        unparking.join().unwrap();
    });
}

/// Two threads each make a piece of work and unpark the same thread, which parks until it sees
/// both. The second token may land while the park consumes the first: consuming it must read
/// the token it clears (and acquire what its unparker did), or the parked thread misses the
/// second piece of work and sleeps through it.
#[test]
fn two_unparks_racing_a_park_lose_no_work() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let (parker, unparker) = Parker::new(&driver);
        let work = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let makers: Vec<_> = (0..2)
            .map(|i| {
                let (work, unparker) = (work.clone(), unparker.clone());
                thread::spawn(move || {
                    work[i].store(true, Ordering::Release);
                    unparker.unpark();
                })
            })
            .collect();
        while !(work[0].load(Ordering::Acquire) && work[1].load(Ordering::Acquire)) {
            parker.park();
        }
        for maker in makers {
            maker.join().unwrap();
        }
    });
}

/// Takes one task from `queue` (its count of tasks), if there is one.
fn take(queue: &Mutex<usize>) -> bool {
    let mut queued = queue.lock().unwrap();
    let found = *queued > 0;
    if found {
        *queued -= 1;
    }
    found
}

/// Worker 0 searches while a thread pushes two tasks: each push finds a searcher and wakes no
/// one. Worker 0 takes one task and keeps its thread (a long poll); as the last searcher to
/// stop, it must wake the sleeping worker 1 for the other, or that task waits while a worker
/// sleeps. (The queue is behind a mutex: this protocol's fences are the first model's.)
#[test]
fn the_last_searcher_to_find_work_wakes_a_sleeper_for_the_rest() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let idle = Arc::new(Idle::new(2));
        let queue = Arc::new(Mutex::new(0));
        let (parker, unparker) = Parker::new(&driver);
        assert!(idle.try_transition_to_searching(2));

        let worker1 = {
            let (idle, queue) = (idle.clone(), queue.clone());
            thread::spawn(move || {
                // The worker's loop, cut down to taking one task.
                let mut searching = false;
                loop {
                    if take(&queue) {
                        break;
                    }
                    idle.transition_to_sleeping(1, searching);
                    if take(&queue) {
                        searching = !idle.transition_from_sleeping(1);
                        break;
                    }
                    parker.park();
                    searching = !idle.transition_from_sleeping(1);
                }
                if searching {
                    assert_eq!(idle.end_search(), None, "no one else sleeps");
                }
            })
        };
        let pusher = {
            let (idle, queue, unparker) = (idle.clone(), queue.clone(), unparker.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    *queue.lock().unwrap() += 1;
                    if let Some(sleeper) = idle.worker_to_notify() {
                        assert_eq!(sleeper, 1);
                        unparker.unpark();
                    }
                }
            })
        };

        // Worker 0: searches until it finds a task, then runs it and never looks again.
        while !take(&queue) {
            thread::yield_now();
        }
        if let Some(sleeper) = idle.end_search() {
            assert_eq!(sleeper, 1);
            unparker.unpark();
        }
        pusher.join().unwrap();
        worker1.join().unwrap();
    });
}
