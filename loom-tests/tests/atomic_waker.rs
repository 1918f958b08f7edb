//! Model 8b: the waker slot of a timer, a `JoinSet` and a `LocalSet`. The owner registers a
//! new waker while another thread takes the slot to wake it; the owner then checks a flag the
//! other thread set before taking. Either the owner sees the flag or the new waker is woken.
//! Two threads may take at once (a `JoinSet`'s tasks finishing on two workers).
#![cfg(loom)]

use escapement::loom_api::AtomicWaker;
use escapement_loom_tests::counting_waker;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

#[test]
fn register_racing_take_loses_no_wakeup() {
    loom::model(|| {
        let slot = Arc::new(AtomicWaker::new());
        let fired = Arc::new(AtomicBool::new(false));
        let (old, _) = counting_waker();
        slot.register(&old);

        let driver = {
            let (slot, fired) = (slot.clone(), fired.clone());
            thread::spawn(move || {
                fired.store(true, Ordering::SeqCst);
                if let Some(waker) = slot.take() {
                    waker.wake();
                }
            })
        };
        let (new, new_wakes) = counting_waker();
        slot.register(&new);
        let seen = fired.load(Ordering::SeqCst);
        driver.join().unwrap();
        if !seen {
            assert_eq!(new_wakes.count(), 1, "the new waker was lost");
        }
    });
}

/// Two producers (tasks of a `JoinSet` finishing on two workers) each add an item and take
/// the slot, while the owner registers a new waker and then counts the items. Every item the
/// count misses must find the new waker: the take that empties the slot while the
/// registration holds it leaves the wake to the registration, which must still own the slot
/// while it empties it, and a registration that finds a take in progress must wake its own
/// waker, since that take may be holding the old one.
#[test]
fn register_racing_two_takes_loses_no_wakeup() {
    loom::model(|| {
        let slot = Arc::new(AtomicWaker::new());
        let items = Arc::new(AtomicUsize::new(0));
        let (old, _) = counting_waker();
        slot.register(&old);

        let producers: Vec<_> = (0..2)
            .map(|_| {
                let (slot, items) = (slot.clone(), items.clone());
                thread::spawn(move || {
                    items.fetch_add(1, Ordering::SeqCst);
                    if let Some(waker) = slot.take() {
                        waker.wake();
                    }
                })
            })
            .collect();
        let (new, new_wakes) = counting_waker();
        slot.register(&new);
        let seen = items.load(Ordering::SeqCst);
        for producer in producers {
            producer.join().unwrap();
        }
        if seen < 2 {
            assert!(new_wakes.count() >= 1, "the new waker was lost");
        }
    });
}
