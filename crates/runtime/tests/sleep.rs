//! `sleep` and `sleep_until`: exact durations on the paused clock (whole ticks, sub-tick
//! rounding up, zero), never early on the real clock, a short sleep registered from another
//! thread while worker 0 sleeps toward a long one, sleeps firing while the only worker never
//! parks and in the turn that wakes it from a park, `Sleep::deadline` and
//! `Sleep::is_elapsed`, and a deadline in the past completing at the first poll.

mod support;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};

use escapement::time::{sleep, sleep_until, Duration, Instant};
use futures::task::noop_waker_ref;

use support::{paused, running};

#[test]
fn sleep_takes_exactly_its_duration_on_the_paused_clock() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            sleep(Duration::from_millis(60)).await;
            assert_eq!(
                start.elapsed(),
                Duration::from_millis(60),
                "{workers} workers"
            );
            sleep(Duration::from_secs(3)).await;
            assert_eq!(start.elapsed(), Duration::from_millis(3_060));
        });
    }
}

#[test]
fn sleep_in_spawned_tasks_takes_exactly_its_duration() {
    let rt = paused(3);
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (1..=20u64)
            .map(|i| {
                escapement::spawn(async move {
                    sleep(Duration::from_millis(7 * i)).await;
                    (i, start.elapsed())
                })
            })
            .collect();
        for task in tasks {
            let (i, elapsed) = task.await.expect("the task completes");
            assert_eq!(elapsed, Duration::from_millis(7 * i));
        }
    });
}

#[test]
fn sleep_until_completes_exactly_at_its_deadline() {
    let rt = paused(2);
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_millis(1_234);
        sleep_until(deadline).await;
        assert_eq!(Instant::now(), deadline);
    });
}

#[test]
fn a_sub_tick_duration_rounds_up_to_the_next_tick() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        sleep(Duration::from_nanos(1)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(1));
        let start = Instant::now();
        sleep(Duration::from_micros(1_500)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(2));
    });
}

#[test]
fn a_zero_sleep_completes_at_the_first_poll_without_moving_the_clock() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut zero = pin!(sleep(Duration::ZERO));
        let mut cx = Context::from_waker(noop_waker_ref());
        assert_eq!(zero.as_mut().poll(&mut cx), Poll::Ready(()));
        assert!(zero.is_elapsed());
        assert_eq!(Instant::now(), start);
    });
}

#[test]
fn sleep_is_never_early_on_the_real_clock() {
    for workers in [1, 3] {
        let rt = running(workers);
        rt.block_on(async {
            for millis in [1, 5, 20, 50] {
                let duration = Duration::from_millis(millis);
                let start = std::time::Instant::now();
                sleep(duration).await;
                let elapsed = start.elapsed();
                assert!(elapsed >= duration, "{elapsed:?} < {duration:?}");
                assert!(elapsed < Duration::from_secs(10), "hung: {elapsed:?}");
            }
        });
    }
}

#[test]
fn an_earlier_sleep_registered_elsewhere_wakes_the_driver() {
    for workers in [1, 3] {
        let rt = running(workers);
        rt.block_on(async {
            // Worker 0 goes to sleep toward this timer, a minute away.
            let mut long = Box::pin(sleep(Duration::from_secs(60)));
            let mut cx = Context::from_waker(noop_waker_ref());
            assert_eq!(long.as_mut().poll(&mut cx), Poll::Pending);
            std::thread::sleep(Duration::from_millis(20));
            // From the block_on thread, then from a task.
            let start = std::time::Instant::now();
            sleep(Duration::from_millis(5)).await;
            escapement::spawn(sleep(Duration::from_millis(5)))
                .await
                .expect("the task completes");
            let elapsed = start.elapsed();
            assert!(elapsed >= Duration::from_millis(10));
            assert!(
                elapsed < Duration::from_secs(30),
                "waited for the long timer"
            );
            assert!(!long.is_elapsed());
        });
    }
}

/// Worker 0 reads the clock only every few turns while its turns are short; a sleep still
/// fires on a runtime whose only worker never parks, with no other thread of the runtime to
/// stand in for it (the test's thread waits outside the runtime).
#[test]
fn a_sleep_fires_while_the_only_worker_never_parks() {
    let rt = running(1);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinning = {
        let stop = stop.clone();
        rt.spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                escapement::task::yield_now().await;
            }
        })
    };
    let (fired, wait) = std::sync::mpsc::channel();
    for millis in [3, 20] {
        let fired = fired.clone();
        rt.spawn(async move {
            let duration = Duration::from_millis(millis);
            let start = std::time::Instant::now();
            sleep(duration).await;
            fired.send((duration, start.elapsed())).unwrap();
        });
    }
    for _ in 0..2 {
        let (duration, elapsed) = wait
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the sleep fired");
        assert!(elapsed >= duration, "{elapsed:?} < {duration:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    futures::executor::block_on(spinning).expect("the spinning task ends");
}

/// Worker 0 reads the clock at the first turn after a park, whatever it planned before: a
/// sleep it parked toward fires in the turn that wakes from that park. Short turns before
/// the park (a task yielding) plan turns without a reading; were the plan kept, worker 0
/// would wake at the deadline, skip the reading, find nothing to run and come back to park,
/// up to `MAX_UNREAD_TURNS` times, each counted as a park, before firing.
#[test]
fn worker_0_reads_the_clock_as_it_wakes_from_a_park() {
    let rt = running(1);
    let sleeps = 10;
    let parks: Vec<u64> = (0..sleeps)
        .map(|round| {
            rt.block_on(rt.spawn(async move {
                let metrics = escapement::Handle::current().metrics();
                let mut delay = pin!(sleep(Duration::from_millis(20)));
                let first = std::future::poll_fn(|cx| Poll::Ready(delay.as_mut().poll(cx))).await;
                assert!(first.is_pending(), "a 20 ms sleep is pending at once");
                // Short turns, ending at each point of the plan's cycle over the rounds.
                for _ in 0..100 + round {
                    escapement::task::yield_now().await;
                }
                let before = metrics.worker_park_count(0);
                delay.await;
                metrics.worker_park_count(0) - before
            }))
            .expect("the sleeping task completes")
        })
        .collect();
    // One park per sleep; a few more only for a wake-up before the deadline, which nothing
    // here makes.
    let total: u64 = parks.iter().sum();
    assert!(
        total <= sleeps + sleeps / 2,
        "worker 0 came back to park before firing: parks per sleep {parks:?}"
    );
}

#[test]
fn deadline_is_the_requested_instant_and_is_elapsed_follows_the_timer() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_millis(10)));
        assert_eq!(delay.deadline(), start + Duration::from_millis(10));
        assert!(!delay.is_elapsed(), "not elapsed before its first poll");
        let mut cx = Context::from_waker(noop_waker_ref());
        assert_eq!(delay.as_mut().poll(&mut cx), Poll::Pending);
        assert!(!delay.is_elapsed(), "not elapsed while pending");
        delay.as_mut().await;
        assert!(delay.is_elapsed());
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        let until = sleep_until(start + Duration::from_secs(7));
        assert_eq!(until.deadline(), start + Duration::from_secs(7));
        assert!(format!("{until:?}").contains("Sleep"));
    });
}

#[test]
fn a_deadline_in_the_past_completes_at_the_first_poll() {
    let rt = running(1);
    rt.block_on(async {
        // Let the clock run for a while with no timer pending.
        std::thread::sleep(Duration::from_millis(30));
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut past = pin!(sleep_until(Instant::now() - Duration::from_millis(10)));
        assert_eq!(
            past.as_mut().poll(&mut cx),
            Poll::Ready(()),
            "sleep_until documents that a deadline in the past completes at the first poll"
        );
    });
}

#[test]
fn a_deadline_before_the_runtime_started_completes_at_the_first_poll() {
    let before = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    let rt = running(2);
    rt.block_on(async {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut past = pin!(sleep_until(before));
        assert_eq!(past.as_mut().poll(&mut cx), Poll::Ready(()));
    });
}
