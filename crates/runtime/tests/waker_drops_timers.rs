//! A waker may drop or create timers while the driver wakes it: the driver wakes outside its
//! lock, in batches. A waker that drops 100 registered timers (due at the same tick, in the
//! batches after its own, and later) must neither deadlock nor let a dropped timer fire
//! later; a waker that registers new timers gets them fired on time. Checked when the timers
//! fire from `advance`, from auto-advance (worker 0), and on the real clock.

mod support;

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

use escapement::time::{self, sleep, sleep_until, Instant, Sleep};
use escapement::Handle;

use support::{paused, poll_once, CountingWaker};

/// When woken, drops every timer in `victims`.
struct DroppingWaker {
    victims: Mutex<Vec<Pin<Box<Sleep>>>>,
    wakes: AtomicUsize,
}

impl Wake for DroppingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let victims = std::mem::take(&mut *self.victims.lock().expect("not poisoned"));
        drop(victims);
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// The victims of a `DroppingWaker` and their wakers' counters.
struct Setup {
    dropper: Arc<DroppingWaker>,
    /// Holds the dropping waker's sleep, due at `due`.
    trigger: Pin<Box<Sleep>>,
    /// Victims due at the trigger's tick, in the wake batches after the trigger's.
    same_tick: Vec<Arc<CountingWaker>>,
    /// Victims due later.
    later: Vec<Arc<CountingWaker>>,
}

/// Registers the trigger (due at `due`) first, then 100 victims: 60 due at the same instant,
/// 40 at later ones up to an hour on.
fn setup(due: Instant) -> Setup {
    let dropper = Arc::new(DroppingWaker {
        victims: Mutex::new(Vec::new()),
        wakes: AtomicUsize::new(0),
    });
    let mut trigger = Box::pin(sleep_until(due));
    assert_eq!(
        poll_once(trigger.as_mut(), &Waker::from(dropper.clone())),
        Poll::Pending
    );
    let mut same_tick = Vec::new();
    let mut later = Vec::new();
    let mut victims = Vec::new();
    for i in 0..100u64 {
        let deadline = if i < 60 {
            due
        } else {
            due + Duration::from_millis(1 + (i - 60) * 90_000)
        };
        let mut victim = Box::pin(sleep_until(deadline));
        let (counter, waker) = CountingWaker::waker();
        assert_eq!(poll_once(victim.as_mut(), &waker), Poll::Pending);
        victims.push(victim);
        if i < 60 {
            same_tick.push(counter);
        } else {
            later.push(counter);
        }
    }
    *dropper.victims.lock().expect("not poisoned") = victims;
    Setup {
        dropper,
        trigger,
        same_tick,
        later,
    }
}

/// After the trigger fired: its waker ran once, and dropped victims never fire, except the
/// ones that were already fired in the trigger's own wake batch.
fn check_after_trigger(setup: &Setup) {
    assert_eq!(setup.dropper.wakes.load(Ordering::SeqCst), 1);
    assert!(setup.trigger.is_elapsed());
    assert!(setup
        .dropper
        .victims
        .lock()
        .expect("not poisoned")
        .is_empty());
    let same_tick_wakes: usize = setup.same_tick.iter().map(|c| c.wakes()).sum();
    assert!(
        same_tick_wakes < 32,
        "{same_tick_wakes} victims were woken after they were dropped"
    );
    assert!(setup.later.iter().all(|c| c.wakes() == 0));
}

#[test]
fn dropping_timers_inside_a_wake_from_advance() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let setup = setup(Instant::now() + Duration::from_millis(10));
            time::advance(Duration::from_millis(10)).await;
            check_after_trigger(&setup);
            time::advance(Duration::from_secs(7_200)).await;
            check_after_trigger(&setup);
            let start = Instant::now();
            sleep(Duration::from_millis(15)).await;
            assert_eq!(start.elapsed(), Duration::from_millis(15));
        });
    }
}

#[test]
fn dropping_timers_inside_a_wake_from_auto_advance() {
    for workers in [1, 3] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            let setup = setup(start + Duration::from_millis(10));
            sleep(Duration::from_millis(20)).await;
            assert_eq!(start.elapsed(), Duration::from_millis(20));
            check_after_trigger(&setup);
            sleep(Duration::from_secs(7_200)).await;
            check_after_trigger(&setup);
        });
    }
}

#[test]
fn dropping_timers_inside_a_wake_on_the_real_clock() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let setup = {
        let _guard = rt.enter();
        setup(Instant::now() + Duration::from_millis(20))
    };
    let begin = std::time::Instant::now();
    while setup.dropper.wakes.load(Ordering::SeqCst) == 0 {
        assert!(
            begin.elapsed() < Duration::from_secs(10),
            "the trigger never fired"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    check_after_trigger(&setup);
    rt.block_on(async { sleep(Duration::from_millis(5)).await });
    check_after_trigger(&setup);
}

/// Timers made by a `CreatingWaker`: deadline, timer, and the counter of its waker.
type Created = Vec<(Instant, Pin<Box<Sleep>>, Arc<CountingWaker>)>;

/// When woken, registers new timers `offsets` after now, each with its own counting waker.
struct CreatingWaker {
    handle: Handle,
    offsets: Vec<Duration>,
    created: Mutex<Created>,
}

impl Wake for CreatingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let _guard = self.handle.enter();
        let now = Instant::now();
        // A failed assertion of the test poisons the lock; do not turn it into a panic on a
        // worker thread.
        let mut created = self.created.lock().unwrap_or_else(PoisonError::into_inner);
        for &offset in &self.offsets {
            let deadline = now + offset;
            let mut timer = Box::pin(sleep_until(deadline));
            let (counter, waker) = CountingWaker::waker();
            let _ = poll_once(timer.as_mut(), &waker);
            created.push((deadline, timer, counter));
        }
    }
}

#[test]
fn timers_created_inside_a_wake_fire_on_time() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            let creator = Arc::new(CreatingWaker {
                handle: Handle::current(),
                offsets: (0..50).map(|i| Duration::from_millis(i * 3)).collect(),
                created: Mutex::new(Vec::new()),
            });
            // Several triggers due at one tick, so the creator may run between batches.
            let mut triggers: Vec<Pin<Box<Sleep>>> = (0..40)
                .map(|_| Box::pin(sleep(Duration::from_millis(10))))
                .collect();
            for trigger in &mut triggers {
                let _ = poll_once(trigger.as_mut(), &Waker::from(creator.clone()));
            }
            time::advance(Duration::from_millis(10)).await;
            // Registering from a wake wakes worker 0, which may fire some of the triggers
            // itself and still be running their wakers now (`paused_advance_race.rs` is that
            // bug); wait for all 40, so this test checks only what the wakers created.
            let begin = std::time::Instant::now();
            while creator.created.lock().expect("not poisoned").len() < 40 * 50 {
                assert!(
                    begin.elapsed() < Duration::from_secs(10),
                    "a trigger never fired"
                );
                escapement::task::yield_now().await;
            }
            let now = start + Duration::from_millis(10);
            {
                let created = creator.created.lock().expect("not poisoned");
                for (deadline, timer, counter) in created.iter() {
                    let due = *deadline <= now;
                    assert_eq!(timer.is_elapsed(), due);
                    assert_eq!(counter.wakes(), 0, "a timer woken as it was created");
                }
            }
            for step in 1..=150u64 {
                time::advance(Duration::from_millis(1)).await;
                let now = start + Duration::from_millis(10 + step);
                let created = creator.created.lock().expect("not poisoned");
                for (deadline, timer, counter) in created.iter() {
                    if *deadline > start + Duration::from_millis(10) {
                        assert_eq!(counter.wakes(), usize::from(*deadline <= now));
                        assert_eq!(timer.is_elapsed(), *deadline <= now);
                    }
                }
            }
        });
    }
}
