//! The order of ties in the due list, and arrival numbers as slots empty and wrap.

use super::*;
use crate::slab::{Index, Slab};

/// A hierarchy over a slab of labels, with the calls the tests below make.
struct Timers {
    hierarchy: Hierarchy<Index>,
    slab: Slab<u32>,
}

impl Timers {
    fn new() -> Self {
        Timers {
            hierarchy: Hierarchy::new(0),
            slab: Slab::with_capacity(0),
        }
    }

    fn insert(&mut self, label: u32, deadline: u64) -> Index {
        let (index, _) = self.slab.alloc(label);
        self.hierarchy.insert(&mut self.slab, index, deadline);
        self.hierarchy.check_invariants(&self.slab);
        index
    }

    fn cancel(&mut self, index: Index) {
        assert!(self.hierarchy.remove(&mut self.slab, index));
        self.slab.free(index);
        self.hierarchy.check_invariants(&self.slab);
    }

    /// The labels of the nodes due by `now`, in the order they come out.
    fn poll(&mut self, now: u64) -> Vec<u32> {
        let mut labels = Vec::new();
        while let Some(index) = self.hierarchy.poll(&mut self.slab, now, |_, _| 0) {
            labels.push(self.slab.free(index));
            self.hierarchy.check_invariants(&self.slab);
        }
        labels
    }
}

#[test]
fn ties_in_level_0_come_out_in_arrival_order_across_gaps() {
    let mut timers = Timers::new();
    // Thirty ties dealt over the four lists, every third one cancelled, so the merge
    // meets gaps in the turn and must compare heads.
    let indices: Vec<Index> = (0..30).map(|label| timers.insert(label, 10)).collect();
    for (label, &index) in indices.iter().enumerate() {
        if label % 3 == 1 {
            timers.cancel(index);
        }
    }
    let expected: Vec<u32> = (0..30).filter(|label| label % 3 != 1).collect();
    assert_eq!(timers.poll(10), expected);
}

#[test]
fn a_slot_with_nodes_in_its_first_list_only_keeps_them_all() {
    // (cancelled labels, labels left): the first list alone, the first list emptied, and
    // a gap in the second list with the third still in use.
    let cases: [(&[u32], &[u32]); 3] = [
        (&[1, 2, 3, 5, 6, 7], &[0, 4]),
        (&[0], &[1, 2]),
        (&[1], &[0, 2]),
    ];
    for (cancelled, left) in cases {
        let mut timers = Timers::new();
        let count = left.len() + cancelled.len();
        let indices: Vec<Index> = (0..count as u32)
            .map(|label| timers.insert(label, 10))
            .collect();
        for &label in cancelled {
            timers.cancel(indices[label as usize]);
        }
        assert_eq!(timers.poll(10), left, "after cancelling {cancelled:?}");
    }
}

#[test]
fn a_slot_emptied_by_cancels_numbers_from_0_again() {
    let mut timers = Timers::new();
    let indices: Vec<Index> = (0..3).map(|label| timers.insert(label, 10)).collect();
    for index in indices {
        timers.cancel(index);
    }
    assert_eq!(timers.hierarchy.arrivals[10], 0);
    timers.insert(3, 10);
    assert_eq!(timers.poll(10), [3]);
}

#[test]
fn ties_cascaded_into_level_0_come_before_ties_inserted_there_later() {
    let mut timers = Timers::new();
    // Level 1 at first, then cascaded into level 0 when time reaches tick 64.
    for label in 0..10 {
        timers.insert(label, 100);
    }
    assert!(timers.poll(64).is_empty());
    for label in 10..20 {
        timers.insert(label, 100);
    }
    assert_eq!(timers.poll(100), (0..20).collect::<Vec<_>>());
}

#[test]
fn arrival_numbers_keep_their_order_as_they_wrap() {
    let mut timers = Timers::new();
    timers.hierarchy.arrivals[5] = u32::MAX - 6;
    for label in 0..16 {
        timers.insert(label, 5);
    }
    assert_eq!(
        timers.hierarchy.arrivals[5], 9,
        "the slot's numbers wrapped"
    );
    assert_eq!(timers.poll(5), (0..16).collect::<Vec<_>>());
    assert_eq!(
        timers.hierarchy.arrivals[5], 0,
        "an emptied slot numbers from 0 again"
    );
}
