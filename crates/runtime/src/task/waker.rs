//! The `Waker` of a task: a pointer to its header and a reference.

use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::raw::Header;
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

/// # Safety
///
/// `ptr` came from `from_header` and the waker is alive.
unsafe fn header<'a>(ptr: *const ()) -> &'a Header {
    // SAFETY: the waker's reference keeps the header alive.
    unsafe { &*ptr.cast::<Header>() }
}

unsafe fn clone(ptr: *const ()) -> RawWaker {
    // SAFETY: called on a live waker.
    unsafe { header(ptr) }.state.ref_inc();
    RawWaker::new(ptr, &VTABLE)
}

unsafe fn wake(ptr: *const ()) {
    // SAFETY: called on a live waker, whose reference this consumes.
    let header_ref = unsafe { header(ptr) };
    let header_ptr = NonNull::from(header_ref);
    match header_ref.state.transition_to_notified_by_val() {
        // SAFETY: the waker's reference passed to the `Notified`.
        ToNotified::Submit => unsafe { (header_ref.vtable.schedule)(header_ptr) },
        // SAFETY: that was the last reference.
        ToNotified::Dealloc => unsafe { (header_ref.vtable.dealloc)(header_ptr) },
        ToNotified::Nothing => {}
    }
}

unsafe fn wake_by_ref(ptr: *const ()) {
    // SAFETY: called on a live waker.
    let header_ref = unsafe { header(ptr) };
    if header_ref.state.transition_to_notified_by_ref() == ToNotified::Submit {
        // SAFETY: the transition took a reference for the `Notified`.
        unsafe { (header_ref.vtable.schedule)(NonNull::from(header_ref)) };
    }
}

unsafe fn drop_waker(ptr: *const ()) {
    // SAFETY: called on a live waker, whose reference this releases.
    let header_ref = unsafe { header(ptr) };
    if header_ref.state.ref_dec(1) {
        // SAFETY: that was the last reference.
        unsafe { (header_ref.vtable.dealloc)(NonNull::from(header_ref)) };
    }
}
