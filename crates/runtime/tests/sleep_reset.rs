//! `Sleep::reset`: before the first poll (which arms the timer, as in tokio), to an earlier
//! deadline, to a later one (the lock-free path: the timer must not fire, nor its waker be
//! woken, at the old deadline, and the driver does not walk it there either), after the timer
//! fired (it is armed again), after it fired but before it was polled, and into the past
//! (completes at the next poll, also within the tick it was armed for). Exact times through
//! the paused clock.

mod support;

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use escapement::time::{self, sleep, sleep_until, Duration, Instant};

use support::{paused, poll_once, CountingWaker};

#[test]
fn reset_before_the_first_poll_uses_the_new_deadline() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_secs(10)));
        delay.as_mut().reset(start + Duration::from_millis(40));
        assert_eq!(delay.deadline(), start + Duration::from_millis(40));
        delay.await;
        assert_eq!(start.elapsed(), Duration::from_millis(40));
    });
}

#[test]
fn reset_before_the_first_poll_arms_the_timer() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_secs(10)));
        delay.as_mut().reset(start + Duration::from_millis(40));
        time::advance(Duration::from_millis(39)).await;
        assert!(!delay.is_elapsed(), "not before the new deadline");
        time::advance(Duration::from_millis(1)).await;
        assert!(
            delay.is_elapsed(),
            "fired at the new deadline without a poll"
        );
        let (counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
        assert_eq!(counter.wakes(), 0);

        // Into the past: elapsed at once.
        let mut past = pin!(sleep(Duration::from_secs(10)));
        past.as_mut().reset(start);
        assert!(past.is_elapsed());
        assert_eq!(poll_once(past.as_mut(), &waker), Poll::Ready(()));

        // Never polled nor reset: not elapsed, as the timer is not registered.
        let unregistered = sleep_until(start);
        assert!(!unregistered.is_elapsed());
    });
}

#[test]
fn a_sleep_reset_before_its_first_poll_wakes_the_waker_of_that_poll() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_secs(10)));
        delay.as_mut().reset(start + Duration::from_millis(20));
        let (counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        time::advance(Duration::from_millis(20)).await;
        assert_eq!(counter.wakes(), 1);
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
    });
}

#[test]
fn reset_to_an_earlier_deadline_fires_then() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            let mut delay = pin!(sleep(Duration::from_secs(10)));
            let (counter, waker) = CountingWaker::waker();
            assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
            delay.as_mut().reset(start + Duration::from_millis(25));
            time::advance(Duration::from_millis(24)).await;
            assert_eq!(counter.wakes(), 0, "not before the new deadline");
            time::advance(Duration::from_millis(1)).await;
            assert_eq!(counter.wakes(), 1, "woken at the new deadline");
            assert!(delay.is_elapsed());
            assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
        });
    }
}

#[test]
fn reset_to_a_later_deadline_does_not_fire_at_the_old_one() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            let mut delay = pin!(sleep(Duration::from_millis(100)));
            let (counter, waker) = CountingWaker::waker();
            assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
            delay.as_mut().reset(start + Duration::from_millis(300));
            time::advance(Duration::from_millis(100)).await;
            assert_eq!(counter.wakes(), 0, "the old deadline passed silently");
            assert!(!delay.is_elapsed());
            assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
            time::advance(Duration::from_millis(199)).await;
            assert_eq!(counter.wakes(), 0);
            time::advance(Duration::from_millis(1)).await;
            assert_eq!(counter.wakes(), 1);
            assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
            assert_eq!(start.elapsed(), Duration::from_millis(300));
        });
    }
}

#[test]
fn repeated_later_resets_fire_once_at_the_last_deadline() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_millis(10)));
        let (counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        for step in 1..=50u64 {
            delay
                .as_mut()
                .reset(start + Duration::from_millis(10 + 7 * step));
        }
        delay.as_mut().await;
        assert_eq!(start.elapsed(), Duration::from_millis(360));
        assert!(counter.wakes() <= 1);
    });
}

#[test]
fn a_timer_pushed_back_at_every_step_is_walked_per_slot_not_per_old_deadline() {
    // Two connections' retransmission timers: 200 ms ahead, pushed back by every
    // acknowledgement, here one each 100 ms, for 10 s. (Two, so that their slot holds more
    // than one node, which the wheel would otherwise skip through at once.) Every reset is
    // later, so it takes no lock and each node stays where it is until the driver walks it;
    // the wheel then places it for the new deadline.
    let rt = paused(1);
    let cascades = rt.block_on(async {
        let before = escapement::Handle::current().metrics().wheel_cascades();
        let rto = Duration::from_millis(200);
        let mut first = pin!(sleep(rto));
        let mut second = pin!(sleep(rto));
        let (counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(first.as_mut(), &waker), Poll::Pending);
        assert_eq!(poll_once(second.as_mut(), &waker), Poll::Pending);
        for _ in 0..100 {
            time::advance(Duration::from_millis(100)).await;
            first.as_mut().reset(Instant::now() + rto);
            second.as_mut().reset(Instant::now() + rto);
        }
        assert_eq!(counter.wakes(), 0, "no old deadline woke a task");
        let cascades = escapement::Handle::current().metrics().wheel_cascades() - before;
        let last = Instant::now();
        first.as_mut().await;
        second.as_mut().await;
        assert_eq!(last.elapsed(), rto, "fired at the last deadline");
        cascades
    });
    // Each reset moves the deadlines two or three level-1 slots (64 ms) ahead, and the nodes
    // are walked as their slot comes up: one cascade per 100 ms step (99 here). Walked again
    // at each old deadline, a level-0 slot, it would be about two (192 when the wheel did).
    assert!(
        cascades <= 110,
        "{cascades} cascades over 100 steps: the old deadlines were walked too"
    );
}

#[test]
fn reset_after_completion_arms_the_timer_again() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_millis(10)));
        delay.as_mut().await;
        assert!(delay.is_elapsed());
        delay.as_mut().reset(start + Duration::from_millis(50));
        assert!(!delay.is_elapsed(), "armed again");
        delay.as_mut().await;
        assert_eq!(start.elapsed(), Duration::from_millis(50));
        // The waker registered before the reset is the one woken when it fires.
        let (counter, waker) = CountingWaker::waker();
        delay
            .as_mut()
            .reset(Instant::now() + Duration::from_millis(5));
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        time::advance(Duration::from_millis(5)).await;
        assert_eq!(counter.wakes(), 1);
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
    });
}

#[test]
fn reset_after_firing_but_before_the_poll_waits_for_the_new_deadline() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_millis(10)));
        let (counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        time::advance(Duration::from_millis(10)).await;
        assert_eq!(counter.wakes(), 1, "fired");
        delay.as_mut().reset(start + Duration::from_millis(30));
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        time::advance(Duration::from_millis(20)).await;
        assert_eq!(counter.wakes(), 2);
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
    });
}

#[test]
fn reset_into_the_past_completes_at_the_next_poll_on_the_paused_clock() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        time::advance(Duration::from_millis(100)).await;
        let mut delay = pin!(sleep(Duration::from_secs(60)));
        let (_counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        delay.as_mut().reset(start + Duration::from_millis(50));
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(100),
            "the clock did not move"
        );
    });
}

#[test]
fn reset_into_the_past_within_the_armed_tick_completes_at_the_next_poll() {
    let rt = paused(1);
    rt.block_on(async {
        // The paused clock starts on a tick's boundary: both deadlines round up to the tick
        // that ends 1 ms later, and the earlier one has passed when the reset moves there.
        let start = Instant::now();
        let mut delay = pin!(sleep_until(start + Duration::from_micros(900)));
        let (_counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        time::advance(Duration::from_micros(500)).await;
        delay.as_mut().reset(start + Duration::from_micros(200));
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
        assert_eq!(start.elapsed(), Duration::from_micros(500));
    });
}

#[test]
fn reset_into_the_past_completes_at_the_next_poll_on_the_real_clock() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let mut delay = pin!(sleep(Duration::from_secs(60)));
        let (_counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
        // Hold the only worker, which fires the timers, inside a task poll: the timer can
        // then complete at the next poll only if that poll sees the deadline has passed.
        let (held, on_held) = std::sync::mpsc::channel();
        let release = Arc::new(AtomicBool::new(false));
        let holder = {
            let release = release.clone();
            escapement::spawn(async move {
                held.send(()).expect("the test waits");
                while !release.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
            })
        };
        on_held.recv().expect("worker 0 is held");
        std::thread::sleep(Duration::from_millis(30));
        delay
            .as_mut()
            .reset(Instant::now() - Duration::from_millis(10));
        let polled = poll_once(delay.as_mut(), &waker);
        release.store(true, Ordering::SeqCst);
        holder.await.expect("the holder completes");
        assert_eq!(
            polled,
            Poll::Ready(()),
            "Sleep::reset documents that a deadline in the past completes at the next poll"
        );
    });
}

#[test]
fn resets_racing_the_driver_on_the_real_clock_are_never_early_nor_lost() {
    let rt = escapement::Builder::new()
        .worker_threads(3)
        .build()
        .expect("a runtime");
    // Fewer under Miri, which interprets each task's polls and resets.
    let tasks = if cfg!(miri) { 50 } else { 200u64 };
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                escapement::spawn(async move {
                    let mut delay = pin!(sleep(Duration::from_millis(1 + i % 3)));
                    let (_counter, waker) = CountingWaker::waker();
                    let _ = poll_once(delay.as_mut(), &waker);
                    // Move the deadline later or earlier, right around the time the old one
                    // fires.
                    let deadline = if i % 2 == 0 {
                        Instant::now() + Duration::from_millis(4 + i % 5)
                    } else {
                        Instant::now() + Duration::from_micros(200 * (i % 4))
                    };
                    std::thread::sleep(Duration::from_micros(300 * (i % 7)));
                    delay.as_mut().reset(deadline);
                    delay.await;
                    assert!(
                        Instant::now() >= deadline,
                        "fired before the reset deadline"
                    );
                })
            })
            .collect();
        for handle in handles {
            handle.await.expect("no task panicked");
        }
    });
}
