//! The `Waker` of a task: a pointer to its header and a reference.
//!
//! A wake marks the task woken, then queues it if it was idle. On a paused clock a thread
//! that the runtime does not count active (outside it) first takes a hold on the clock,
//! which keeps worker 0 from moving the clock until the task is queued and its worker
//! unparked (`Driver::hold_clock` says why); an abort does the same (`join.rs`).

use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::raw::{self, Header};
use super::state::ToNotified;

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

/// A waker for the task, which owns one reference when dropped.
///
/// # Safety
///
/// `header` is the header of a live task, and the caller either gives the waker one of its
/// references or never drops it (`ManuallyDrop`).
pub(crate) unsafe fn from_header(header: NonNull<Header>) -> Waker {
    let raw = RawWaker::new(header.as_ptr().cast_const().cast(), &VTABLE);
    // SAFETY: the vtable's functions uphold the `RawWaker` contract for this pointer: each
    // waker owns one reference, which keeps the header alive.
    unsafe { Waker::from_raw(raw) }
}

/// The header pointer `ptr` (a waker's) as `from_header` was given it.
///
/// Everything a waker hands on (a `Notified`, the pointer that deallocates the task) is made
/// from this pointer rather than from a `&Header`: it keeps the provenance of the whole cell,
/// while one made from a reference reaches only the header, and deallocating the cell
/// through that is undefined behaviour.
///
/// # Safety
///
/// `ptr` came from `from_header`.
unsafe fn header_ptr(ptr: *const ()) -> NonNull<Header> {
    // SAFETY: `from_header` made `ptr` from a `NonNull`.
    unsafe { NonNull::new_unchecked(ptr.cast_mut().cast()) }
}

/// # Safety
///
/// `ptr` came from `from_header` and the waker is alive.
unsafe fn header<'a>(ptr: *const ()) -> &'a Header {
    // SAFETY: the waker's reference keeps the header alive.
    unsafe { header_ptr(ptr).as_ref() }
}

unsafe fn clone(ptr: *const ()) -> RawWaker {
    // SAFETY: called on a live waker.
    unsafe { header(ptr) }.state.ref_inc();
    RawWaker::new(ptr, &VTABLE)
}

unsafe fn wake(ptr: *const ()) {
    // SAFETY: called on a live waker, whose reference this consumes.
    let (header_ref, header_ptr) = unsafe { (header(ptr), header_ptr(ptr)) };
    // Held until the task is queued; see the module's note.
    // SAFETY: the waker's reference keeps the task alive.
    let _hold = unsafe { raw::hold_clock(header_ptr) };
    match header_ref.state.transition_to_notified_by_val() {
        ToNotified::Submit => {
            // SAFETY: the transition took a reference for the `Notified`.
            unsafe { (header_ref.vtable.schedule)(header_ptr) };
            // Only now: the scheduler ran on the task's memory, which the queued `Notified`
            // may have let another thread free had this been the waker's reference.
            // SAFETY: the waker's reference, which this call consumes.
            unsafe { drop_waker(ptr) };
        }
        // SAFETY: that was the last reference.
        ToNotified::Dealloc => unsafe { (header_ref.vtable.dealloc)(header_ptr) },
        ToNotified::Nothing => {}
    }
}

unsafe fn wake_by_ref(ptr: *const ()) {
    // SAFETY: called on a live waker.
    let header_ref = unsafe { header(ptr) };
    // SAFETY: as above; `ptr` came from `from_header`.
    let _hold = unsafe { raw::hold_clock(header_ptr(ptr)) };
    if header_ref.state.transition_to_notified_by_ref() == ToNotified::Submit {
        // SAFETY: the transition took a reference for the `Notified`; `ptr` came from
        // `from_header`.
        unsafe { (header_ref.vtable.schedule)(header_ptr(ptr)) };
    }
}

unsafe fn drop_waker(ptr: *const ()) {
    // SAFETY: called on a live waker, whose reference this releases.
    let header_ref = unsafe { header(ptr) };
    if header_ref.state.ref_dec(1) {
        // SAFETY: that was the last reference; `ptr` came from `from_header`.
        unsafe { (header_ref.vtable.dealloc)(header_ptr(ptr)) };
    }
}
