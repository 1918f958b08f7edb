//! Loom models of escapement's concurrent protocols.
//!
//! Every model is a test in `tests/`, built only with `--cfg loom`, over the real runtime
//! code (the runtime takes its primitives from its loom facade; `escapement::loom_api`
//! exposes the internals the models drive). Run them with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom -C debug-assertions" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p escapement-loom-tests --profile loom --target-dir target/loom
//! ```
//!
//! This library holds what the models share: a waker that counts its wakes, a timer
//! registered with one, and worker 0 processing the timers on a thread of its own.

#[cfg(loom)]
pub use driver::{process_on_worker0, registered_timer};
#[cfg(loom)]
pub use waker::{counting_waker, Wakes};

#[cfg(loom)]
mod driver {
    use std::task::Waker;

    use escapement::loom_api::{Driver, Timer, TimerPoll};
    use loom::thread;

    use crate::{counting_waker, Wakes};

    /// A timer of `driver` due at `tick`, registered: polled once, and `Pending`, with a new
    /// [`counting_waker`]. Returns the timer, that waker and its counter.
    ///
    /// # Panics
    ///
    /// If the first poll is not `Pending`.
    #[track_caller]
    pub fn registered_timer(driver: &Driver, tick: u64) -> (Timer, Waker, Wakes) {
        let mut timer = driver.timer(tick);
        let (waker, wakes) = counting_waker();
        assert_eq!(timer.poll(&waker), TimerPoll::Pending);
        (timer, waker, wakes)
    }

    /// Worker 0 on a new thread, processing `driver`'s timers due by `tick`; joining it
    /// gives how many timers it fired.
    pub fn process_on_worker0(driver: &Driver, tick: u64) -> thread::JoinHandle<usize> {
        let driver = driver.clone();
        thread::spawn(move || driver.process(tick))
    }
}

#[cfg(loom)]
mod waker {
    use std::task::{RawWaker, RawWakerVTable, Waker};

    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::Arc;

    /// How many times a [`counting_waker`] was woken.
    #[derive(Clone, Debug)]
    pub struct Wakes(Arc<AtomicUsize>);

    impl Wakes {
        /// Wakers of this counter alive (the first and its clones), while this is its only
        /// `Wakes`.
        pub fn held(&self) -> usize {
            Arc::strong_count(&self.0) - 1
        }

        /// Wakes so far.
        pub fn count(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// A waker that counts its wakes, and the counter.
    pub fn counting_waker() -> (Waker, Wakes) {
        let counter = Arc::new(AtomicUsize::new(0));
        let raw = RawWaker::new(Arc::into_raw(counter.clone()).cast(), &VTABLE);
        // SAFETY: the vtable treats the pointer as an `Arc<AtomicUsize>` holding one count,
        // which `into_raw` gave it.
        (unsafe { Waker::from_raw(raw) }, Wakes(counter))
    }

    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

    unsafe fn clone(ptr: *const ()) -> RawWaker {
        // SAFETY: the waker holds a count.
        unsafe { Arc::increment_strong_count(ptr.cast::<AtomicUsize>()) };
        RawWaker::new(ptr, &VTABLE)
    }

    unsafe fn wake(ptr: *const ()) {
        // SAFETY: the waker's count passes to this `Arc`.
        let counter = unsafe { Arc::from_raw(ptr.cast::<AtomicUsize>()) };
        counter.fetch_add(1, Ordering::SeqCst);
    }

    unsafe fn wake_by_ref(ptr: *const ()) {
        // SAFETY: the waker holds a count; the pointer is valid while it lives.
        unsafe { &*ptr.cast::<AtomicUsize>() }.fetch_add(1, Ordering::SeqCst);
    }

    unsafe fn drop_waker(ptr: *const ()) {
        // SAFETY: the waker's count is released here.
        drop(unsafe { Arc::from_raw(ptr.cast::<AtomicUsize>()) });
    }
}
