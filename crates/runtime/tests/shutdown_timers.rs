//! Timers across a runtime's shutdown: dropping the runtime wakes the sleeps held outside its
//! tasks, without firing them; a `Sleep` polled after its runtime shut down panics (as
//! `Sleep`'s docs say) unless it had already fired or its deadline has passed, and so do a
//! `Timeout` and an `Interval` waiting on one; and the thread dropping a runtime cancels the
//! tasks left before it shuts the timers down, so a future's `Drop` may still use one. (The
//! rest of the shutdown is in `shutdown.rs`.)

mod support;

use std::future::pending;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use escapement::time::{sleep, Sleep};

use support::{paused, poll_once, running, CountingWaker};

#[test]
fn shutdown_wakes_sleeps_held_outside_the_tasks() {
    let rt = running(2);
    let (counter, waker) = CountingWaker::waker();
    let sleeps: Vec<Pin<Box<Sleep>>> = {
        let _guard = rt.enter();
        (0..100u64)
            .map(|i| {
                let mut delay = Box::pin(sleep(Duration::from_secs(60 + i)));
                assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
                delay
            })
            .collect()
    };
    drop(rt);
    assert_eq!(counter.wakes(), 100, "every pending sleep was woken");
    assert!(sleeps.iter().all(|delay| !delay.is_elapsed()), "none fired");
    drop(sleeps);
}

#[test]
#[should_panic(expected = "polled after the escapement runtime that created it shut down")]
fn polling_a_pending_sleep_after_shutdown_panics() {
    let rt = running(1);
    let (_counter, waker) = CountingWaker::waker();
    let mut delay = {
        let _guard = rt.enter();
        Box::pin(sleep(Duration::from_secs(60)))
    };
    assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Pending);
    drop(rt);
    let _ = poll_once(delay.as_mut(), &waker);
}

#[test]
#[should_panic(expected = "polled after the escapement runtime that created it shut down")]
fn waiting_for_an_interval_tick_after_shutdown_panics() {
    let rt = running(1);
    let (_counter, waker) = CountingWaker::waker();
    let mut ticks = {
        let _guard = rt.enter();
        escapement::time::interval(Duration::from_secs(3600))
    };
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(
        ticks.poll_tick(&mut cx).is_ready(),
        "the first tick is at once"
    );
    assert!(ticks.poll_tick(&mut cx).is_pending());
    drop(rt);
    let _ = ticks.poll_tick(&mut cx);
}

#[test]
#[should_panic(expected = "polled after the escapement runtime that created it shut down")]
fn polling_a_pending_timeout_after_shutdown_panics() {
    let rt = running(1);
    let (_counter, waker) = CountingWaker::waker();
    let mut guarded = {
        let _guard = rt.enter();
        Box::pin(escapement::time::timeout(
            Duration::from_secs(60),
            pending::<()>(),
        ))
    };
    assert!(poll_once(guarded.as_mut(), &waker).is_pending());
    drop(rt);
    let _ = poll_once(guarded.as_mut(), &waker);
}

#[test]
#[should_panic(expected = "polled after the escapement runtime that created it shut down")]
fn polling_a_never_polled_sleep_after_shutdown_panics() {
    let rt = running(1);
    let (_counter, waker) = CountingWaker::waker();
    let mut delay = {
        let _guard = rt.enter();
        Box::pin(sleep(Duration::from_secs(60)))
    };
    drop(rt);
    let _ = poll_once(delay.as_mut(), &waker);
}

#[test]
fn a_sleep_that_fired_before_shutdown_stays_ready() {
    let rt = paused(1);
    let (_counter, waker) = CountingWaker::waker();
    let mut delay = {
        let _guard = rt.enter();
        Box::pin(sleep(Duration::from_millis(5)))
    };
    rt.block_on(delay.as_mut());
    drop(rt);
    assert!(delay.is_elapsed());
    assert_eq!(poll_once(delay.as_mut(), &waker), Poll::Ready(()));
}

#[test]
fn timers_first_polled_after_their_deadline_and_the_shutdown_complete() {
    let rt = paused(1);
    let (_counter, waker) = CountingWaker::waker();
    let (mut past, mut ticks) = {
        let _guard = rt.enter();
        let past = Box::pin(escapement::time::sleep_until(
            escapement::time::Instant::now(),
        ));
        (past, escapement::time::interval(Duration::from_secs(3600)))
    };
    drop(rt);
    assert_eq!(poll_once(past.as_mut(), &waker), Poll::Ready(()));
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(ticks.poll_tick(&mut cx).is_ready(), "the first tick is due");
}

/// On the real clock: a `sleep(d)` first polled after its deadline, and one polled once
/// before the shutdown, complete once their deadline has passed, as they would have fired.
#[test]
fn sleeps_polled_after_the_shutdown_and_their_deadline_complete() {
    let rt = running(1);
    let (_counter, waker) = CountingWaker::waker();
    let (mut never_polled, mut polled) = {
        let _guard = rt.enter();
        (
            Box::pin(sleep(Duration::from_millis(10))),
            Box::pin(sleep(Duration::from_millis(10))),
        )
    };
    assert_eq!(poll_once(polled.as_mut(), &waker), Poll::Pending);
    drop(rt);
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert!(polled.is_elapsed(), "its deadline has passed");
    assert_eq!(poll_once(never_polled.as_mut(), &waker), Poll::Ready(()));
    assert_eq!(poll_once(polled.as_mut(), &waker), Poll::Ready(()));
    assert!(never_polled.is_elapsed());
    // And again: a future that completed stays complete.
    assert_eq!(poll_once(never_polled.as_mut(), &waker), Poll::Ready(()));
    assert_eq!(poll_once(polled.as_mut(), &waker), Poll::Ready(()));
}

/// Polls a new sleep once when dropped, and says whether that panicked.
struct PollsASleepOnDrop(Arc<AtomicBool>, std::sync::mpsc::Sender<bool>);

impl Drop for PollsASleepOnDrop {
    fn drop(&mut self) {
        let panicked = std::panic::catch_unwind(|| {
            let (_wakes, waker) = CountingWaker::waker();
            let timer = std::pin::pin!(sleep(Duration::from_millis(1)));
            poll_once(timer, &waker)
        })
        .is_err();
        self.0.store(true, Ordering::SeqCst);
        let _ = self.1.send(panicked);
    }
}

/// The thread dropping a runtime cancels the tasks left (a current-thread runtime's, with no
/// `block_on` running) before it wakes the timers, so a future's `Drop` that uses a timer
/// still finds the driver up, as a worker's cancelling does and as on tokio.
#[test]
fn tasks_cancelled_by_the_dropping_thread_drop_before_the_timers_shut_down() {
    let rt = escapement::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let dropped = Arc::new(AtomicBool::new(false));
    let (panicked, did_it_panic) = std::sync::mpsc::channel();
    let guard = PollsASleepOnDrop(dropped.clone(), panicked);
    rt.block_on(async {
        drop(escapement::spawn(async move {
            let _guard = guard;
            pending::<()>().await;
        }));
        escapement::task::yield_now().await;
    });
    drop(rt);
    assert!(dropped.load(Ordering::SeqCst), "the task was dropped");
    assert!(
        !did_it_panic.recv().unwrap(),
        "the sleep polled in the task's drop panicked: the driver was already shut down"
    );
}
