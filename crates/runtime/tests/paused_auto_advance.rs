//! Auto-advance of a paused clock: with every thread of the runtime idle and a timer pending,
//! the clock jumps to that timer. A day-long sleep under `start_paused` finishes at once (a
//! generous real-time bound) on 1 and several workers, taking exactly a day of paused time;
//! the clock never jumps past an earlier timer; it does not jump while a task is busy or the
//! `block_on` thread is blocked; it works after `pause()` in a running runtime, from a task or
//! from a thread outside `block_on` while every thread idles; and a runtime whose last timer
//! was cancelled sleeps instead of looking for a jump.

mod support;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use escapement::time::{self, interval, sleep, timeout, Instant};

use support::paused;

/// The real time bound that only catches a clock that does not jump.
const AT_ONCE: Duration = Duration::from_secs(10);

#[test]
fn a_day_long_sleep_finishes_at_once() {
    for workers in [1, 2, 4] {
        let rt = paused(workers);
        let real = std::time::Instant::now();
        rt.block_on(async {
            let start = Instant::now();
            sleep(Duration::from_secs(86_400)).await;
            assert_eq!(
                start.elapsed(),
                Duration::from_secs(86_400),
                "{workers} workers"
            );
        });
        assert!(
            real.elapsed() < AT_ONCE,
            "{workers} workers: {:?}",
            real.elapsed()
        );
    }
}

#[test]
fn a_day_long_sleep_in_a_task_finishes_at_once() {
    for workers in [1, 4] {
        let rt = paused(workers);
        let real = std::time::Instant::now();
        let elapsed = rt.block_on(async {
            escapement::spawn(async {
                let start = Instant::now();
                sleep(Duration::from_secs(86_400)).await;
                start.elapsed()
            })
            .await
            .expect("the task completes")
        });
        assert_eq!(elapsed, Duration::from_secs(86_400));
        assert!(real.elapsed() < AT_ONCE);
    }
}

#[test]
fn the_clock_stops_at_every_timer_on_the_way() {
    let rt = paused(4);
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = [86_400u64, 1, 3_600, 60, 7]
            .into_iter()
            .map(|secs| {
                escapement::spawn(async move {
                    sleep(Duration::from_secs(secs)).await;
                    (secs, start.elapsed())
                })
            })
            .collect();
        for task in tasks {
            let (secs, elapsed) = task.await.expect("the task completes");
            assert_eq!(
                elapsed,
                Duration::from_secs(secs),
                "woke exactly at its deadline"
            );
        }
    });
}

#[test]
fn the_clock_waits_for_a_busy_task() {
    let rt = paused(2);
    rt.block_on(async {
        let done = Arc::new(AtomicBool::new(false));
        let busy = {
            let done = done.clone();
            escapement::spawn(async move {
                std::thread::sleep(Duration::from_millis(50));
                done.store(true, Ordering::SeqCst);
            })
        };
        sleep(Duration::from_secs(1)).await;
        assert!(
            done.load(Ordering::SeqCst),
            "the clock jumped while a task was running"
        );
        busy.await.expect("the busy task completes");
    });
}

#[test]
fn the_clock_waits_for_a_blocked_block_on_thread() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        let sleeper = escapement::spawn(async move {
            sleep(Duration::from_secs(1)).await;
            start.elapsed()
        });
        // The block_on thread is busy, not parked: the runtime is not idle.
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            !sleeper.is_finished(),
            "the clock jumped while block_on was busy"
        );
        assert_eq!(Instant::now(), start);
        assert_eq!(
            sleeper.await.expect("the task completes"),
            Duration::from_secs(1)
        );
    });
}

#[test]
fn tasks_chained_by_channels_and_timers_see_exact_times() {
    let rt = paused(3);
    rt.block_on(async {
        let start = Instant::now();
        let (tx, mut rx) = futures::channel::mpsc::unbounded::<Duration>();
        for hop in 0..10u64 {
            let tx = tx.clone();
            escapement::spawn(async move {
                sleep(Duration::from_millis(100 * (hop + 1))).await;
                tx.unbounded_send(start.elapsed())
                    .expect("the receiver lives");
            });
        }
        drop(tx);
        let mut seen = Vec::new();
        while let Some(at) = futures::StreamExt::next(&mut rx).await {
            seen.push(at);
        }
        let expected: Vec<Duration> = (1..=10u64)
            .map(|h| Duration::from_millis(100 * h))
            .collect();
        assert_eq!(seen, expected);
    });
}

#[test]
fn an_interval_ticks_through_a_day_at_once() {
    let rt = paused(2);
    let real = std::time::Instant::now();
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_secs(3_600));
        for hour in 0..=24u32 {
            assert_eq!(
                ticker.tick().await,
                start + Duration::from_secs(3_600) * hour
            );
        }
        assert_eq!(start.elapsed(), Duration::from_secs(86_400));
    });
    assert!(real.elapsed() < AT_ONCE);
}

#[test]
fn a_timeout_elapses_at_once_and_exactly() {
    let rt = paused(4);
    rt.block_on(async {
        let start = Instant::now();
        let outcome = timeout(Duration::from_secs(30), futures::future::pending::<()>()).await;
        assert!(outcome.is_err());
        assert_eq!(start.elapsed(), Duration::from_secs(30));
    });
}

#[test]
fn auto_advance_works_after_pause_in_a_running_runtime() {
    for workers in [1, 3] {
        let rt = escapement::Builder::new()
            .worker_threads(workers)
            .build()
            .expect("a runtime");
        let real = std::time::Instant::now();
        rt.block_on(async {
            time::pause();
            let start = Instant::now();
            sleep(Duration::from_secs(86_400)).await;
            assert_eq!(start.elapsed(), Duration::from_secs(86_400));
            time::resume();
        });
        assert!(real.elapsed() < AT_ONCE);
    }
}

/// A thread outside `block_on` (under `Handle::enter`) pauses the clock while every thread of
/// the runtime is idle, a task asleep for an hour: no thread goes idle after the pause to
/// nudge worker 0, so the pause itself wakes it to jump. Without that, worker 0 slept on
/// toward the hour's slot of the wheel on the real clock, most of an hour.
#[test]
fn a_pause_from_outside_block_on_while_everything_idles_still_jumps() {
    for workers in [1, 2] {
        let rt = escapement::Builder::new()
            .worker_threads(workers)
            .build()
            .expect("a runtime");
        let (asleep, is_asleep) = std::sync::mpsc::channel();
        let (woke, has_woken) = std::sync::mpsc::channel();
        rt.spawn(async move {
            let start = Instant::now();
            let hour = sleep(Duration::from_secs(3600));
            asleep.send(()).unwrap();
            hour.await;
            woke.send(start.elapsed()).unwrap();
        });
        is_asleep.recv_timeout(AT_ONCE).expect("the task runs");
        // Time for the workers to park (a worker still awake only makes the case easier).
        std::thread::sleep(Duration::from_millis(100));
        let _in_runtime = rt.handle().enter();
        time::pause();
        let slept = has_woken
            .recv_timeout(AT_ONCE)
            .unwrap_or_else(|_| panic!("{workers} workers: the clock did not jump"));
        assert!(
            slept >= Duration::from_secs(3600),
            "{workers} workers: {slept:?}"
        );
    }
}

/// A future a plain thread completes after `after`, so every thread of the runtime is idle
/// meanwhile with no timer to jump to.
fn completed_from_outside(after: Duration) -> futures::channel::oneshot::Receiver<()> {
    let (done, finished) = futures::channel::oneshot::channel();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let _ = done.send(());
    });
    finished
}

#[test]
fn a_cancelled_last_timer_leaves_worker_0_asleep_not_spinning() {
    paused(1).block_on(async {
        // Register a timer on the driver, then cancel it: the wheel is empty again.
        let mut timer = Box::pin(sleep(Duration::from_secs(3600)));
        std::future::poll_fn(|cx| {
            assert!(timer.as_mut().poll(cx).is_pending());
            std::task::Poll::Ready(())
        })
        .await;
        drop(timer);
        let metrics = escapement::Handle::current().metrics();
        let before = metrics.driver_wakeups();
        completed_from_outside(Duration::from_millis(300))
            .await
            .unwrap();
        let wakeups = escapement::Handle::current().metrics().driver_wakeups() - before;
        // A worker 0 that took the cancelled timer for one to jump to woke hundreds of
        // thousands of times here.
        assert!(wakeups < 100, "worker 0 woke {wakeups} times while idle");
    });
}
