//! Work spawned from outside the workers while tasks keep the only worker busy: the worker
//! times its turns and looks at the shared queue often enough that such work waits about
//! 200 µs of polling, not a fixed number of turns, however long each poll takes and however
//! many polls a turn runs from the LIFO slot.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use escapement::{Builder, Runtime};

mod support;

use support::{join_within, wait_until};

fn spin(length: Duration) {
    let spinning = Instant::now();
    while spinning.elapsed() < length {
        std::hint::spin_loop();
    }
}

/// Spawns a task from outside five times, once the busy tasks have polled `warm_up` times
/// between them (enough for the worker to have timed two stretches of its first interval, of
/// 61 turns), and returns how many of their polls each waited for before it ran.
///
/// A count includes the polls made while the spawning thread, between its reading of the
/// count and its spawn, was not running: on a loaded machine one of the five may be much
/// longer (15 polls of 20 µs where the bound is 12, once in CI). So the tests bound the
/// median: an interval that is not tuned makes every spawn wait, and is still caught.
fn polls_waited_by_spawns_from_outside(
    rt: &Runtime,
    polls: &Arc<AtomicUsize>,
    warm_up: usize,
) -> Vec<usize> {
    wait_until("the busy tasks' first polls", || {
        polls.load(Ordering::SeqCst) >= warm_up
    });
    (0..5)
        .map(|_| {
            let spawned_at = polls.load(Ordering::SeqCst);
            let (started, start) = mpsc::channel();
            rt.spawn({
                let polls = polls.clone();
                async move { started.send(polls.load(Ordering::SeqCst)).unwrap() }
            });
            let started_at = start
                .recv_timeout(Duration::from_secs(20))
                .expect("the task spawned from outside never ran");
            started_at - spawned_at
        })
        .collect()
}

/// The middle one of `waited`, in order.
fn median(waited: &[usize]) -> usize {
    let mut sorted = waited.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

#[test]
fn a_task_spawned_from_outside_waits_a_few_long_polls_not_a_fixed_number() {
    // Longer than the 200 µs a tuned interval aims at: the worker looks at the shared queue
    // every other turn.
    const POLL: Duration = Duration::from_micros(300);
    let rt = Builder::new().worker_threads(1).build().unwrap();
    let polls = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Wakes itself at every poll, so the worker's queue is never empty.
    let busy = rt.spawn({
        let (polls, stop) = (polls.clone(), stop.clone());
        std::future::poll_fn(move |cx| {
            if stop.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            spin(POLL);
            polls.fetch_add(1, Ordering::SeqCst);
            cx.waker().wake_by_ref();
            Poll::Pending
        })
    });
    // A poll a turn.
    let waited = polls_waited_by_spawns_from_outside(&rt, &polls, 200);
    stop.store(true, Ordering::SeqCst);
    join_within(&rt, busy);
    // Two turns of the tuned interval, and a spawn that may land just after a look; a fixed
    // interval of 61 turns waited 40 polls.
    assert!(
        median(&waited) <= 6,
        "the tasks spawned from outside waited {waited:?} polls of {POLL:?}"
    );
}

#[test]
fn a_task_spawned_from_outside_waits_a_few_turns_of_tasks_waking_each_other() {
    // Four polls make a turn (one, then three from the LIFO slot): 80 µs, so a tuned
    // interval is two turns; an interval tuned to polls would be ten turns, 40 polls.
    const POLL: Duration = Duration::from_micros(20);
    let rt = Builder::new().worker_threads(1).build().unwrap();
    let polls = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let pair = rt.spawn({
        let (polls, stop) = (polls.clone(), stop.clone());
        async move {
            // Spawned on the worker, each wakes the other into the LIFO slot at every poll.
            let wakers: Arc<[std::sync::Mutex<Option<Waker>>; 2]> = Arc::default();
            let tasks = [0, 1].map(|me| {
                let (polls, stop, wakers) = (polls.clone(), stop.clone(), wakers.clone());
                escapement::spawn(std::future::poll_fn(move |cx| {
                    if let Some(other) = wakers[1 - me].lock().unwrap().take() {
                        other.wake();
                    }
                    if stop.load(Ordering::SeqCst) {
                        return Poll::Ready(());
                    }
                    spin(POLL);
                    polls.fetch_add(1, Ordering::SeqCst);
                    *wakers[me].lock().unwrap() = Some(cx.waker().clone());
                    Poll::Pending
                }))
            });
            for task in tasks {
                task.await.unwrap();
            }
        }
    });
    // Four polls a turn.
    let waited = polls_waited_by_spawns_from_outside(&rt, &polls, 800);
    stop.store(true, Ordering::SeqCst);
    join_within(&rt, pair);
    // Two turns and a spawn just after a look: up to twelve polls.
    assert!(
        median(&waited) <= 12,
        "the tasks spawned from outside waited {waited:?} polls of {POLL:?}"
    );
}
