//! `time::advance` while worker 0 is processing timers itself (its per-turn check or an
//! auto-advance): the advance must still complete only after every timer due by then has
//! fired and been woken, and the two must not livelock. Each test runs under a watchdog, so a
//! hang fails it instead of stalling the suite.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use escapement::time::{self, sleep_until, Instant, Sleep};
use escapement::Runtime;

fn paused(workers: usize) -> Runtime {
    escapement::Builder::new()
        .worker_threads(workers)
        .start_paused(true)
        .build()
        .expect("a paused runtime")
}

/// Runs `body` on its own thread and fails if it takes longer than `limit` (a hang).
fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(panic::catch_unwind(AssertUnwindSafe(body)));
    });
    match outcome.recv_timeout(limit) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("hung for more than {limit:?}"),
    }
}

/// A waker that counts its wakes.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl CountingWaker {
    fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Registers a sleep until `deadline` with `waker`.
fn register(deadline: Instant, waker: &Waker) -> Pin<Box<Sleep>> {
    let mut sleep = Box::pin(sleep_until(deadline));
    assert_eq!(
        sleep.as_mut().poll(&mut Context::from_waker(waker)),
        Poll::Pending
    );
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

/// A waker that takes a while (as one that unparks a thread or takes a contended lock
/// may), then counts its wake.
struct SlowWaker(AtomicUsize);

impl Wake for SlowWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_micros(100) {
            std::hint::spin_loop();
        }
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The same race left to chance: worker 0 checks for due timers at every turn, and with all
/// workers busy it may take some of the timers an `advance` made due and wake them itself.
/// The advance must still not complete before every one of them is woken.
#[test]
fn advance_completes_only_after_waking_due_timers_even_while_workers_are_busy() {
    let late = within(Duration::from_secs(30), || {
        let rt = paused(4);
        let stop = Arc::new(AtomicBool::new(false));
        let spinners: Vec<_> = (0..8)
            .map(|_| {
                let stop = stop.clone();
                rt.spawn(async move {
                    while !stop.load(Ordering::SeqCst) {
                        escapement::task::yield_now().await;
                    }
                })
            })
            .collect();
        let late = rt.block_on(async {
            let mut late = Vec::new();
            for round in 0..150u64 {
                let now = Instant::now();
                let timers: Vec<(Pin<Box<Sleep>>, Arc<SlowWaker>)> = (0..40u64)
                    .map(|k| {
                        let counter = Arc::new(SlowWaker(AtomicUsize::new(0)));
                        let deadline = now + Duration::from_micros(1 + (round + k) * 37 % 2_000);
                        (register(deadline, &Waker::from(counter.clone())), counter)
                    })
                    .collect();
                time::advance(Duration::from_millis(2)).await;
                let woken = timers
                    .iter()
                    .filter(|(_, counter)| counter.0.load(Ordering::SeqCst) == 1)
                    .count();
                if woken < timers.len() {
                    late.push((round, woken));
                }
            }
            late
        });
        stop.store(true, Ordering::SeqCst);
        for spinner in spinners {
            rt.block_on(spinner).expect("the spinner stops");
        }
        late
    });
    assert!(
        late.is_empty(),
        "advance returned before every due timer was woken, (round, woken of 40): {late:?}"
    );
}
