//! [`IntrusiveWheel`]: the wheel over nodes that live in memory the caller owns.
//!
//! This is the only module of the crate with `unsafe` code. A [`Node`] carries the
//! [`Header`] the wheel links through and a value of the caller's; the wheel stores pointers
//! to nodes, never the nodes, so linking and unlinking allocate nothing.
//!
//! # The contract
//!
//! Every `unsafe` method of [`IntrusiveWheel`] asks the same of its caller, and the safe ones
//! rely on it:
//!
//! 1. A node linked into a wheel stays where it is and alive until it is unlinked again, by
//!    [`remove`](IntrusiveWheel::remove), by [`poll`](IntrusiveWheel::poll) handing it out,
//!    by [`clear`](IntrusiveWheel::clear) or [`drain`](IntrusiveWheel::drain), or by the
//!    wheel's drop. Pinning gives the first half; the caller must not drop it early.
//! 2. A node given to a method of a wheel is either unlinked or linked into that same wheel,
//!    never into another one.
//! 3. Calls on one node through different wheels are ordered (happen one after the other, as
//!    on one thread or under one lock): a node that leaves one wheel and is then looked at
//!    through another from a second thread, with nothing ordering the two, is a data race
//!    on its header even though each call meets 1 and 2. Simplest is a node that stays with
//!    one wheel, as the runtime's timers do.
//!
//! Every header is then reached only through the wheel that links it, and through `&mut` of
//! that wheel for any write, so header accesses are as serialized as the wheel itself (the
//! runtime keeps its wheel behind a mutex).

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::{PhantomData, PhantomPinned};
use std::pin::Pin;
use std::ptr::NonNull;

use crate::hierarchy::Hierarchy;
use crate::list::{Arena, Header};

/// A timer node for an [`IntrusiveWheel`], carrying a value of type `T`.
///
/// The node is `!Unpin`: once pinned (inside a future, say) it can be linked into a wheel by
/// address.
///
/// It is `Send` only when `T` is `Sync` as well as `Send`, as the wheel is: a node sent to
/// another thread while linked may have its value read there while the wheel's
/// [`poll_with`](IntrusiveWheel::poll_with) hands `&T` to its closure on the wheel's thread.
///
/// ```compile_fail
/// fn send<S: Send>() {}
/// // `Cell` is `Send` but not `Sync`.
/// send::<escapement_wheel::Node<std::cell::Cell<u64>>>();
/// ```
pub struct Node<T> {
    links: UnsafeCell<Links<T>>,
    value: T,
    _pinned: PhantomPinned,
}

/// What the wheel keeps in a node.
struct Links<T> {
    header: Header<NonNull<Node<T>>>,
    /// The arrival number (`Arena::arrival`); with `linked`, it fills the eight bytes after
    /// the header.
    arrival: u32,
    linked: bool,
}

// SAFETY: the header is only read or written through the wheel the node is linked into (the
// contract above), which serializes those accesses; the safe API hands out only `&T`, and the
// wheel's `poll_with` may read the value on the wheel's thread while the node's new thread
// reads it too: hence `T: Sync` as well as `Send`.
unsafe impl<T: Send + Sync> Send for Node<T> {}
// SAFETY: as for `Send`; shared references to a node expose only `&T`.
unsafe impl<T: Sync> Sync for Node<T> {}

impl<T> Node<T> {
    /// An unlinked node holding `value`.
    pub const fn new(value: T) -> Self {
        Node {
            links: UnsafeCell::new(Links {
                header: Header::new(),
                arrival: 0,
                linked: false,
            }),
            value,
            _pinned: PhantomPinned,
        }
    }

    /// The caller's value.
    pub fn value(&self) -> &T {
        &self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Node<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("value", &self.value)
            .finish_non_exhaustive()
    }
}

/// The arena of an intrusive wheel: a handle is the node's address.
struct Nodes<T>(PhantomData<fn() -> T>);

impl<T> Nodes<T> {
    /// The wheel's part of a node.
    #[inline]
    fn links(&self, h: NonNull<Node<T>>) -> &Links<T> {
        // SAFETY: a handle reaches the arena only while its node is linked into this wheel or
        // being linked by an `unsafe` method, so the node is alive and pinned (contract, 1);
        // links are only touched through the wheel, and the borrow of the arena ends
        // before any other borrow of this node's links.
        unsafe { &*(*h.as_ptr()).links.get() }
    }

    #[inline]
    fn links_mut(&mut self, h: NonNull<Node<T>>) -> &mut Links<T> {
        // SAFETY: as in `links`; `&mut self` stands for `&mut` of the wheel, so no other
        // reference to these links exists.
        unsafe { &mut *(*h.as_ptr()).links.get() }
    }
}

impl<T> Arena for Nodes<T> {
    type Handle = NonNull<Node<T>>;

    #[inline]
    fn header(&self, h: NonNull<Node<T>>) -> &Header<NonNull<Node<T>>> {
        &self.links(h).header
    }

    #[inline]
    fn header_mut(&mut self, h: NonNull<Node<T>>) -> &mut Header<NonNull<Node<T>>> {
        &mut self.links_mut(h).header
    }

    #[inline]
    fn is_linked(&self, h: NonNull<Node<T>>) -> bool {
        self.links(h).linked
    }

    #[inline]
    fn set_linked(&mut self, h: NonNull<Node<T>>, linked: bool) {
        self.links_mut(h).linked = linked;
    }

    #[inline]
    fn arrival(&self, h: NonNull<Node<T>>) -> u32 {
        self.links(h).arrival
    }

    #[inline]
    fn set_arrival(&mut self, h: NonNull<Node<T>>, arrival: u32) {
        self.links_mut(h).arrival = arrival;
    }
}

/// A hierarchical timing wheel over caller-owned, pinned [`Node`]s.
///
/// The same algorithm as [`Wheel`](crate::Wheel), without storage of its own: insert and
/// remove allocate nothing and run in O(1) (but for an insert at a tick already passed; see
/// the crate's docs). The caller keeps every linked node alive and in
/// place; see the module's contract.
///
/// The wheel is `Send` when `T` is `Send` and `Sync`: [`poll_with`](Self::poll_with) hands
/// `&T` to its closure on the wheel's thread while the nodes' owners may hold `&T` on
/// theirs.
///
/// ```compile_fail
/// fn send<S: Send>() {}
/// // `Cell` is `Send` but not `Sync`.
/// send::<escapement_wheel::IntrusiveWheel<std::cell::Cell<u64>>>();
/// ```
///
/// # Examples
///
/// ```
/// use std::pin::pin;
/// use escapement_wheel::{IntrusiveWheel, Node};
///
/// let mut wheel = IntrusiveWheel::new();
/// let node = pin!(Node::new("tea is ready"));
/// // SAFETY: `node` is pinned on this stack frame and unlinked by `poll` before it is dropped.
/// unsafe { wheel.insert(node.as_ref(), 5) };
///
/// let (fired, deadline) = wheel.poll(5).expect("due at tick 5");
/// // SAFETY: the node is still alive on this stack frame.
/// assert_eq!(unsafe { fired.as_ref() }.value(), &"tea is ready");
/// assert_eq!(deadline, 5);
/// ```
pub struct IntrusiveWheel<T> {
    hierarchy: Hierarchy<NonNull<Node<T>>>,
}

// SAFETY: the wheel writes only the headers of its nodes, never their values, and reads a
// value only to hand `&T` to `poll_with`'s closure on the wheel's thread, while the node's
// owner may read it on another: hence `T: Sync` as well as `Send`. The contract keeps every
// linked node alive wherever the wheel goes.
unsafe impl<T: Send + Sync> Send for IntrusiveWheel<T> {}
// SAFETY: `&IntrusiveWheel` only reads headers; writes need `&mut`.
unsafe impl<T: Sync> Sync for IntrusiveWheel<T> {}

impl<T> IntrusiveWheel<T> {
    /// An empty wheel whose current tick is 0.
    pub fn new() -> Self {
        IntrusiveWheel {
            hierarchy: Hierarchy::new(0),
        }
    }

    /// The current tick; see [`Wheel::now`](crate::Wheel::now).
    pub fn now(&self) -> u64 {
        self.hierarchy.now()
    }

    /// The number of linked nodes.
    pub fn len(&self) -> usize {
        self.hierarchy.len()
    }

    /// Whether no node is linked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Links `node` to fire at tick `deadline`. A node already linked into this wheel is
    /// moved to the new deadline and counts as inserted now.
    ///
    /// # Safety
    ///
    /// `node` is unlinked or linked into this wheel, and once linked it stays alive (not
    /// dropped, not reused) until it is unlinked: the module's contract.
    #[inline]
    pub unsafe fn insert(&mut self, node: Pin<&Node<T>>, deadline: u64) {
        let h = NonNull::from(node.get_ref());
        let mut nodes = Nodes(PhantomData);
        self.hierarchy.remove(&mut nodes, h);
        self.hierarchy.insert(&mut nodes, h, deadline);
    }

    /// Unlinks `node` in O(1). Returns whether it was linked.
    ///
    /// # Safety
    ///
    /// `node` is unlinked or linked into this wheel.
    #[inline]
    pub unsafe fn remove(&mut self, node: Pin<&Node<T>>) -> bool {
        self.hierarchy
            .remove(&mut Nodes(PhantomData), NonNull::from(node.get_ref()))
    }

    /// The deadline `node` is linked at, or `None` if it is not linked.
    ///
    /// # Safety
    ///
    /// `node` is unlinked or linked into this wheel.
    #[inline]
    pub unsafe fn deadline(&self, node: Pin<&Node<T>>) -> Option<u64> {
        let links = Nodes(PhantomData).links(NonNull::from(node.get_ref()));
        links.linked.then_some(links.header.deadline)
    }

    /// The tick at which the next poll can make progress; see
    /// [`Wheel::next_expiration`](crate::Wheel::next_expiration). The wheel knows a node by
    /// the deadline it was linked at: after an owner moved a deadline later (read back only
    /// by [`poll_with`](Self::poll_with)), the answer may be that older, earlier tick, where a
    /// poll fires nothing and only moves the node. It is never later than a due node's tick.
    #[inline]
    pub fn next_expiration(&self) -> Option<u64> {
        self.hierarchy.next_expiration(&Nodes(PhantomData))
    }

    /// Advances toward tick `now` and unlinks the earliest node due at or before it,
    /// returning the node and its deadline; see [`Wheel::poll`](crate::Wheel::poll).
    ///
    /// The node is unlinked when it is returned, so its owner may drop it; the pointer is
    /// valid for as long as the owner keeps the node alive.
    #[inline]
    pub fn poll(&mut self, now: u64) -> Option<(NonNull<Node<T>>, u64)> {
        self.poll_with(now, |_| 0)
    }

    /// [`poll`](Self::poll) for nodes whose owners may move their deadline later without the
    /// wheel, by recording it in the node's value: `later` reads it from there.
    ///
    /// The wheel asks `later` whenever it walks a node, in a cascade and before handing a
    /// due node out. A value after the node's linked deadline becomes its linked deadline,
    /// and the node is placed again for it at once, so nodes still come out in deadline
    /// order; a value not after it (0, say, for a node never moved) changes nothing. Nodes
    /// moved to one deadline come out in the order the wheel found them, not necessarily the
    /// order they were linked in. A node handed out was due by the reading taken then: a
    /// deadline its owner moves after that is for the caller to see.
    ///
    /// So a timer pushed back again and again, as a retransmission timer is by every
    /// acknowledgement, is walked about once per slot it passes through instead of once more
    /// at each old deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use escapement_wheel::{IntrusiveWheel, Node};
    ///
    /// let mut wheel = IntrusiveWheel::new();
    /// let node = pin!(Node::new(AtomicU64::new(0)));
    /// // SAFETY: `node` is pinned on this stack frame and unlinked by `poll_with` before it
    /// // is dropped.
    /// unsafe { wheel.insert(node.as_ref(), 100) };
    /// // The owner moves the deadline to 300 without touching the wheel.
    /// node.value().store(300, Ordering::Relaxed);
    ///
    /// let later = |moved: &AtomicU64| moved.load(Ordering::Relaxed);
    /// assert!(wheel.poll_with(299, later).is_none());
    /// let (_, deadline) = wheel.poll_with(300, later).expect("due at tick 300");
    /// assert_eq!(deadline, 300);
    /// ```
    ///
    /// # Panics
    ///
    /// `later` must not panic: if it does, the process aborts. The wheel calls it on nodes it
    /// has taken out of their lists to place them again, and could not leave them linked to
    /// nothing, which the owners would then free.
    #[inline]
    pub fn poll_with(
        &mut self,
        now: u64,
        mut later: impl FnMut(&T) -> u64,
    ) -> Option<(NonNull<Node<T>>, u64)> {
        let mut nodes = Nodes(PhantomData);
        let h = self.hierarchy.poll(&mut nodes, now, |_, h| {
            let abort = AbortOnUnwind;
            // SAFETY: the wheel hands `later` only nodes linked into it, alive by the
            // contract; `&T` is the value, which the wheel never writes.
            let moved = later(unsafe { h.as_ref() }.value());
            std::mem::forget(abort);
            moved
        })?;
        Some((h, nodes.header(h).deadline))
    }

    /// Unlinks every node, handing each to `f` once it is unlinked.
    ///
    /// If `f` panics, the wheel is still left empty and every node unlinked; the nodes not
    /// yet handed to `f` are not handed to it.
    pub fn drain(&mut self, mut f: impl FnMut(NonNull<Node<T>>)) {
        self.hierarchy
            .drain(&mut Nodes(PhantomData), |_, h| f(h), |_, _| {});
    }

    /// Unlinks every node, keeping the current tick.
    pub fn clear(&mut self) {
        self.drain(|_| {});
    }

    /// Slots emptied so far as time reached them; see [`Wheel::cascades`](crate::Wheel::cascades).
    pub fn cascades(&self) -> u64 {
        self.hierarchy.cascades()
    }

    /// Checks every structural invariant; see
    /// [`Wheel::check_invariants`](crate::Wheel::check_invariants).
    ///
    /// # Panics
    ///
    /// If an invariant does not hold.
    pub fn check_invariants(&self) {
        self.hierarchy.check_invariants(&Nodes(PhantomData));
    }
}

impl<T> Default for IntrusiveWheel<T> {
    fn default() -> Self {
        IntrusiveWheel::new()
    }
}

impl<T> Drop for IntrusiveWheel<T> {
    /// Unlinks every node, so none is left pointing into a wheel that is gone.
    fn drop(&mut self) {
        self.clear();
    }
}

impl<T> fmt::Debug for IntrusiveWheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrusiveWheel")
            .field("now", &self.now())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// Aborts the process if dropped: it is forgotten once the code it guards has returned, so it
/// drops only when that code unwinds.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        std::process::abort();
    }
}

#[cfg(test)]
mod tests;
