//! `time::advance` while worker 0 is processing timers itself (its per-turn check or an
//! auto-advance): the advance must still complete only after every timer due by then has
//! fired and been woken, and the two must not livelock. Wakers that hold worker 0 in the
//! middle of a batch make each interleaving deterministic (they stand for a worker that is
//! merely slow, or preempted, while it wakes). Each test runs under a watchdog, so a hang
//! fails it instead of stalling the suite.

mod support;

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

use escapement::time::{self, sleep_until, Instant, Sleep};

use support::{paused, poll_once, within, CountingWaker};

/// Registers a sleep until `deadline` with `waker`.
fn register(deadline: Instant, waker: &Waker) -> Pin<Box<Sleep>> {
    let mut sleep = Box::pin(sleep_until(deadline));
    assert_eq!(poll_once(sleep.as_mut(), waker), Poll::Pending);
    sleep
}

/// Registers `count` sleeps until `deadline` with counting wakers.
fn register_counted(deadline: Instant, count: usize) -> Vec<(Pin<Box<Sleep>>, Arc<CountingWaker>)> {
    (0..count)
        .map(|_| {
            let counter = Arc::new(CountingWaker::default());
            (register(deadline, &Waker::from(counter.clone())), counter)
        })
        .collect()
}

/// Woken by worker 0 as it fires the first timer of T1: tells the test, then holds worker 0
/// in the middle of that firing until released.
struct HoldWorker0 {
    woken: Mutex<Option<futures::channel::oneshot::Sender<()>>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl Wake for HoldWorker0 {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(woken) = self.woken.lock().expect("not poisoned").take() {
            let _ = woken.send(());
            let _ = self.release.lock().expect("not poisoned").recv();
        }
    }
}

/// Woken by the advance as it fires the first timer of T2: lets worker 0 go on, and gives it
/// time to take the driver's lock before the advance does.
struct ReleaseWorker0(Mutex<Option<mpsc::Sender<()>>>);

impl Wake for ReleaseWorker0 {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(release) = self.0.lock().expect("not poisoned").take() {
            let _ = release.send(());
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A deterministic interleaving: worker 0 auto-advances to T1 and fires its 40 timers in
/// batches; between two of its batches, an `advance` to T2 fires part of T2's 100 timers and
/// leaves the rest in the wheel's due list; then worker 0 resumes with its stale tick T1.
/// Every timer must fire once and the advance must complete.
#[test]
fn an_advance_interleaved_with_worker_0s_own_firing_completes() {
    within(Duration::from_secs(30), || {
        let rt = paused(2);
        rt.block_on(async {
            let start = Instant::now();
            let t1 = start + Duration::from_millis(10);
            let t2 = start + Duration::from_millis(20);
            let (woken, on_woken) = futures::channel::oneshot::channel();
            let (release, on_release) = mpsc::channel();
            let hold = Arc::new(HoldWorker0 {
                woken: Mutex::new(Some(woken)),
                release: Mutex::new(on_release),
            });
            let _held = register(t1, &Waker::from(hold.clone()));
            let at_t1 = register_counted(t1, 39);
            // Idle: worker 0 auto-advances to T1 and is held inside its firing.
            on_woken
                .await
                .expect("worker 0 fired the first timer of T1");
            assert_eq!(Instant::now(), t1);

            let releaser = Arc::new(ReleaseWorker0(Mutex::new(Some(release))));
            let _releasing = register(t2, &Waker::from(releaser));
            let at_t2 = register_counted(t2, 99);
            time::advance(Duration::from_millis(10)).await;

            assert_eq!(Instant::now(), t2);
            for (sleep, counter) in at_t1.iter().chain(&at_t2) {
                assert!(sleep.is_elapsed());
                assert_eq!(counter.wakes(), 1);
            }
        });
    });
}

/// Woken by worker 0 as it fires a batch: tells the test, then holds worker 0 in the middle
/// of waking that batch until `release` is set.
struct HoldUntilReleased {
    woken: Mutex<Option<futures::channel::oneshot::Sender<()>>>,
    release: Arc<AtomicBool>,
}

impl Wake for HoldUntilReleased {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(woken) = self.woken.lock().expect("not poisoned").take() {
            let _ = woken.send(());
            while !self.release.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Worker 0 auto-advances to T and takes all of T's timers in one batch; its first waker
/// holds it there, before it has woken the other 31. An `advance` now finds nothing left to
/// fire, but it must not complete before those 31 are woken: it waits for worker 0, which a
/// helper thread lets go 200 ms after the advance started.
#[test]
fn an_advance_waits_for_timers_worker_0_is_still_waking() {
    within(Duration::from_secs(30), || {
        let rt = paused(2);
        rt.block_on(async {
            let t = Instant::now() + Duration::from_millis(10);
            let (woken, on_woken) = futures::channel::oneshot::channel();
            let release = Arc::new(AtomicBool::new(false));
            let hold = Arc::new(HoldUntilReleased {
                woken: Mutex::new(Some(woken)),
                release: release.clone(),
            });
            let _held = register(t, &Waker::from(hold));
            let at_t = register_counted(t, 31);
            on_woken.await.expect("worker 0 fired the first timer of T");
            assert_eq!(Instant::now(), t);

            let releaser = {
                let release = release.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(200));
                    release.store(true, Ordering::SeqCst);
                })
            };
            time::advance(Duration::from_millis(1)).await;
            let woken = at_t
                .iter()
                .filter(|(_, counter)| counter.wakes() == 1)
                .count();
            release.store(true, Ordering::SeqCst);
            releaser.join().expect("the releaser ran");
            assert_eq!(
                woken, 31,
                "advance completed before the timers due at T were woken"
            );
        });
    });
}
