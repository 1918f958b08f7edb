//! Nodes firing and unlinking in place, moves of linked nodes, drops, and unwinding callbacks.

use super::*;
use std::pin::pin;

#[test]
fn nodes_fire_in_order_and_unlink_in_place() {
    let a = pin!(Node::new('a'));
    let b = pin!(Node::new('b'));
    let c = pin!(Node::new('c'));
    let mut wheel = IntrusiveWheel::new();
    // SAFETY: the nodes are declared before the wheel, so they outlive it.
    unsafe {
        wheel.insert(a.as_ref(), 100);
        wheel.insert(b.as_ref(), 5);
        wheel.insert(c.as_ref(), 100);
        assert_eq!(wheel.deadline(b.as_ref()), Some(5));
        assert!(wheel.remove(b.as_ref()));
        assert!(!wheel.remove(b.as_ref()), "already unlinked");
        assert_eq!(wheel.deadline(b.as_ref()), None);
    }
    wheel.check_invariants();
    assert_eq!(
        wheel.next_expiration(),
        Some(64),
        "the slot holding tick 100 starts at 64"
    );
    let mut fired = Vec::new();
    while let Some((node, deadline)) = wheel.poll(1_000) {
        // SAFETY: the nodes live on this stack frame.
        fired.push((*unsafe { node.as_ref() }.value(), deadline));
    }
    assert_eq!(fired, [('a', 100), ('c', 100)]);
    assert!(wheel.is_empty());
}

#[test]
fn a_drain_whose_callback_panics_still_unlinks_every_node() {
    let mut nodes: Vec<_> = (0..3u8).map(|i| Box::pin(Node::new(i))).collect();
    let mut wheel = IntrusiveWheel::new();
    for (node, deadline) in nodes.iter().zip([5, 5, 500]) {
        // SAFETY: the nodes outlive every use; the drain below unlinks them.
        unsafe { wheel.insert(node.as_ref(), deadline) };
    }
    let mut handed = 0;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wheel.drain(|_| {
            handed += 1;
            panic!("a callback panics on the first node");
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(handed, 1);
    assert!(wheel.is_empty());
    wheel.check_invariants();
    for node in &nodes {
        // SAFETY: as above.
        assert_eq!(unsafe { wheel.deadline(node.as_ref()) }, None, "unlinked");
    }
    // Its old neighbour freed, a node unlinked that way joins another wheel without
    // following a stale link (Miri checks it).
    drop(nodes.remove(0));
    let mut other = IntrusiveWheel::new();
    // SAFETY: as above; `other` is cleared before the nodes go.
    unsafe { other.insert(nodes[0].as_ref(), 1) };
    other.check_invariants();
    other.clear();
}

#[test]
fn inserting_a_linked_node_moves_it() {
    let mut wheel = IntrusiveWheel::new();
    let a = pin!(Node::new(1u8));
    // SAFETY: `a` outlives every use; `clear` unlinks it.
    unsafe {
        wheel.insert(a.as_ref(), 10);
        wheel.insert(a.as_ref(), 3);
        assert_eq!(wheel.deadline(a.as_ref()), Some(3));
    }
    assert_eq!(wheel.len(), 1);
    wheel.check_invariants();
    wheel.clear();
    // SAFETY: as above.
    assert_eq!(unsafe { wheel.deadline(a.as_ref()) }, None);
}

#[test]
fn a_node_moved_outside_the_wheel_is_placed_again_in_its_cascade() {
    use std::cell::Cell;
    let a = pin!(Node::new(Cell::new(0)));
    let b = pin!(Node::new(Cell::new(0)));
    let mut wheel = IntrusiveWheel::new();
    // SAFETY: the nodes are declared before the wheel, so they outlive it.
    unsafe {
        wheel.insert(a.as_ref(), 100);
        wheel.insert(b.as_ref(), 101);
    }
    // Both owners move their deadline to 1,000 without the wheel.
    a.value().set(1_000);
    b.value().set(1_000);
    let later = |moved: &Cell<u64>| moved.get();
    assert!(wheel.poll_with(999, later).is_none());
    // The slot [64, 128) and then [960, 1024), each cascaded once: the old deadlines
    // 100 and 101 never came up (they would have been two more level-0 slots).
    assert_eq!(wheel.cascades(), 2);
    // SAFETY: the nodes are linked into this wheel.
    assert_eq!(unsafe { wheel.deadline(a.as_ref()) }, Some(1_000));
    wheel.check_invariants();
    let mut fired = Vec::new();
    while let Some((node, deadline)) = wheel.poll_with(1_000, later) {
        fired.push((node, deadline));
    }
    // Their old deadlines hash to different lists of the slot [64, 128), so which of the
    // two the cascade found first is not their order.
    fired.sort_by_key(|&(node, _)| node != NonNull::from(&*a));
    let expected = [(NonNull::from(&*a), 1_000), (NonNull::from(&*b), 1_000)];
    assert_eq!(fired, expected, "both fired at the new deadline");
}

#[test]
fn a_due_node_moved_outside_the_wheel_goes_back_behind_what_is_due_first() {
    use std::cell::Cell;
    let a = pin!(Node::new(Cell::new(0)));
    let b = pin!(Node::new(Cell::new(0)));
    let c = pin!(Node::new(Cell::new(0)));
    let d = pin!(Node::new(Cell::new(0)));
    let mut wheel = IntrusiveWheel::new();
    // SAFETY: the nodes are declared before the wheel, so they outlive it.
    unsafe {
        wheel.insert(a.as_ref(), 5);
        wheel.insert(b.as_ref(), 7);
        wheel.insert(d.as_ref(), 8);
        wheel.insert(c.as_ref(), 20);
    }
    let later = |moved: &Cell<u64>| moved.get();
    let (first, _) = wheel.poll_with(10, later).expect("a is due");
    assert_eq!(first, NonNull::from(&*a));
    // b and d wait in the due list; b's owner moves it to 9, still due but after d, and
    // c's owner moves it to 30.
    b.value().set(9);
    c.value().set(30);
    assert_eq!(wheel.poll_with(10, later), Some((NonNull::from(&*d), 8)));
    assert_eq!(wheel.poll_with(10, later), Some((NonNull::from(&*b), 9)));
    assert_eq!(wheel.poll_with(29, later), None);
    assert_eq!(wheel.poll_with(30, later), Some((NonNull::from(&*c), 30)));
    assert!(wheel.is_empty());
}

#[test]
fn drop_unlinks_what_is_left() {
    let a = Box::pin(Node::new(()));
    {
        let mut wheel = IntrusiveWheel::new();
        // SAFETY: `a` outlives the wheel, whose drop unlinks it.
        unsafe { wheel.insert(a.as_ref(), u64::MAX) };
    }
    let mut other = IntrusiveWheel::new();
    // SAFETY: `a` was unlinked by the first wheel's drop, so it may join another wheel.
    unsafe {
        assert_eq!(other.deadline(a.as_ref()), None);
        other.insert(a.as_ref(), 1);
    }
    assert_eq!(other.poll(1).map(|(_, d)| d), Some(1));
}

/// A `later` that panics would leave the nodes of a cascade, or a due node, linked to
/// no list, and their owners free to drop them: the process aborts instead. The test runs
/// itself again as a child that does it, and checks the child died of the abort.
#[test]
#[cfg(not(miri))]
fn a_panic_in_later_aborts() {
    const CHILD: &str = "ESCAPEMENT_WHEEL_PANIC_IN_LATER";
    if std::env::var_os(CHILD).is_some() {
        let a = pin!(Node::new(std::cell::Cell::new(0u64)));
        let b = pin!(Node::new(std::cell::Cell::new(0u64)));
        let mut wheel = IntrusiveWheel::new();
        // SAFETY: the nodes are declared before the wheel, so they outlive it.
        unsafe {
            wheel.insert(a.as_ref(), 100);
            wheel.insert(b.as_ref(), 100);
        }
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wheel.poll_with(100, |_| panic!("a later that panics"))
        }));
        // Not reached: the child aborted in the cascade.
        std::process::exit(0);
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "intrusive::tests::a_panic_in_later_aborts",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stderr(std::process::Stdio::null())
        .status()
        .expect("the test binary runs again");
    assert!(
        !status.success(),
        "the child went on after the panic: {status}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(6),
            "the child died of SIGABRT: {status}"
        );
    }
}
