//! Timers keep firing while worker 0, which drives them, is stuck in a long poll: another
//! worker, or a thread in `block_on` when every worker is stuck, notices the overdue wheel
//! and fires what is due, also a timer registered after every other thread went to sleep,
//! by worker 0 before the poll or from outside the runtime.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};

use escapement::time::{sleep, Duration, Instant};

/// How long worker 0 stays blocked.
const BLOCKED: Duration = Duration::from_millis(400);

#[test]
fn a_timer_fires_on_time_while_worker0_is_blocked() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let took = rt.block_on(async {
        // Spawn until a task lands on worker 0; that one blocks its thread.
        let blocking = Arc::new(AtomicBool::new(false));
        while !blocking.load(Ordering::SeqCst) {
            let flag = blocking.clone();
            let probe = escapement::spawn(async move {
                if std::thread::current().name() == Some("escapement-worker-0") {
                    flag.store(true, Ordering::SeqCst);
                    std::thread::sleep(BLOCKED);
                }
            });
            while !blocking.load(Ordering::SeqCst) && !probe.is_finished() {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        // Worker 0 is blocked now: this sleep runs on the other worker.
        escapement::spawn(async {
            let start = Instant::now();
            sleep(Duration::from_millis(10)).await;
            start.elapsed()
        })
        .await
        .unwrap()
    });
    assert!(took >= Duration::from_millis(10));
    // Without a stand-in the sleep would last until worker 0 came back, 400 ms. The bound is
    // generous so a loaded machine does not fail it; the benchmark measures the real figure.
    assert!(
        took < BLOCKED / 2,
        "sleep(10ms) took {took:?} with worker 0 blocked"
    );
}

/// A thread in `block_on` is the only one left to stand in when every worker is stuck: it
/// must not count on worker 0 for its timer just because worker 0 was still parked when
/// the thread looked, with the spawn that will keep it busy already on its way to it.
#[test]
fn block_on_stands_in_when_the_spawn_it_just_made_blocks_worker0() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    for round in 0..8 {
        // Worker 0 parks with nothing to do, then this spawn wakes it into a long poll.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let blocker = rt.spawn(async { std::thread::sleep(STUCK) });
        let took = rt.block_on(async {
            let start = Instant::now();
            sleep(Duration::from_millis(5)).await;
            start.elapsed()
        });
        rt.block_on(blocker).expect("the blocker returns");
        // Without a stand-in the sleep lasts until the blocker returns, 200 ms.
        assert!(
            took < STUCK / 2,
            "round {round}: sleep(5ms) in block_on took {took:?} with worker 0 stuck"
        );
    }
}

/// How long the blocker above keeps worker 0.
const STUCK: Duration = Duration::from_millis(200);

/// A waker that records when it was first woken.
#[derive(Default)]
struct WokenAt(Mutex<Option<std::time::Instant>>);

impl Wake for WokenAt {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut at = self.0.lock().unwrap();
        at.get_or_insert_with(std::time::Instant::now);
    }
}

/// Runs `stuck` in a task on worker 0 of a runtime of two workers, after keeping worker 0
/// busy long enough for the other worker and the `block_on` thread to go to sleep with no
/// timer pending.
fn on_worker0_after_the_others_sleep(stuck: impl Fn(&escapement::Handle) + Send + Sync + 'static) {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let stuck = Arc::new(stuck);
    rt.block_on(async {
        loop {
            let stuck = stuck.clone();
            let ran = escapement::spawn(async move {
                if escapement::runtime::worker_index() != Some(0) {
                    return false;
                }
                std::thread::sleep(std::time::Duration::from_millis(30));
                stuck(&escapement::Handle::current());
                true
            });
            if ran.await.unwrap() {
                break;
            }
        }
    });
}

/// Polls a 10 ms sleep once with a recording waker, then blocks the thread for [`BLOCKED`];
/// returns how long after the poll the waker was woken.
fn sleep_then_block() -> Duration {
    let woken = Arc::new(WokenAt::default());
    let waker = Waker::from(woken.clone());
    let mut timer = pin!(sleep(Duration::from_millis(10)));
    let start = std::time::Instant::now();
    assert!(timer
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    std::thread::sleep(BLOCKED);
    let at = woken
        .0
        .lock()
        .unwrap()
        .expect("the timer fired while the thread was blocked");
    at - start
}

/// A timer that worker 0 registers just before it gets stuck fires on time, though every
/// other thread went to sleep before it existed: one of them is the watch.
#[test]
fn a_timer_worker0_registers_before_it_gets_stuck_fires_while_the_others_sleep() {
    let took = Arc::new(Mutex::new(None));
    let result = took.clone();
    on_worker0_after_the_others_sleep(move |_| {
        *result.lock().unwrap() = Some(sleep_then_block());
    });
    let took = took.lock().unwrap().expect("ran on worker 0");
    assert!(took >= Duration::from_millis(10));
    // Without the watch, the waker is woken when worker 0 comes back, 400 ms later.
    assert!(
        took < BLOCKED / 2,
        "sleep(10ms) fired after {took:?} with worker 0 stuck"
    );
}

/// So does a timer registered from outside the runtime while worker 0 is stuck.
#[test]
fn a_timer_registered_from_outside_while_worker0_is_stuck_fires_while_the_others_sleep() {
    let took = Arc::new(Mutex::new(None));
    let result = took.clone();
    on_worker0_after_the_others_sleep(move |handle| {
        let handle = handle.clone();
        let (registered, block) = std::sync::mpsc::channel();
        let outside = std::thread::spawn(move || {
            let _runtime = handle.enter();
            block.recv().unwrap();
            sleep_then_block()
        });
        registered.send(()).unwrap();
        std::thread::sleep(BLOCKED);
        *result.lock().unwrap() = Some(outside.join().unwrap());
    });
    let took = took.lock().unwrap().expect("ran on worker 0");
    assert!(took >= Duration::from_millis(10));
    assert!(
        took < BLOCKED / 2,
        "sleep(10ms) fired after {took:?} with worker 0 stuck"
    );
}
