//! [`DriverRef`]: a timer's reference to its driver, counted per shard.
//!
//! Every timer keeps its driver alive, as an `Arc` would. An `Arc` has one count for all its
//! owners, and a count is a cache line written by every clone and drop: two workers that each
//! create and drop timers write the same line, and it moves between their cores at every
//! timer (measured: 94% of the samples of `sleep` sat on that increment in the churn
//! benchmark on two workers). So each shard of the driver keeps its own count of the timers
//! that chose it, on the shard's own cache line, and a timer made on a worker counts in that
//! worker's shard, the one it registers in.
//!
//! The driver's memory is still an `Arc<Driver>`. A shard whose count is not zero holds one
//! strong reference to it, which whatever moves the count up from zero takes and whatever
//! moves it down to zero gives back. Making a timer requires an `Arc<Driver>` in hand (the
//! runtime's handle holds one), so taking that strong reference is always safe, even while
//! another thread gives the shard's previous one back. While the runtime lives it holds one
//! count in every shard (`Runtime`'s `_timer_holds`), so the counts never reach zero and a
//! timer never touches the `Arc`'s own count; they do after it has gone.
//!
//! The counts follow `Arc`'s orderings: an increment is `Relaxed` (the thread making it
//! already holds a reference), a decrement is `Release`, and the thread that reaches zero
//! issues an `Acquire` fence before it gives the strong reference back, so every use of the
//! driver through the shard's references happens before the driver can be freed.
//!
//! # Credit
//!
//! Even on its own cache line, a count costs a worker two atomic read-modify-writes per
//! timer, and a worker makes and drops most of its timers itself (measured: the two were
//! most of the difference between a `timeout` around a ready future and tokio's). So a
//! thread in a shard (every worker in its own, a thread in `block_on` in shard 0, where its
//! timers count anyway) takes counts from it [`BATCH`] at a time and keeps them in a
//! thread-local as credit: each timer it makes takes one, and each timer of that shard
//! dropped on it gives one back, with no atomic operation. A timer made from credit and
//! dropped on another thread decrements the shard's count itself, which stays right: the
//! count is the number of timers and credits it backs, and the credit that timer took was
//! counted when the thread took its batch. The thread keeps at least one count while it is
//! in the shard (so its shard and driver outlive it there), returns [`BATCH`] when its
//! credit passes twice that, and returns all of it when it leaves, with the `Release` a
//! reference's drop has.

use std::cell::Cell;
use std::fmt;
use std::ops::Deref;
use std::ptr::{self, NonNull};

use super::driver::{Driver, Shard};
use crate::loom::{fence, thread_local_const, Arc, Ordering};

/// The counts a thread takes from its shard at a time, as credit.
#[cfg(not(loom))]
const BATCH: usize = 64;
/// Small under loom, so that a model's few timers reach a refill and a return.
#[cfg(loom)]
const BATCH: usize = 2;

/// The shard a thread has entered, with its credit there.
struct ThreadShard {
    /// The driver of `shard`; null when the thread is in no shard.
    driver: Cell<*const Driver>,
    shard: Cell<*const Shard>,
    /// The counts this thread took from `shard` and has not handed to a timer: at least one
    /// while it is in the shard, so they keep the shard and its driver alive.
    credit: Cell<usize>,
}

impl ThreadShard {
    /// A thread in no shard.
    const fn none() -> ThreadShard {
        ThreadShard {
            driver: Cell::new(ptr::null()),
            shard: Cell::new(ptr::null()),
            credit: Cell::new(0),
        }
    }
}

thread_local_const! {
    /// The shard the timers made on this thread belong to, set by [`InShard`]: a worker's
    /// own while it runs its loop, or shard 0 in `block_on`; none on other threads, whose
    /// timers belong to shard 0 too.
    static THREAD_SHARD: ThreadShard = ThreadShard::none();
}

/// A thread in a shard of a driver until this drops: the timers of that driver made on the
/// thread belong to the shard (a worker's own; shard 0 for `block_on`) and count there from
/// the thread's credit, which keeps the driver alive meanwhile.
///
/// Entering while already in a shard (a task's drop code that calls `block_on` while its
/// worker exits) sets the outer shard aside, credit and all, until this drops; guards drop in
/// the reverse order of their creation, as the scopes that hold them do.
pub(crate) struct InShard {
    /// The thread's shard before this one, its driver and its credit (still counted in that
    /// shard, so both stay alive meanwhile): restored when this drops. The raw pointers also
    /// keep the guard on its thread.
    outer: (*const Driver, *const Shard, usize),
}

impl InShard {
    /// Puts the calling thread in shard `index` of `driver`, with a batch of credit.
    pub(crate) fn enter(driver: &Arc<Driver>, index: usize) -> InShard {
        let shard = driver.shard(index);
        add(driver, shard, BATCH);
        let outer = THREAD_SHARD.with(|this| {
            (
                this.driver.replace(Arc::as_ptr(driver)),
                this.shard.replace(shard),
                this.credit.replace(BATCH),
            )
        });
        InShard { outer }
    }
}

impl Drop for InShard {
    /// Returns the thread's credit to its shard and puts the thread back where it was.
    fn drop(&mut self) {
        let (outer_driver, outer_shard, outer_credit) = self.outer;
        let _ = THREAD_SHARD.try_with(|this| {
            let driver = this.driver.replace(outer_driver);
            let shard = this.shard.replace(outer_shard);
            let credit = this.credit.replace(outer_credit);
            // SAFETY: the thread's credit, at least one count, has kept the shard alive.
            let shard = unsafe { &*shard };
            // Release: as a reference's drop, for the timers whose counts came back as
            // credit.
            if shard.refs().fetch_sub(credit, Ordering::Release) == credit {
                // SAFETY: the count went from `credit` to 0: the shard holds a strong
                // reference that no one else will give back, and `driver` came from
                // `Arc::as_ptr`.
                unsafe { release(driver) };
            }
        });
    }
}

/// The driver's pointer as [`release`] needs it: from `Arc::as_ptr`, so that it may reach
/// the `Arc`'s counts beside the driver (a pointer made from `&Driver` may not).
#[inline]
fn driver_ptr(driver: &Arc<Driver>) -> NonNull<Driver> {
    // SAFETY: `Arc::as_ptr` points into a live allocation, so it is never null.
    unsafe { NonNull::new_unchecked(Arc::as_ptr(driver).cast_mut()) }
}

/// Adds `count` to `shard`'s count, which then holds a strong reference to `driver` if it
/// did not already.
#[inline]
fn add(driver: &Arc<Driver>, shard: &Shard, count: usize) {
    // Relaxed, as `Arc::clone`: the caller holds a reference, so the driver is alive.
    if shard.refs().fetch_add(count, Ordering::Relaxed) == 0 {
        hold(driver);
    }
}

/// A counted reference to a timer driver, in one of its shards: pointers to both. (A pointer
/// to the shard alone, with the shard pointing at its driver, saves 8 bytes per timer but
/// costs a load before the clock read of every `sleep` and `timeout`: measured on `timeout`
/// around a ready future, 50.2 ns against 48.2 to 49.4.)
pub(crate) struct DriverRef {
    shard: NonNull<Shard>,
    driver: NonNull<Driver>,
}

// SAFETY: a `DriverRef` is a shared reference to a `Driver` (and to one of its shards) that
// it keeps alive, as an `Arc<Driver>` is; `Driver` and `Shard` are `Send` and `Sync`, so
// sharing or sending that reference across threads is sound.
unsafe impl Send for DriverRef {}
// SAFETY: as for `Send`.
unsafe impl Sync for DriverRef {}

impl DriverRef {
    /// A reference counted in the calling thread's shard: from its credit on a thread in a
    /// shard of `driver`, in shard 0 elsewhere.
    #[inline]
    pub(crate) fn new(driver: &Arc<Driver>) -> DriverRef {
        let from_credit = THREAD_SHARD.try_with(|this| {
            if !ptr::eq(this.driver.get(), Arc::as_ptr(driver)) {
                return None;
            }
            // SAFETY: the thread is in a shard of `driver`, which its credit keeps alive.
            let shard = unsafe { &*this.shard.get() };
            let credit = this.credit.get();
            if credit > 1 {
                this.credit.set(credit - 1);
            } else {
                refill(driver, shard, this);
            }
            Some(NonNull::from(shard))
        });
        match from_credit {
            Ok(Some(shard)) => DriverRef {
                shard,
                driver: driver_ptr(driver),
            },
            _ => DriverRef::in_shard(driver, driver.shard(0)),
        }
    }

    /// A reference counted in `shard`, one of `driver`'s.
    #[inline]
    fn in_shard(driver: &Arc<Driver>, shard: &Shard) -> DriverRef {
        add(driver, shard, 1);
        DriverRef {
            shard: NonNull::from(shard),
            driver: driver_ptr(driver),
        }
    }

    /// One reference in every shard of `driver`: what the runtime holds while it lives.
    pub(crate) fn every_shard(driver: &Arc<Driver>) -> Vec<DriverRef> {
        driver
            .shards()
            .map(|shard| DriverRef::in_shard(driver, shard))
            .collect()
    }

    /// The shard this reference is counted in, which its timer registers in.
    #[inline]
    pub(crate) fn shard(&self) -> &Shard {
        // SAFETY: the shard is part of the driver, which this reference keeps alive (see
        // `deref`).
        unsafe { self.shard.as_ref() }
    }
}

impl Deref for DriverRef {
    type Target = Driver;

    #[inline]
    fn deref(&self) -> &Driver {
        // SAFETY: this reference is counted in its shard, so the shard holds a strong
        // reference to the driver until this reference gives its count back (to the shard or
        // to a thread's credit there), which happens only in `drop`.
        unsafe { self.driver.as_ref() }
    }
}

impl Drop for DriverRef {
    #[inline]
    fn drop(&mut self) {
        let shard = self.shard();
        let driver = self.driver.as_ptr().cast_const();
        self.let_go();
        // Dropped on a thread in this reference's shard: the count joins that thread's
        // credit, with no atomic; the thread's return of its credit is the `Release`.
        let to_credit = THREAD_SHARD.try_with(|this| {
            if !ptr::eq(this.shard.get(), shard) {
                return false;
            }
            let credit = this.credit.get() + 1;
            if credit > 2 * BATCH {
                give_back(shard, this);
            } else {
                this.credit.set(credit);
            }
            true
        });
        if matches!(to_credit, Ok(true)) {
            return;
        }
        // Release: every use of the driver through this reference happens before the
        // decrement, and so before the thread that reaches zero gives the shard's strong
        // reference back.
        if shard.refs().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // SAFETY: the count went from 1 to 0, so the shard holds a strong reference (taken by
        // whoever moved it from 0 to 1) that no one else will give back; the pointer came from
        // `Arc::as_ptr` of that `Arc`. Neither the shard nor `self` is read afterwards.
        unsafe { release(driver) };
    }
}

/// The thread's last credit is going to a timer: it takes another batch.
#[cold]
#[inline(never)]
fn refill(driver: &Arc<Driver>, shard: &Shard, this: &ThreadShard) {
    add(driver, shard, BATCH);
    this.credit.set(BATCH);
}

/// The thread's credit passed `2 * BATCH`: it returns a batch, and keeps more than one.
#[cold]
#[inline(never)]
fn give_back(shard: &Shard, this: &ThreadShard) {
    // Release: as a reference's drop (the thread's later return of its credit would order
    // these uses too). The count stays at least the thread's remaining credit, more than one,
    // so it cannot reach zero here.
    let before = shard.refs().fetch_sub(BATCH, Ordering::Release);
    debug_assert!(
        before > 2 * BATCH,
        "a shard's count covers its threads' credit"
    );
    this.credit.set(BATCH + 1);
}

/// A shard's count left zero: the shard takes a strong reference to `driver`. Out of line:
/// while the runtime lives, its own count in every shard keeps this from happening.
#[cold]
#[inline(never)]
fn hold(driver: &Arc<Driver>) {
    // SAFETY: `driver` is a live `Arc<Driver>`, so the pointer came from `Arc::new` and its
    // strong count is at least one.
    unsafe { Arc::increment_strong_count(Arc::as_ptr(driver)) };
}

/// A shard's count reached zero: the shard gives its strong reference to the driver back.
///
/// # Safety
///
/// The caller moved a shard's count down to 0, so that shard holds a strong reference to
/// `driver` that no one else will give back; `driver` came from `Arc::as_ptr`.
#[cold]
#[inline(never)]
unsafe fn release(driver: *const Driver) {
    // Acquire pairs with the Release decrements of the shard's other references.
    fence(Ordering::Acquire);
    // SAFETY: as the caller promised.
    unsafe { Arc::decrement_strong_count(driver) };
}

impl fmt::Debug for DriverRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverRef")
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::thread;

    use super::*;
    use crate::time::driver::tests::paused_driver as driver;

    /// Shard `index`'s count.
    fn count(driver: &Driver, index: usize) -> usize {
        driver.shard(index).refs().load(Ordering::Relaxed)
    }

    #[test]
    fn a_thread_in_a_shard_makes_and_drops_its_timers_from_credit() {
        let driver = driver(2);
        thread::spawn(move || {
            let in_shard = InShard::enter(&driver, 1);
            assert_eq!(count(&driver, 1), BATCH);
            let mut refs: Vec<_> = (1..BATCH).map(|_| DriverRef::new(&driver)).collect();
            assert!(refs.iter().all(|r| ptr::eq(r.shard(), driver.shard(1))));
            assert_eq!(count(&driver, 1), BATCH, "made from credit");
            refs.push(DriverRef::new(&driver));
            assert_eq!(
                count(&driver, 1),
                2 * BATCH,
                "the last credit went: a refill"
            );
            drop(refs);
            assert_eq!(count(&driver, 1), 2 * BATCH, "dropped into credit");
            // Timers of the shard made elsewhere and dropped here push the credit past two
            // batches, twice: a batch goes back each time, and the thread keeps the rest.
            let elsewhere: Vec<_> = (0..=BATCH)
                .map(|_| DriverRef::in_shard(&driver, driver.shard(1)))
                .collect();
            assert_eq!(count(&driver, 1), 3 * BATCH + 1);
            drop(elsewhere);
            assert_eq!(count(&driver, 1), BATCH + 1);
            drop(in_shard);
            assert_eq!((count(&driver, 0), count(&driver, 1)), (0, 0));
            assert_eq!(Arc::strong_count(&driver), 1, "no shard holds the driver");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_timer_made_from_credit_and_dropped_elsewhere_gives_its_count_back() {
        let driver = driver(2);
        let weak = Arc::downgrade(&driver);
        let timer = thread::spawn(move || {
            let in_shard = InShard::enter(&driver, 1);
            let timer = DriverRef::new(&driver);
            // The thread's credit keeps the driver alive without the thread's `Arc`.
            drop(driver);
            drop(in_shard);
            timer
        })
        .join()
        .unwrap();
        let driver = weak.upgrade().expect("the timer keeps the driver alive");
        assert_eq!((count(&driver, 0), count(&driver, 1)), (0, 1));
        drop(driver);
        drop(timer);
        assert!(weak.upgrade().is_none(), "freed with its last timer");
    }

    #[test]
    fn a_thread_in_a_shard_keeps_the_driver_until_it_leaves() {
        let driver = driver(1);
        let weak = Arc::downgrade(&driver);
        thread::spawn(move || {
            let in_shard = InShard::enter(&driver, 0);
            drop(driver);
            drop(DriverRef::new(
                &weak.upgrade().expect("the credit holds it"),
            ));
            drop(in_shard);
            assert!(weak.upgrade().is_none(), "freed as the thread leaves");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn other_threads_and_other_drivers_count_in_shard_0_at_once() {
        let (driver, other) = (driver(2), driver(2));
        let outside = DriverRef::new(&driver);
        assert_eq!(count(&driver, 0), 1);
        thread::scope(|scope| {
            scope.spawn(|| {
                let _in_shard = InShard::enter(&other, 1);
                let foreign = DriverRef::new(&driver);
                assert!(ptr::eq(foreign.shard(), driver.shard(0)));
                assert_eq!(count(&driver, 0), 2);
                drop(foreign);
                assert_eq!(count(&driver, 0), 1);
            });
        });
        drop(outside);
        assert_eq!(count(&driver, 0), 0);
    }

    /// A thread already in a shard that enters another (a task's drop code calling
    /// `block_on` as its worker exits) keeps its first credit aside and gets it back.
    #[test]
    fn a_thread_entering_a_second_shard_gets_its_first_back_when_it_leaves() {
        let driver = driver(2);
        thread::spawn(move || {
            let outer = InShard::enter(&driver, 1);
            let first = DriverRef::new(&driver);
            let inner = InShard::enter(&driver, 0);
            let second = DriverRef::new(&driver);
            assert!(ptr::eq(second.shard(), driver.shard(0)));
            assert_eq!((count(&driver, 0), count(&driver, 1)), (BATCH, BATCH));
            drop(first);
            assert_eq!(
                count(&driver, 1),
                BATCH - 1,
                "shard 1's timer let go at once"
            );
            drop(inner);
            assert_eq!(
                count(&driver, 0),
                1,
                "shard 0's credit went back; its timer holds 1"
            );
            drop(second);
            let third = DriverRef::new(&driver);
            assert!(ptr::eq(third.shard(), driver.shard(1)));
            assert_eq!(
                count(&driver, 1),
                BATCH - 1,
                "made from the first credit, kept aside"
            );
            drop(third);
            drop(outer);
            assert_eq!((count(&driver, 0), count(&driver, 1)), (0, 0));
        })
        .join()
        .unwrap();
    }
}
