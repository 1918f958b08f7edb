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
//! strong reference to it, which the timer that moves the count from 0 to 1 takes and the one
//! that moves it from 1 to 0 gives back. Making a timer requires an `Arc<Driver>` in hand (the
//! runtime's handle holds one), so taking that strong reference is always safe, even while
//! another thread gives the shard's previous one back. While the runtime lives it holds one
//! count in every shard (`Runtime`'s `timer_holds`), so the counts never reach zero and a
//! timer never touches the `Arc`'s own count; they do after it has gone.
//!
//! The counts follow `Arc`'s orderings: an increment is `Relaxed` (the thread making it
//! already holds a reference), a decrement is `Release`, and the thread that reaches zero
//! issues an `Acquire` fence before it gives the strong reference back, so every use of the
//! driver through the shard's references happens before the driver can be freed.

use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

use super::driver::{Driver, Shard};
use crate::loom::{fence, Arc, Ordering};

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
    /// A reference counted in the calling thread's shard.
    #[inline]
    pub(crate) fn new(driver: &Arc<Driver>) -> DriverRef {
        DriverRef::in_shard(driver, driver.this_threads_shard())
    }

    /// A reference counted in `shard`, one of `driver`'s.
    #[inline]
    fn in_shard(driver: &Arc<Driver>, shard: &Shard) -> DriverRef {
        // Relaxed, as `Arc::clone`: the caller holds a reference, so the driver is alive.
        if shard.refs().fetch_add(1, Ordering::Relaxed) == 0 {
            hold(driver);
        }
        DriverRef {
            shard: NonNull::from(shard),
            driver: NonNull::from(&**driver),
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
        // reference to the driver until the count drops, which happens only in `drop`.
        unsafe { self.driver.as_ref() }
    }
}

impl Drop for DriverRef {
    #[inline]
    fn drop(&mut self) {
        let shard = self.shard();
        let driver = self.driver.as_ptr().cast_const();
        self.let_go();
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
/// The caller moved a shard's count from 1 to 0, so that shard holds a strong reference to
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
