//! `time::pause`, `time::resume`, `time::advance` and `Builder::start_paused`: a paused clock
//! is frozen and `Instant::now` reads it; `advance(d)` moves it by exactly `d` (to the
//! nanosecond) when first polled, in the runtime it is polled in, and, before it completes,
//! fires every timer due by then and wakes its waker (checked with counting wakers
//! registered from tasks on 4 workers), then yields once, so that on a current-thread
//! runtime the tasks it woke have run (tokio's, which fires at its next park, runs the body
//! first), and a task that yielded before runs between the advances of a task advancing in
//! a loop, as `yield_now` would let it; a `timeout` shorter than the advance it wraps elapses,
//! and a task woken at the same instant as the body finds its sleep fired when the body
//! advances before the task runs, but runs first if the body yields;
//! `pause` mid-run freezes on a tick boundary and `resume` lets the clock run on from where it
//! stood, with a timer worker 0 was already sleeping toward firing at its new instant; a
//! timer already due when first polled after a `pause` that followed a stretch on the real
//! clock fires at once, while a blocking closure holds auto-advance back. (An `advance`
//! racing worker 0's own timer processing is `paused_advance_race.rs`.)

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use escapement::time::{self, sleep, sleep_until, Instant, Sleep};

use support::{paused, poll_once, running, CountingWaker};

/// A sleep registered (polled once) with a counting waker.
struct Registered {
    deadline: Instant,
    sleep: Pin<Box<Sleep>>,
    counter: Arc<CountingWaker>,
}

fn register(deadline: Instant) -> Registered {
    let mut sleep = Box::pin(sleep_until(deadline));
    let (counter, waker) = CountingWaker::waker();
    assert_eq!(poll_once(sleep.as_mut(), &waker), Poll::Pending);
    Registered {
        deadline,
        sleep,
        counter,
    }
}

#[test]
fn a_paused_clock_is_frozen() {
    let rt = paused(2);
    rt.block_on(async {
        let frozen = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(Instant::now(), frozen);
        let in_task = escapement::spawn(async { Instant::now() })
            .await
            .expect("the task completes");
        assert_eq!(in_task, frozen, "the same clock on every worker");
    });
}

#[test]
fn advance_moves_the_clock_by_exactly_the_duration() {
    let rt = paused(4);
    rt.block_on(async {
        let start = Instant::now();
        time::advance(Duration::from_nanos(1_234_567)).await;
        assert_eq!(start.elapsed(), Duration::from_nanos(1_234_567));
        time::advance(Duration::from_nanos(1)).await;
        assert_eq!(start.elapsed(), Duration::from_nanos(1_234_568));
        time::advance(Duration::ZERO).await;
        assert_eq!(start.elapsed(), Duration::from_nanos(1_234_568));
        time::advance(Duration::from_secs(86_400)).await;
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(86_400) + Duration::from_nanos(1_234_568)
        );
    });
}

#[test]
fn advance_acts_where_and_when_it_is_first_polled() {
    let rt = paused(2);
    let now = || rt.block_on(async { Instant::now() });
    let start = now();
    // Made outside the runtime and handed to `block_on`, as tokio allows.
    rt.block_on(time::advance(Duration::from_millis(7)));
    assert_eq!(now() - start, Duration::from_millis(7));
    // Made while the clock runs, polled once it is paused.
    let running_rt = running(1);
    running_rt.block_on(async {
        let advance = time::advance(Duration::from_secs(60));
        time::pause();
        let paused_at = Instant::now();
        advance.await;
        assert_eq!(paused_at.elapsed(), Duration::from_secs(60));
        time::resume();
    });
    // Dropped unpolled: nothing happens, even outside a runtime.
    drop(time::advance(Duration::from_secs(1)));
    assert_eq!(now() - start, Duration::from_millis(7));
}

#[test]
fn advance_moves_the_clock_at_its_first_poll_and_yields_once() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut advance = Box::pin(time::advance(Duration::from_millis(3)));
        let (counter, waker) = CountingWaker::waker();
        // As tokio's: the first poll moves the clock, wakes its own task and yields.
        assert_eq!(poll_once(advance.as_mut(), &waker), Poll::Pending);
        assert_eq!(Instant::now() - start, Duration::from_millis(3));
        assert_eq!(counter.wakes(), 1);
        assert_eq!(poll_once(advance.as_mut(), &waker), Poll::Ready(()));
        assert_eq!(Instant::now() - start, Duration::from_millis(3));
    });
}

#[test]
fn on_a_current_thread_runtime_the_tasks_an_advance_wakes_run_before_it_completes() {
    let rt = escapement::Builder::new_current_thread()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let spawned_ran = Arc::new(AtomicUsize::new(0));
        let slept = Arc::new(AtomicUsize::new(0));
        let (spawned_ran2, slept2) = (spawned_ran.clone(), slept.clone());
        escapement::spawn(async move {
            spawned_ran2.fetch_add(1, Ordering::SeqCst);
            sleep(Duration::from_millis(5)).await;
            slept2.fetch_add(1, Ordering::SeqCst);
        });
        // A task spawned and not yet run runs during the advance, as on tokio.
        time::advance(Duration::from_millis(1)).await;
        assert_eq!(spawned_ran.load(Ordering::SeqCst), 1);
        assert_eq!(slept.load(Ordering::SeqCst), 0);
        // A task whose sleep the advance fires has finished by the time it completes.
        time::advance(Duration::from_millis(5)).await;
        assert_eq!(slept.load(Ordering::SeqCst), 1);
    });
}

/// The advance fires the timeout's timer as it moves the clock past it, so the timeout has
/// elapsed when it looks, after its first poll of the advance (tokio's gives `Ok`: its timer
/// fires later, and it polls the advance, done by then, first; `docs/guarantees.md`).
#[test]
fn a_timeout_shorter_than_the_advance_it_wraps_elapses() {
    let rt = escapement::Builder::new_current_thread()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let start = Instant::now();
        let wrapped = time::timeout(
            Duration::from_millis(1),
            time::advance(Duration::from_millis(8)),
        )
        .await;
        assert!(wrapped.is_err());
        assert_eq!(start.elapsed(), Duration::from_millis(8));
    });
}

/// A task's timeout and the body's sleep fall due together; the body runs first and
/// advances past the task's inner sleep, whose timer the advance fires, so the task, polled
/// after the advance, finds its inner sleep done (tokio's gives `Err(Elapsed)`: its driver
/// fires the inner sleep's timer later; `docs/guarantees.md`). A yield before the advance
/// lets the task run at the shared instant, where its timeout has elapsed, as on tokio.
#[test]
fn a_task_woken_with_the_body_runs_after_its_advance_unless_the_body_yields() {
    for yield_first in [false, true] {
        let rt = escapement::Builder::new_current_thread()
            .start_paused(true)
            .build()
            .unwrap();
        let (outcome, at) = rt.block_on(async move {
            let start = Instant::now();
            let task = escapement::spawn(async move {
                let outcome = time::timeout_at(
                    start + Duration::from_millis(19),
                    sleep_until(start + Duration::from_millis(20)),
                )
                .await;
                (outcome.is_ok(), start.elapsed())
            });
            sleep_until(start + Duration::from_millis(19)).await;
            if yield_first {
                escapement::task::yield_now().await;
            }
            time::advance(Duration::from_millis(6)).await;
            task.await.unwrap()
        });
        if yield_first {
            assert_eq!((outcome, at), (false, Duration::from_millis(19)));
        } else {
            assert_eq!((outcome, at), (true, Duration::from_millis(25)));
        }
    }
}

/// A task that advances the clock in a loop yields at each advance as `yield_now` does, so a
/// task that yielded runs again after its next advance or so, as on tokio (2 ms here on
/// both); requeued at once instead, the advancing task ran all ten first (10 ms).
#[test]
fn a_task_advancing_in_a_loop_lets_a_task_that_yielded_run_between_its_advances() {
    for workers in [None, Some(1)] {
        let rt = match workers {
            None => escapement::Builder::new_current_thread(),
            Some(workers) => {
                let mut builder = escapement::Builder::new();
                builder.worker_threads(workers);
                builder
            }
        }
        .start_paused(true)
        .build()
        .unwrap();
        let resumed = rt.block_on(async {
            let start = Instant::now();
            let yielder = escapement::spawn(async move {
                escapement::task::yield_now().await;
                start.elapsed()
            });
            let advancer = escapement::spawn(async {
                for _ in 0..10 {
                    time::advance(Duration::from_millis(1)).await;
                }
            });
            advancer.await.unwrap();
            yielder.await.unwrap()
        });
        assert!(
            resumed <= Duration::from_millis(2),
            "{workers:?} workers: the task that yielded ran again at {resumed:?}"
        );
    }
}

#[test]
fn advance_fires_exactly_the_timers_due_by_then() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let one = register(start + Duration::from_millis(1));
        let one_and_a_half = register(start + Duration::from_micros(1_500));
        let two = register(start + Duration::from_millis(2));
        time::advance(Duration::from_micros(1_500)).await;
        assert_eq!(one.counter.wakes(), 1);
        assert_eq!(
            one_and_a_half.counter.wakes(),
            0,
            "its deadline rounds up to the 2 ms tick"
        );
        assert_eq!(two.counter.wakes(), 0);
        time::advance(Duration::from_micros(500)).await;
        assert_eq!(one_and_a_half.counter.wakes(), 1);
        assert_eq!(two.counter.wakes(), 1);
        assert!(one.sleep.is_elapsed() && one_and_a_half.sleep.is_elapsed());
    });
}

#[test]
fn advance_wakes_every_due_timer_registered_on_any_worker() {
    let rt = paused(4);
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..64u64)
            .map(|i| {
                escapement::spawn(async move {
                    (0..50u64)
                        .map(|j| register(start + Duration::from_micros(1 + (i * 50 + j) * 97)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut timers = Vec::new();
        for task in tasks {
            timers.extend(task.await.expect("registered"));
        }
        for step_ms in [3u64, 17, 60, 150, 311] {
            time::advance(Duration::from_millis(step_ms)).await;
            let now = Instant::now();
            for timer in &timers {
                let due = tick_due(start, timer.deadline, now);
                assert_eq!(
                    timer.counter.wakes(),
                    usize::from(due),
                    "deadline {:?} at {:?}",
                    timer.deadline - start,
                    now - start
                );
                assert_eq!(timer.sleep.is_elapsed(), due);
            }
        }
    });
}

/// Whether a deadline rounded up to a whole millisecond after `start` has been reached.
fn tick_due(start: Instant, deadline: Instant, now: Instant) -> bool {
    let deadline_ms = (deadline - start).as_nanos().div_ceil(1_000_000);
    let now_ms = (now - start).as_nanos() / 1_000_000;
    deadline_ms <= now_ms
}

#[test]
fn advance_wakes_the_tasks_of_due_sleeps_before_it_completes() {
    let rt = paused(4);
    rt.block_on(async {
        let start = Instant::now();
        let registered = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (1..=40u64)
            .map(|i| {
                let registered = registered.clone();
                escapement::spawn(async move {
                    let mut delay = Box::pin(sleep(Duration::from_millis(5 * i)));
                    std::future::poll_fn(|cx| {
                        let _ = delay.as_mut().poll(cx);
                        Poll::Ready(())
                    })
                    .await;
                    registered.fetch_add(1, Ordering::SeqCst);
                    delay.await;
                    Instant::now()
                })
            })
            .collect();
        while registered.load(Ordering::SeqCst) < 40 {
            escapement::task::yield_now().await;
        }
        time::advance(Duration::from_millis(100)).await;
        let now = start + Duration::from_millis(100);
        for (i, task) in (1..=40u64).zip(tasks) {
            if 5 * i <= 100 {
                assert_eq!(task.await.expect("completes"), now, "woke at the advance");
            } else {
                assert!(!task.is_finished());
            }
        }
    });
}

#[test]
fn pause_mid_run_freezes_on_a_tick_boundary() {
    let rt = running(2);
    rt.block_on(async {
        std::thread::sleep(Duration::from_micros(1_300));
        time::pause();
        let frozen = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(Instant::now(), frozen, "frozen");
        // A whole-tick sleep from a tick boundary takes exactly its duration.
        sleep(Duration::from_millis(3)).await;
        assert_eq!(frozen.elapsed(), Duration::from_millis(3));
        time::advance(Duration::from_millis(7)).await;
        assert_eq!(frozen.elapsed(), Duration::from_millis(10));
        time::resume();
    });
}

#[test]
fn resume_lets_the_clock_run_on_from_where_it_stood() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        time::advance(Duration::from_secs(10)).await;
        time::resume();
        let resumed = Instant::now();
        assert!(
            resumed >= start + Duration::from_secs(10),
            "never backwards"
        );
        let real = std::time::Instant::now();
        sleep(Duration::from_millis(20)).await;
        assert!(
            real.elapsed() >= Duration::from_millis(20),
            "sleeps take real time again"
        );
        assert!(resumed.elapsed() >= Duration::from_millis(20));
        assert!(real.elapsed() < Duration::from_secs(10), "hung");
        time::pause();
        let paused_again = Instant::now();
        assert!(paused_again >= resumed + Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(3));
        assert_eq!(Instant::now(), paused_again);
        time::resume();
    });
}

/// Worker 0 sleeps toward a timer on the real clock; a pause, an advance and a resume then move
/// the runtime's clock ahead of the system's, so the timer is due sooner in real time than
/// worker 0 last planned. It must wake for the new instant, not the old one.
#[test]
fn a_timer_armed_before_pause_advance_resume_fires_at_its_new_instant() {
    let rt = running(2);
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_millis(1_000);
        let timer = escapement::spawn(sleep_until(deadline));
        // Long enough for worker 0 to park toward the timer.
        std::thread::sleep(Duration::from_millis(50));
        time::pause();
        time::advance(Duration::from_millis(500)).await;
        time::resume();
        let left = deadline.saturating_duration_since(Instant::now());
        let real = std::time::Instant::now();
        timer.await.expect("the sleep completes");
        let waited = real.elapsed();
        // About 450 ms are left; a worker 0 that kept its old plan would wait about 950 ms.
        assert!(
            waited < left + Duration::from_millis(300),
            "{left:?} were left, the timer fired after {waited:?}"
        );
    });
}

#[test]
fn pause_applies_to_the_whole_runtime() {
    let rt = running(3);
    rt.block_on(async {
        escapement::spawn(async { time::pause() })
            .await
            .expect("paused from a task");
        let frozen = Instant::now();
        std::thread::sleep(Duration::from_millis(3));
        assert_eq!(Instant::now(), frozen);
        let in_task = escapement::spawn(async { Instant::now() })
            .await
            .expect("the task completes");
        assert_eq!(in_task, frozen);
        time::resume();
    });
}

#[test]
fn a_runtime_that_does_not_start_paused_runs_on_the_real_clock() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .start_paused(false)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(3));
        assert!(start.elapsed() >= Duration::from_millis(3));
    });
}

#[test]
fn a_timer_due_at_its_first_poll_after_pause_fires_while_a_closure_blocks() {
    // The clock runs for 90 ms with nothing due, so the wheel stays at its start; after the
    // pause, a 2 ms sleep lands in a 64-tick slot whose start the clock has passed, and worker
    // 0 parks. A 70 ms sleep made before, due by now, must still fire at its first poll, with
    // auto-advance held back by a blocking closure.
    for attempt in 0.. {
        assert!(
            attempt < 5,
            "the real clock ran too far past 90 ms in every attempt"
        );
        let rt = paused(1);
        let fired_at_once = rt.block_on(async {
            let origin = Instant::now();
            time::resume();
            let due = sleep(Duration::from_millis(70));
            while origin.elapsed() < Duration::from_millis(90) {
                std::thread::sleep(Duration::from_millis(1));
            }
            time::pause();
            if origin.elapsed() >= Duration::from_millis(120) {
                return None;
            }
            let mut soon = Box::pin(sleep(Duration::from_millis(2)));
            let (_, waker) = CountingWaker::waker();
            assert!(poll_once(soon.as_mut(), &waker).is_pending());
            // Worker 0 takes the registration and parks again.
            std::thread::sleep(Duration::from_millis(50));
            let blocking = escapement::task::spawn_blocking(|| {
                std::thread::sleep(Duration::from_secs(3));
            });
            let real = std::time::Instant::now();
            due.await;
            let waited = real.elapsed();
            blocking.await.unwrap();
            Some(waited < Duration::from_secs(2))
        });
        if let Some(at_once) = fired_at_once {
            assert!(at_once, "the due sleep waited for the blocking closure");
            return;
        }
    }
}
