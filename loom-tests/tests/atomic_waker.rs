//! Model 8b: the timer's waker slot. The owner registers a new waker while the driver takes
//! the slot to wake it; the owner then checks a flag the driver set before taking. Either the
//! owner sees the flag or the new waker is woken.
#![cfg(loom)]

use escapement::loom_api::AtomicWaker;
use escapement_loom_tests::counting_waker;
use loom::sync::atomic::{AtomicBool, Ordering};
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
