//! Work spawned from outside the workers while a task keeps the only worker busy: the worker
//! times its polls and looks at the shared queue often enough that such work waits about
//! 200 µs of polling, not a fixed number of turns, however long each poll takes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::{Duration, Instant};

use escapement::Builder;

mod support;

use support::{join_within, wait_until};

/// How long each poll of the busy task spins: longer than the 200 µs that a tuned interval
/// aims at, so the worker looks at the shared queue every other turn.
const POLL: Duration = Duration::from_micros(300);

#[test]
fn a_task_spawned_from_outside_waits_a_few_long_polls_not_a_fixed_number() {
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
            let spinning = Instant::now();
            while spinning.elapsed() < POLL {
                std::hint::spin_loop();
            }
            polls.fetch_add(1, Ordering::SeqCst);
            cx.waker().wake_by_ref();
            Poll::Pending
        })
    });
    // Enough polls for the worker to have timed two stretches of the default 61.
    wait_until("the busy task's first 200 polls", || {
        polls.load(Ordering::SeqCst) >= 200
    });
    for round in 0..5 {
        let spawned_at = polls.load(Ordering::SeqCst);
        let (started, start) = mpsc::channel();
        rt.spawn({
            let polls = polls.clone();
            async move { started.send(polls.load(Ordering::SeqCst)).unwrap() }
        });
        let started_at = start
            .recv_timeout(Duration::from_secs(20))
            .expect("the task spawned from outside never ran");
        // Two turns of the tuned interval, and a spawn that may land just after a look.
        let waited = started_at - spawned_at;
        assert!(
            waited <= 6,
            "round {round}: the task spawned from outside waited {waited} polls of {POLL:?}"
        );
    }
    stop.store(true, Ordering::SeqCst);
    join_within(&rt, busy);
}
