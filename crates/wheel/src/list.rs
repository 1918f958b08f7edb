//! Doubly linked lists threaded through node headers.
//!
//! Every list in the wheel (the four of each slot of each level, and the due list) is a
//! [`List`] of handles. A handle names a node; where the node's [`Header`] lives is the
//! business of an
//! [`Arena`]: the keyed wheel's slab answers with an index into a `Vec`, the intrusive wheel
//! with a pointer into memory its caller owns. The list code is the same for both, and safe:
//! the intrusive arena is where the one `unsafe` dereference happens.

use std::fmt;

/// Where the headers of a wheel's nodes live.
pub(crate) trait Arena {
    /// Names one node. Copying a handle copies the name, not the node.
    type Handle: Copy + Eq + fmt::Debug;

    /// The header of the node `h` names.
    fn header(&self, h: Self::Handle) -> &Header<Self::Handle>;

    /// The header of the node `h` names, for writing.
    fn header_mut(&mut self, h: Self::Handle) -> &mut Header<Self::Handle>;

    /// Whether the node is in one of the wheel's lists. Kept apart from the header, which
    /// list walks touch, because only inserts and removals need it.
    fn is_linked(&self, h: Self::Handle) -> bool;

    /// Records whether the node is in one of the wheel's lists.
    fn set_linked(&mut self, h: Self::Handle, linked: bool);

    /// The arrival number the node got when it was last placed in level 0, which orders the
    /// four lists of a level-0 slot against each other (`hierarchy.rs`). Kept apart from the
    /// header, where it would cost each node eight bytes of padding.
    fn arrival(&self, h: Self::Handle) -> u32;

    /// Records the node's arrival number.
    fn set_arrival(&mut self, h: Self::Handle, arrival: u32);
}

/// The part of a node that list walks touch: its links and its deadline.
#[derive(Debug, Clone)]
pub(crate) struct Header<H> {
    /// The previous node in the node's list.
    pub(crate) prev: Option<H>,
    /// The next node in the node's list.
    pub(crate) next: Option<H>,
    /// The tick the node is due at. Together with the wheel's current tick it says which list
    /// the node is in, so the node does not store its position.
    pub(crate) deadline: u64,
}

impl<H> Header<H> {
    /// A header that is in no list.
    pub(crate) const fn new() -> Self {
        Header {
            prev: None,
            next: None,
            deadline: 0,
        }
    }
}

/// A doubly linked list of nodes, named by its two ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct List<H> {
    pub(crate) head: Option<H>,
    pub(crate) tail: Option<H>,
}

impl<H: Copy + Eq + fmt::Debug> List<H> {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        List {
            head: None,
            tail: None,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Links `h` at the back of the list.
    #[inline]
    pub(crate) fn push_back<A: Arena<Handle = H>>(&mut self, arena: &mut A, h: H) {
        let header = arena.header_mut(h);
        header.prev = self.tail;
        header.next = None;
        match self.tail {
            Some(tail) => arena.header_mut(tail).next = Some(h),
            None => self.head = Some(h),
        }
        self.tail = Some(h);
    }

    /// Links `h` right after `after`, or at the front when `after` is `None`.
    pub(crate) fn insert_after<A: Arena<Handle = H>>(
        &mut self,
        arena: &mut A,
        after: Option<H>,
        h: H,
    ) {
        let next = match after {
            Some(a) => arena.header(a).next,
            None => self.head,
        };
        let header = arena.header_mut(h);
        header.prev = after;
        header.next = next;
        match after {
            Some(a) => arena.header_mut(a).next = Some(h),
            None => self.head = Some(h),
        }
        match next {
            Some(n) => arena.header_mut(n).prev = Some(h),
            None => self.tail = Some(h),
        }
    }

    /// Unlinks `h`, which must be in this list, in O(1).
    #[inline]
    pub(crate) fn unlink<A: Arena<Handle = H>>(&mut self, arena: &mut A, h: H) {
        let header = arena.header_mut(h);
        let (prev, next) = (header.prev.take(), header.next.take());
        match prev {
            Some(p) => arena.header_mut(p).next = next,
            None => {
                debug_assert_eq!(
                    self.head,
                    Some(h),
                    "unlinking a node from a list it is not in"
                );
                self.head = next;
            }
        }
        match next {
            Some(n) => arena.header_mut(n).prev = prev,
            None => {
                debug_assert_eq!(
                    self.tail,
                    Some(h),
                    "unlinking a node from a list it is not in"
                );
                self.tail = prev;
            }
        }
    }

    /// Unlinks and returns the front node.
    pub(crate) fn pop_front<A: Arena<Handle = H>>(&mut self, arena: &mut A) -> Option<H> {
        let head = self.head?;
        self.unlink(arena, head);
        Some(head)
    }

    /// Empties the list and returns what it held; the nodes keep their links to each other.
    pub(crate) fn take(&mut self) -> List<H> {
        std::mem::replace(self, List::new())
    }

    /// Links the nodes of `other`, a list taken out of the wheel, after this list's, in O(1).
    pub(crate) fn append<A: Arena<Handle = H>>(&mut self, arena: &mut A, other: List<H>) {
        let Some(head) = other.head else {
            return;
        };
        match self.tail {
            Some(tail) => {
                arena.header_mut(tail).next = Some(head);
                arena.header_mut(head).prev = Some(tail);
            }
            None => self.head = Some(head),
        }
        self.tail = other.tail;
    }
}
