//! `pin!`: pins named variables, or binds and pins in one step, so that a `!Unpin` future
//! can be polled through `&mut` across the iterations of a loop, and dropped where the
//! variable goes out of scope.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use escapement::time::{sleep, Duration, Instant, Sleep};

use support::{paused, DropCounter};

#[test]
fn a_pinned_sleep_keeps_its_deadline_across_a_loop() {
    paused(1).block_on(async {
        let start = Instant::now();
        let deadline = sleep(Duration::from_millis(10));
        escapement::pin!(deadline);
        let pinned: &Pin<&mut Sleep> = &deadline;
        assert!(!pinned.is_elapsed());
        let mut ticks = 0;
        loop {
            escapement::select! {
                biased;
                _ = &mut deadline => break,
                _ = sleep(Duration::from_millis(3)) => ticks += 1,
            }
        }
        assert_eq!(ticks, 3, "ticks at 3, 6 and 9 ms, then the deadline at 10");
        assert_eq!(start.elapsed(), Duration::from_millis(10));
    });
}

#[test]
fn several_names_and_the_let_form() {
    paused(1).block_on(async {
        let dropped = Arc::new(AtomicUsize::new(0));
        let a = sleep(Duration::from_millis(1));
        let b = async { 2 };
        escapement::pin!(a, b);
        escapement::pin! {
            let c = sleep(Duration::from_millis(2));
            let d = {
                let guard = DropCounter(dropped.clone());
                async move {
                    let _guard = guard;
                    4
                }
            };
        }
        (&mut a).await;
        assert_eq!((&mut b).await, 2);
        c.as_mut().await;
        assert!(c.is_elapsed());
        assert_eq!(d.as_mut().await, 4);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "a finished future is done with"
        );
        fn is_future<F: Future>(_: &Pin<&mut F>) {}
        is_future(&a);
    });
}

#[test]
fn a_pinned_future_drops_where_its_name_goes_out_of_scope() {
    paused(1).block_on(async {
        let dropped = Arc::new(AtomicUsize::new(0));
        {
            let guard = DropCounter(dropped.clone());
            let future = async move {
                let _guard = guard;
                std::future::pending::<()>().await
            };
            escapement::pin!(future);
            let polled = escapement::select! {
                biased;
                _ = &mut future => false,
                _ = std::future::ready(()) => true,
            };
            assert!(polled);
            assert_eq!(dropped.load(Ordering::SeqCst), 0, "still pinned in scope");
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    });
}
