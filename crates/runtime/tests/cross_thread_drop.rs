//! A `Sleep` registered on one thread and dropped on another: while pending, after it fired,
//! after its runtime shut down, and many at once racing the driver as it fires them. Also a
//! `Sleep` polled from one thread and then another (the latest waker is the one woken) and
//! moved, registered, into a task. After each, the runtime's timers still fire on time.

mod support;

use std::pin::Pin;
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::Duration;

use escapement::time::{self, sleep, Instant, Sleep};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use support::{paused, poll_once, running, CountingWaker};

/// Drops `value` on a new thread and waits for that.
fn drop_elsewhere<T: Send + 'static>(value: T) {
    std::thread::spawn(move || drop(value))
        .join()
        .expect("the dropping thread ran");
}

/// Sleeps at several wheel levels each take exactly their duration.
async fn timers_still_fire() {
    for step in [
        Duration::from_millis(2),
        Duration::from_millis(90),
        Duration::from_secs(10),
        Duration::from_secs(4_000),
    ] {
        let start = Instant::now();
        sleep(step).await;
        assert_eq!(start.elapsed(), step);
    }
}

#[test]
fn a_pending_sleep_registered_in_a_task_is_dropped_on_another_thread() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let registered = escapement::spawn(async {
                let mut delay = Box::pin(sleep(Duration::from_secs(3_600)));
                let (_counter, waker) = CountingWaker::waker();
                assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
                // Handed back as a value to drop, not a future to await.
                Some(delay)
            })
            .await
            .expect("the task completes");
            drop_elsewhere(registered.expect("the sleep"));
            timers_still_fire().await;
        });
    }
}

#[test]
fn a_fired_sleep_is_dropped_on_another_thread() {
    let rt = paused(2);
    rt.block_on(async {
        let mut delay = Box::pin(sleep(Duration::from_millis(5)));
        let (counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        time::advance(Duration::from_millis(5)).await;
        assert_eq!(counter.wakes(), 1);
        drop_elsewhere(delay);
        timers_still_fire().await;
    });
}

#[test]
fn a_sleep_is_dropped_on_another_thread_after_its_runtime_shut_down() {
    let rt = running(2);
    let (counter, waker) = CountingWaker::waker();
    let mut delay = {
        let _guard = rt.enter();
        Box::pin(sleep(Duration::from_secs(60)))
    };
    assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
    drop(rt);
    assert_eq!(counter.wakes(), 1, "woken by the shutdown");
    drop_elsewhere(delay);
}

#[test]
fn the_latest_waker_is_woken_when_polled_from_several_threads() {
    let rt = paused(3);
    rt.block_on(async {
        let delay = Box::pin(sleep(Duration::from_millis(50)));
        let (first, first_waker) = CountingWaker::waker();
        let (second, second_waker) = CountingWaker::waker();
        let delay = std::thread::spawn(move || {
            let mut delay = delay;
            assert_eq!(poll_once(delay.as_mut(), &first_waker), Poll::Pending);
            delay
        })
        .join()
        .expect("polled on a second thread");
        let mut delay = std::thread::spawn(move || {
            let mut delay = delay;
            assert_eq!(poll_once(delay.as_mut(), &second_waker), Poll::Pending);
            delay
        })
        .join()
        .expect("polled on a third thread");
        time::advance(Duration::from_millis(50)).await;
        assert_eq!(first.wakes(), 0, "replaced");
        assert_eq!(second.wakes(), 1);
        let (_counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
    });
}

#[test]
fn a_registered_sleep_moved_into_a_task_completes_there() {
    let rt = paused(4);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = Box::pin(sleep(Duration::from_millis(40)));
        let (_counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        let elapsed = escapement::spawn(async move {
            delay.await;
            start.elapsed()
        })
        .await
        .expect("the task completes");
        assert_eq!(elapsed, Duration::from_millis(40));
    });
}

#[test]
fn many_sleeps_dropped_on_other_threads_while_the_driver_fires() {
    let rt = running(4);
    let (sender, receiver) = mpsc::channel::<(u64, Pin<Box<Sleep>>)>();
    let receiver = Arc::new(std::sync::Mutex::new(receiver));
    let droppers: Vec<_> = (0..3)
        .map(|_| {
            let receiver = receiver.clone();
            std::thread::spawn(move || loop {
                let next = receiver.lock().expect("not poisoned").recv();
                let Ok((wait_us, delay)) = next else { break };
                std::thread::sleep(Duration::from_micros(wait_us));
                drop(delay);
            })
        })
        .collect();
    rt.block_on(async {
        let tasks: Vec<_> = (0..2_000u64)
            .map(|seed| {
                let sender = sender.clone();
                escapement::spawn(async move {
                    let mut rng = SmallRng::seed_from_u64(seed);
                    let mut delay =
                        Box::pin(sleep(Duration::from_micros(rng.random_range(0..4_000))));
                    let (_counter, waker) = CountingWaker::waker();
                    let _ = poll_once(delay.as_mut(), &waker);
                    // Dropped somewhere else, around the time it fires.
                    sender
                        .send((rng.random_range(0..4_000), delay))
                        .expect("the droppers live");
                    // Meanwhile this task's own sleep must not be early.
                    let own = Duration::from_micros(rng.random_range(0..3_000));
                    let start = std::time::Instant::now();
                    sleep(own).await;
                    assert!(start.elapsed() >= own, "early by the real clock");
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("no task panicked");
        }
    });
    drop(sender);
    for dropper in droppers {
        dropper.join().expect("the dropper ran");
    }
    rt.block_on(async {
        let start = std::time::Instant::now();
        sleep(Duration::from_millis(10)).await;
        assert!(start.elapsed() >= Duration::from_millis(10));
    });
}
