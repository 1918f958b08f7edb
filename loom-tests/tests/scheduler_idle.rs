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

use escapement::loom_api::{Driver, Idle, Parker, Unparker, WorkSeen};
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
                    let park = idle.announce_sleep(1, false, 2, || {
                        if work.load(Ordering::Acquire) {
                            WorkSeen::Its
                        } else {
                            WorkSeen::Nothing
                        }
                    });
                    if !park {
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

/// Ends a search, as a worker that found a task does; unparks the sleeper that the last
/// searcher must wake, which can only be `sleeper`.
fn end_search(idle: &Idle, sleeper: usize, unparker: &Unparker) {
    if let Some(woken) = idle.end_search() {
        assert_eq!(woken, sleeper);
        unparker.unpark();
    }
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
                    // The look takes the task it sees.
                    let mut took = false;
                    idle.announce_sleep(1, searching, 2, || {
                        took = take(&queue);
                        if took {
                            WorkSeen::Its
                        } else {
                            WorkSeen::Nothing
                        }
                    });
                    if took {
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
        end_search(&idle, 1, &unparker);
        pusher.join().unwrap();
        worker1.join().unwrap();
    });
}

/// Worker 0 searches, and two tasks wait in its own queue (timers it fired there, or a batch
/// it took), so worker 1, refused a search and going to sleep, sees work only in the other's
/// queue while half the workers (one of two) search: it leaves the work to the searcher and
/// parks (`idle.rs`, "Leaving work to the searchers"). Worker 0 takes one task and keeps its
/// thread (a long poll). Whichever of the two moves first, worker 1 must end up with the
/// other task:
/// - worker 0 stops searching after worker 1 announced its sleep: as the last searcher, it
///   wakes worker 1 (counted as searching) to look;
/// - worker 0 stops searching before: worker 1, which reads the count after its
///   announcement, sees no searcher and stays awake to take the task. Read before (mutant
///   82) or not at all (mutant 81), the count leaves the task to no one, and loom reports the
///   deadlock.
#[test]
fn a_worker_that_leaves_work_to_a_searcher_is_woken_for_it() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let idle = Arc::new(Idle::new(2));
        // Worker 0's queue, which worker 1 takes from only by searching.
        let queue = Arc::new(Mutex::new(2));
        let (parker, unparker) = Parker::new(&driver);
        assert!(idle.try_transition_to_searching(2));

        let worker1 = {
            let (idle, queue) = (idle.clone(), queue.clone());
            thread::spawn(move || {
                // The worker's loop, cut down to stealing one task: its own queues and the
                // injector are empty.
                let mut searching = false;
                loop {
                    searching = searching || idle.try_transition_to_searching(2);
                    if searching && take(&queue) {
                        break;
                    }
                    let park = idle.announce_sleep(1, std::mem::take(&mut searching), 2, || {
                        if *queue.lock().unwrap() > 0 {
                            WorkSeen::Others
                        } else {
                            WorkSeen::Nothing
                        }
                    });
                    if park {
                        parker.park();
                    }
                    searching = idle.end_sleep(1, park, 2);
                }
                assert_eq!(idle.end_search(), None, "no one else sleeps");
            })
        };

        // Worker 0: takes a task from its own queue, stops searching, and runs the task
        // without looking again.
        assert!(take(&queue));
        end_search(&idle, 1, &unparker);
        worker1.join().unwrap();
    });
}

/// Worker 0 searches and worker 1 sleeps while a thread pushes two tasks: a push that finds
/// the searcher wakes no one. Worker 0's search found nothing before they came, so it goes to
/// sleep, stopping its search, and its look sees them. It takes one and keeps its thread (a
/// long poll), so it must come back from its look as a searcher, the only one: the end of
/// that search wakes worker 1 for the other task. Back from the look without searching
/// (mutant 83), it leaves the task the pushes left to its search to no one, and loom reports
/// the deadlock. A push after worker 0's announcement wakes worker 0, the last to sleep, as a
/// searcher, to the same end.
#[test]
fn a_worker_whose_look_finds_work_comes_back_searching() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let idle = Arc::new(Idle::new(2));
        let queue = Arc::new(Mutex::new(0));
        let (parker0, unparker0) = Parker::new(&driver);
        let (parker1, unparker1) = Parker::new(&driver);
        let seen = |queue: &Mutex<usize>| {
            if *queue.lock().unwrap() > 0 {
                WorkSeen::Its
            } else {
                WorkSeen::Nothing
            }
        };
        assert!(idle.announce_sleep(1, false, 2, || seen(&queue)));
        assert!(idle.try_transition_to_searching(2));

        let worker1 = {
            let (idle, queue, unparker0) = (idle.clone(), queue.clone(), unparker0.clone());
            thread::spawn(move || {
                // The worker's loop, cut down to taking one task, from its first park on.
                let mut park = true;
                loop {
                    if park {
                        parker1.park();
                    }
                    let searching = idle.end_sleep(1, park, 2);
                    if take(&queue) {
                        if searching {
                            end_search(&idle, 0, &unparker0);
                        }
                        break;
                    }
                    park = idle.announce_sleep(1, searching, 2, || seen(&queue));
                }
            })
        };
        let pusher = {
            let (idle, queue, unparker1) = (idle.clone(), queue.clone(), unparker1.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    *queue.lock().unwrap() += 1;
                    match idle.worker_to_notify() {
                        Some(0) => unparker0.unpark(),
                        Some(_) => unparker1.unpark(),
                        None => {}
                    }
                }
            })
        };

        // Worker 0: its search found nothing; it goes to sleep, looks again, and takes one
        // task (seen in its look, or pushed after it, with a wake), then runs it without
        // looking again.
        let park = idle.announce_sleep(0, true, 2, || seen(&queue));
        if park {
            parker0.park();
        }
        let searching = idle.end_sleep(0, park, 2);
        assert!(take(&queue));
        if searching {
            end_search(&idle, 1, &unparker1);
        }
        pusher.join().unwrap();
        worker1.join().unwrap();
    });
}

/// Takes one task from `held` (a count of tasks, read without a lock), if there is one.
fn take_held(held: &AtomicUsize) -> bool {
    let mut seen = held.load(Ordering::Acquire);
    while seen > 0 {
        match held.compare_exchange(seen, seen - 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(now) => seen = now,
        }
    }
    false
}

/// Where a look sees the tasks `held`: only in another worker's queues, or nowhere.
fn seen_held(held: &AtomicUsize) -> WorkSeen {
    if held.load(Ordering::Acquire) > 0 {
        WorkSeen::Others
    } else {
        WorkSeen::Nothing
    }
}

/// A third worker, busy in a long poll, holds two tasks back after a yield: a hold wakes no
/// one and issues no fence (`defer_yielded`), so nothing orders its store before anyone's
/// look. Worker 1, refused a search while worker 0 searches (half of the two workers that the
/// count is taken against), goes to sleep and its look sees the tasks, in the other's queues
/// only: it leaves them to the searcher and parks (`idle.rs`, "Leaving work to the
/// searchers"). Worker 0's search first finds nothing, so it goes to sleep too, and the look
/// after its announcement must see what worker 1's saw: worker 1's `SeqCst` fence, between its
/// look and its read of the searching count, orders its look before worker 0's fence. Without
/// it (mutant 97) worker 0's look may read the count of held tasks from before the hold, both
/// workers park, and loom reports the deadlock. With it, worker 0 stays awake, takes a task and
/// keeps its thread, and the end of its search wakes worker 1 for the other.
///
/// The model follows the runs in which worker 1's look sees the tasks, as that is the case
/// the fence is for: that look waits for them. A runtime reaches this with three workers
/// besides the one that holds the tasks, two of them searching; the model counts against two
/// workers, so that one searcher is half of them, and keeps to three threads.
///
/// Bounded at three preemptions whatever `LOOM_MAX_PREEMPTIONS` says: the waiting look makes
/// the unbounded model run for hours.
#[test]
fn a_searcher_that_goes_to_sleep_sees_the_work_left_to_it() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let (driver, _worker0) = Driver::new(false);
        let idle = Arc::new(Idle::new(2));
        // The third worker's held tasks, which the two take only by searching.
        let held = Arc::new(AtomicUsize::new(0));
        let (parker0, unparker0) = Parker::new(&driver);
        let (parker1, unparker1) = Parker::new(&driver);
        assert!(idle.try_transition_to_searching(2));

        let holder = {
            let held = held.clone();
            thread::spawn(move || held.store(2, Ordering::Release))
        };
        let worker1 = {
            let (idle, held) = (idle.clone(), held.clone());
            thread::spawn(move || {
                // The worker's loop, cut down to stealing one task: its own queues and the
                // injector are empty.
                let mut searching = false;
                loop {
                    searching = searching || idle.try_transition_to_searching(2);
                    if searching && take_held(&held) {
                        break;
                    }
                    let park = idle.announce_sleep(1, std::mem::take(&mut searching), 2, || {
                        // The runs that matter here: the look sees the held tasks.
                        while held.load(Ordering::Acquire) == 0 {
                            thread::yield_now();
                        }
                        WorkSeen::Others
                    });
                    if park {
                        parker1.park();
                    }
                    searching = idle.end_sleep(1, park, 2);
                }
                end_search(&idle, 0, &unparker0);
            })
        };

        // Worker 0: searches until it takes a task, then runs it without looking again.
        let mut searching = true;
        loop {
            if searching && take_held(&held) {
                break;
            }
            let park =
                idle.announce_sleep(0, std::mem::take(&mut searching), 2, || seen_held(&held));
            if park {
                parker0.park();
            }
            searching = idle.end_sleep(0, park, 2);
            searching = searching || idle.try_transition_to_searching(2);
        }
        end_search(&idle, 1, &unparker1);
        holder.join().unwrap();
        worker1.join().unwrap();
    });
}
