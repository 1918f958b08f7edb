//! A task's memory: the type-erased [`Header`] every handle points at, its [`Vtable`], and
//! the typed [`Cell`] around it.
//!
//! A task is one allocation, a `Cell<F, S>` whose first field is the `Header`, so a pointer
//! to the header is a pointer to the cell. Handles ([`Task`], [`Notified`], `JoinHandle`,
//! `Waker`) hold a `NonNull<Header>` and reach the typed code through the vtable.
//!
//! Who may touch what in the cell:
//!
//! - `stage` (the future, then the output): the thread that set `RUNNING`; after `COMPLETE`,
//!   the `JoinHandle` (or, if it is gone, the completing thread); at deallocation, the thread
//!   that dropped the last reference, which finds at most a `JoinError` there: the output, if
//!   any, is dropped by the handle or the completing thread before they release their
//!   references. So an output is only ever touched by the thread that ran the task and the
//!   handle's, and needs to be `Send` only where the handle does (`JoinHandle<T>` is `Send`
//!   only for `T: Send`); a local task's output need not be.
//! - `join_waker`: as the state word's design note says (the `JOIN_WAKER` bit).
//! - `owned_key`: whoever holds the lock of the owned-list shard the task belongs to.
//!
//! [`Task`]: super::Task
//! [`Notified`]: super::Notified

use std::future::Future;
use std::ptr::NonNull;
use std::task::Waker;

use super::error::JoinError;
use super::state::State;
use super::Schedule;
use crate::loom::UnsafeCell;
use crate::time::{clock, driver::ClockHold};

/// The part of a task that every handle can read without knowing its types.
pub(crate) struct Header {
    pub(crate) state: State,
    pub(crate) vtable: &'static Vtable,
    /// The task's key in its owned-list shard; only touched under that shard's lock.
    pub(crate) owned_key: UnsafeCell<usize>,
    /// The task's id, unique within its runtime.
    pub(crate) id: u64,
}

/// The typed operations of a task, one table per `(F, S)`.
pub(crate) struct Vtable {
    /// Runs the task: the caller gives up a `Notified` reference.
    pub(crate) poll: unsafe fn(NonNull<Header>),
    /// Hands a `Notified` (whose reference the caller set aside) to the scheduler.
    pub(crate) schedule: unsafe fn(NonNull<Header>),
    /// Frees the cell; the last reference is gone.
    pub(crate) dealloc: unsafe fn(NonNull<Header>),
    /// `JoinHandle::poll`: writes `Poll<Result<T, JoinError>>` to the pointer if ready; with
    /// a null pointer, only registers the waker (`JoinHandle::register_waker`).
    pub(crate) try_read_output: unsafe fn(NonNull<Header>, *mut (), &Waker),
    /// `JoinHandle::drop`.
    pub(crate) drop_join_handle: unsafe fn(NonNull<Header>),
    /// Runtime shutdown: the caller gives up the owned list's reference.
    pub(crate) shutdown: unsafe fn(NonNull<Header>),
    /// `Schedule::hold_clock` of the task's scheduler.
    pub(crate) hold_clock: unsafe fn(NonNull<Header>) -> Option<ClockHold>,
}

/// What the task holds in place of its future over its life.
pub(crate) enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

/// The whole task allocation. `repr(C)` keeps the header at offset zero.
#[repr(C)]
pub(crate) struct Cell<F: Future, S> {
    pub(crate) header: Header,
    pub(crate) scheduler: S,
    pub(crate) stage: UnsafeCell<Stage<F>>,
    pub(crate) join_waker: UnsafeCell<Option<Waker>>,
}

impl<F, S> Cell<F, S>
where
    F: Future + Send + 'static,
    F::Output: 'static,
    S: Schedule,
{
    /// Allocates a task in its initial state (three references, notified).
    pub(crate) fn allocate(future: F, scheduler: S, id: u64) -> NonNull<Header> {
        let cell = Box::new(Cell {
            header: Header {
                state: State::new(),
                vtable: &super::harness::Harness::<F, S>::VTABLE,
                owned_key: UnsafeCell::new(usize::MAX),
                id,
            },
            scheduler,
            stage: UnsafeCell::new(Stage::Running(future)),
            join_waker: UnsafeCell::new(None),
        });
        NonNull::from(Box::leak(cell)).cast()
    }
}

/// For a wake or an abort of the task `header`, before it marks the task: the hold on the
/// task's runtime's paused clock that the calling thread needs, if any (see
/// `Schedule::hold_clock`). Costs one relaxed load in a process whose clocks never paused.
///
/// # Safety
///
/// The task is alive for the call: the caller holds a reference to it.
#[inline]
pub(crate) unsafe fn hold_clock(header: NonNull<Header>) -> Option<ClockHold> {
    if !clock::any_ever_paused() {
        return None;
    }
    // SAFETY: the caller keeps the task alive.
    unsafe { (header.as_ref().vtable.hold_clock)(header) }
}
