//! A task's future is dropped where it is pinned: a timer linked into the wheel from inside a
//! task must be unlinked at the address it was linked at, whether the task is aborted,
//! cancelled by shutdown, panics, or completes while still holding an armed timer (a spawned
//! `timeout` whose future wins or panics). After each, the wheel must still be sound: later timers,
//! including ones whose deadlines cascade through the old timer's slot, fire on time.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use escapement::time::{sleep, timeout, Instant, Sleep};

use support::{paused, DropCounter};

/// Walks the wheel past `horizon`: sleeps at several levels must each take exactly their
/// duration.
async fn timers_still_fire(horizon: Duration) {
    for step in [
        Duration::from_millis(3),
        Duration::from_millis(70),
        Duration::from_secs(5),
        horizon,
    ] {
        let start = Instant::now();
        sleep(step).await;
        assert_eq!(start.elapsed(), step);
    }
}

#[test]
fn aborting_a_task_that_sleeps_unlinks_its_timer() {
    for workers in [1, 3] {
        let rt = paused(workers);
        rt.block_on(async {
            let drops = Arc::new(AtomicUsize::new(0));
            let counter = DropCounter(drops.clone());
            let task = escapement::spawn(async move {
                let _counter = counter;
                sleep(Duration::from_secs(3_600)).await;
            });
            escapement::task::yield_now().await;
            sleep(Duration::from_millis(1)).await;
            task.abort();
            assert!(task.await.expect_err("aborted").is_cancelled());
            assert_eq!(drops.load(Ordering::SeqCst), 1);
            timers_still_fire(Duration::from_secs(7_200)).await;
        });
    }
}

#[test]
fn a_spawned_timeout_whose_future_wins_unlinks_its_timer() {
    for workers in [1, 3] {
        let rt = paused(workers);
        rt.block_on(async {
            let task = escapement::spawn(timeout(
                Duration::from_secs(10),
                sleep(Duration::from_millis(5)),
            ));
            assert_eq!(task.await.expect("completes"), Ok(()));
            timers_still_fire(Duration::from_secs(20)).await;
        });
    }
}

/// Completes at its first poll while holding a registered, armed `Sleep` on the heap.
struct ReadyWithBoxedTimer {
    delay: Pin<Box<Sleep>>,
}

impl Future for ReadyWithBoxedTimer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        assert!(self.delay.as_mut().poll(cx).is_pending());
        Poll::Ready(())
    }
}

/// The control case: a timer boxed inside the task's future does not move with it.
#[test]
fn a_completed_future_holding_a_boxed_armed_timer_is_sound() {
    let rt = paused(2);
    rt.block_on(async {
        let task = escapement::spawn(ReadyWithBoxedTimer {
            delay: Box::pin(sleep(Duration::from_secs(30))),
        });
        task.await.expect("completes");
        timers_still_fire(Duration::from_secs(60)).await;
    });
}

#[test]
fn a_task_that_panics_while_sleeping_elsewhere_unlinks_its_timer() {
    let rt = paused(2);
    rt.block_on(async {
        let task = escapement::spawn(async {
            let mut armed = Box::pin(sleep(Duration::from_secs(600)));
            let mut inline = std::pin::pin!(sleep(Duration::from_secs(900)));
            futures::future::poll_fn(|cx| {
                assert!(armed.as_mut().poll(cx).is_pending());
                assert!(inline.as_mut().poll(cx).is_pending());
                Poll::Ready(())
            })
            .await;
            sleep(Duration::from_millis(2)).await;
            panic!("while two timers are armed");
        });
        assert!(task.await.expect_err("panicked").is_panic());
        timers_still_fire(Duration::from_secs(1_800)).await;
    });
}

#[test]
fn a_spawned_timeout_whose_future_panics_unlinks_its_timer() {
    let rt = paused(2);
    rt.block_on(async {
        let task = escapement::spawn(timeout(Duration::from_secs(600), async {
            sleep(Duration::from_millis(2)).await;
            panic!("inside a timeout");
        }));
        assert!(task.await.expect_err("panicked").is_panic());
        timers_still_fire(Duration::from_secs(1_200)).await;
    });
}

#[test]
fn shutdown_cancels_sleeping_tasks_and_unlinks_their_timers() {
    // Fewer under Miri, which interprets every task's start and drop.
    let tasks = if cfg!(miri) { 50 } else { 200 };
    for workers in [1, 4] {
        let rt = escapement::Builder::new()
            .worker_threads(workers)
            .build()
            .expect("a runtime");
        let drops = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        for i in 0..tasks {
            let counter = DropCounter(drops.clone());
            let started = started.clone();
            drop(rt.spawn(async move {
                let _counter = counter;
                let mut delay = std::pin::pin!(sleep(Duration::from_millis(500 + i * 97)));
                futures::future::poll_fn(|cx| {
                    let _ = delay.as_mut().poll(cx);
                    Poll::Ready(())
                })
                .await;
                started.fetch_add(1, Ordering::SeqCst);
                delay.await;
            }));
        }
        let begin = std::time::Instant::now();
        while started.load(Ordering::SeqCst) < tasks as usize {
            assert!(
                begin.elapsed() < Duration::from_secs(10),
                "tasks did not start"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(rt);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            tasks as usize,
            "every future was dropped"
        );
    }
}
