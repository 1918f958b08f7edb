//! A waker may drop or create timers while the driver wakes it: the driver wakes outside its
//! lock, in batches. A waker that drops 200 registered timers (due at the same tick, in the
//! batches after its own, and later) must neither deadlock nor let a dropped timer fire
//! later; a waker that registers new timers gets them fired on time. Checked when the timers
//! fire from `advance`, from auto-advance (worker 0), and on the real clock.

mod support;

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

use escapement::time::{self, sleep, sleep_until, Instant, Sleep};
use escapement::Handle;

use support::{paused, poll_once, CountingWaker};

/// When woken, drops every timer in `victims`, then marks `after_drop`.
struct DroppingWaker {
    victims: Mutex<Vec<Pin<Box<Sleep>>>>,
    wakes: AtomicUsize,
    after_drop: Arc<AfterDrop>,
}

/// Whether the trigger's waker has dropped the victims, and how many victims were woken after
/// that.
#[derive(Default)]
struct AfterDrop {
    dropped: AtomicBool,
    late: AtomicUsize,
}

/// A victim's waker: counts its wakes, and those after the victims were dropped.
struct VictimWaker {
    wakes: AtomicUsize,
    after_drop: Arc<AfterDrop>,
}

impl Wake for VictimWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        if self.after_drop.dropped.load(Ordering::SeqCst) {
            self.after_drop.late.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Wake for DroppingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let victims = std::mem::take(&mut *self.victims.lock().expect("not poisoned"));
        drop(victims);
        self.after_drop.dropped.store(true, Ordering::SeqCst);
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// The victims of a `DroppingWaker` and their wakers' counters.
struct Setup {
    dropper: Arc<DroppingWaker>,
    /// Holds the dropping waker's sleep, due at `due`.
    trigger: Pin<Box<Sleep>>,
    /// Victims due at the trigger's tick, in the wake batches after the trigger's.
    same_tick: Vec<Arc<VictimWaker>>,
    /// Victims due later.
    later: Vec<Arc<VictimWaker>>,
}

/// Registers the trigger (due at `due`) first, then 200 victims: 160 due at the same instant,
/// 40 at later ones up to an hour on.
fn setup(due: Instant) -> Setup {
    let dropper = Arc::new(DroppingWaker {
        victims: Mutex::new(Vec::new()),
        wakes: AtomicUsize::new(0),
        after_drop: Arc::default(),
    });
    let mut trigger = Box::pin(sleep_until(due));
    assert_eq!(
        poll_once(trigger.as_mut(), &Waker::from(dropper.clone())),
        Poll::Pending
    );
    let mut same_tick = Vec::new();
    let mut later = Vec::new();
    let mut victims = Vec::new();
    for i in 0..200u64 {
        let deadline = if i < 160 {
            due
        } else {
            due + Duration::from_millis(1 + (i - 160) * 90_000)
        };
        let mut victim = Box::pin(sleep_until(deadline));
        let counter = Arc::new(VictimWaker {
            wakes: AtomicUsize::new(0),
            after_drop: dropper.after_drop.clone(),
        });
        let waker = Waker::from(counter.clone());
        assert_eq!(poll_once(victim.as_mut(), &waker), Poll::Pending);
        victims.push(victim);
        if i < 160 {
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

/// The driver's wake batch: a firing thread takes at most this many timers out of the wheel
/// under its lock, then wakes them after releasing it.
const WAKE_BATCH: usize = 32;

/// Threads that may fire the trigger's tick at once: worker 0, and the caller of `advance`
/// or auto-advance on the paused clock, or a worker standing in for worker 0 on the real one.
const FIRING_THREADS: usize = 2;

/// After the trigger fired: its waker ran once, and no dropped victim was woken afterwards
/// unless a firing thread had taken it out of the wheel before the drop: the rest of the
/// trigger's own batch, and at most one batch another firing thread held at that moment
/// (each wakes its batch before it takes the next). Victims of the trigger's tick may have
/// fired before the drop, if another thread got to them first. On a `paused` clock, which
/// stands at the trigger's tick, no victim due later was woken. Returns how many victims of
/// the trigger's tick were woken.
fn check_after_trigger(setup: &Setup, paused: bool) -> usize {
    assert_eq!(setup.dropper.wakes.load(Ordering::SeqCst), 1);
    assert!(setup.trigger.is_elapsed());
    assert!(setup
        .dropper
        .victims
        .lock()
        .expect("not poisoned")
        .is_empty());
    let late = setup.dropper.after_drop.late.load(Ordering::SeqCst);
    assert!(
        late < FIRING_THREADS * WAKE_BATCH,
        "{late} victims were woken after they were dropped"
    );
    let wakes = |victims: &[Arc<VictimWaker>]| -> usize {
        victims.iter().map(|v| v.wakes.load(Ordering::SeqCst)).sum()
    };
    if paused {
        assert_eq!(wakes(&setup.later), 0, "a victim due later was woken");
    }
    wakes(&setup.same_tick)
}

#[test]
fn dropping_timers_inside_a_wake_from_advance() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let setup = setup(Instant::now() + Duration::from_millis(10));
            time::advance(Duration::from_millis(10)).await;
            let woken = check_after_trigger(&setup, true);
            time::advance(Duration::from_secs(7_200)).await;
            assert_eq!(
                check_after_trigger(&setup, true),
                woken,
                "a dropped victim fired later"
            );
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
            let woken = check_after_trigger(&setup, true);
            sleep(Duration::from_secs(7_200)).await;
            assert_eq!(
                check_after_trigger(&setup, true),
                woken,
                "a dropped victim fired later"
            );
        });
    }
}

#[test]
fn dropping_timers_inside_a_wake_on_the_real_clock() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    // `setup` asserts that each of its 201 first polls is pending: the lead leaves a loaded
    // machine room to make them all before the trigger is due.
    let setup = {
        let _guard = rt.enter();
        setup(Instant::now() + Duration::from_millis(200))
    };
    let begin = std::time::Instant::now();
    while setup.dropper.wakes.load(Ordering::SeqCst) == 0 {
        assert!(
            begin.elapsed() < Duration::from_secs(10),
            "the trigger never fired"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // On the real clock a stand-in may still be waking the batch it held when the trigger's
    // wake was seen, and a late trigger may find the first later victim due as well: the
    // counts are bounded, not fixed.
    check_after_trigger(&setup, false);
    rt.block_on(async { sleep(Duration::from_millis(5)).await });
    check_after_trigger(&setup, false);
}

/// Timers made by a `CreatingWaker`: deadline, timer, and the counter of its waker.
type Created = Vec<(Instant, Pin<Box<Sleep>>, Arc<CountingWaker>)>;

/// The timers each trigger's wake creates, 3 ms apart from now on: fewer under Miri, which
/// interprets every check of every one of them at each 1 ms step.
const CREATED_PER_WAKE: u64 = if cfg!(miri) { 5 } else { 50 };

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
                offsets: (0..CREATED_PER_WAKE)
                    .map(|i| Duration::from_millis(i * 3))
                    .collect(),
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
            while creator.created.lock().expect("not poisoned").len()
                < 40 * CREATED_PER_WAKE as usize
            {
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
            // Past the last created deadline, 3 ms apart from the first.
            for step in 1..=3 * CREATED_PER_WAKE + 3 {
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
