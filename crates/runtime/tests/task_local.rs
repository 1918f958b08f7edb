//! Task-local storage (`task_local!`, `task::LocalKey`, `task::futures::TaskLocalFuture`):
//! a scope's value seen across awaits, also by a task that moves between workers; nested
//! scopes of one key (the innermost wins, the outer comes back); keys independent of each
//! other; `sync_scope`; reads outside every scope (a panic from `with`, an `AccessError`
//! from `try_with`); tasks on one worker that never see each other's values; a panic inside
//! a scope, which leaves the key as it was; `take_value` before and after completion; the
//! inner future dropped with the value still set; and the macro's syntax (visibility,
//! attributes, several keys, no trailing `;`).

mod support;

use std::error::Error;
use std::future::{pending, Future};
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use escapement::task::futures::TaskLocalFuture;
use escapement::task::{self, AccessError, LocalKey};
use escapement::time::{sleep, Duration};
use futures::FutureExt;

use support::{poll_once, running, CountingWaker, DropCounter};

escapement::task_local! {
    static NUMBER: u32;
    static NAME: String;
}

/// Keys declared in a module of their own, to check that visibility and attributes carry
/// over to the `static`s, and that the last `;` is optional.
mod keys {
    escapement::task_local! {
        /// Public: used from the parent module.
        pub static PUBLIC: u64;

        /// Visible in the crate only.
        pub(crate) static CRATE: &'static str;

        #[allow(dead_code, reason = "checks that attributes apply: unused, it warns")]
        static UNUSED: u8;

        #[doc = "Visible in the parent module."]
        pub(super) static PARENT: Vec<u8>
    }
}

/// Returns `Pending` once (waking its task), then `Ready`: a yield that needs no runtime.
#[derive(Default)]
struct PendingOnce {
    yielded: bool,
}

impl Future for PendingOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Records what `NUMBER` reads when it is dropped.
struct ReadsNumberOnDrop(Arc<Mutex<Option<Result<u32, AccessError>>>>);

impl Drop for ReadsNumberOnDrop {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(NUMBER.try_get());
    }
}

#[test]
fn a_scoped_value_is_seen_across_awaits_and_sleeps_by_tasks_moving_between_workers() {
    let rt = running(2);
    // Eight tasks with a value each, sleeping and yielding, so that both workers poll them
    // in turn, and a task's next poll may run on the other one.
    let tasks: Vec<_> = (0..8)
        .map(|value| {
            rt.spawn(NUMBER.scope(value, async move {
                for _ in 0..10 {
                    sleep(Duration::from_millis(1)).await;
                    assert_eq!(NUMBER.get(), value, "after a sleep");
                    task::yield_now().await;
                    assert_eq!(NUMBER.get(), value, "after a yield");
                }
                NUMBER.get()
            }))
        })
        .collect();
    rt.block_on(async {
        for (value, task) in (0..).zip(tasks) {
            assert_eq!(task.await.unwrap(), value);
        }
        assert!(
            NUMBER.try_get().is_err(),
            "block_on's future is outside the scopes"
        );
    });
}

#[test]
fn nested_scopes_of_one_key_see_the_innermost_and_restore_the_outer() {
    running(1).block_on(async {
        NUMBER
            .scope(1, async {
                assert_eq!(NUMBER.get(), 1);
                NUMBER
                    .scope(2, async {
                        assert_eq!(NUMBER.get(), 2);
                        task::yield_now().await;
                        assert_eq!(NUMBER.get(), 2);
                        NUMBER.sync_scope(3, || assert_eq!(NUMBER.get(), 3));
                        assert_eq!(NUMBER.get(), 2);
                    })
                    .await;
                assert_eq!(NUMBER.get(), 1, "the outer value is back");
                task::yield_now().await;
                assert_eq!(NUMBER.get(), 1);
            })
            .await;
        assert!(NUMBER.try_get().is_err(), "unset after the outer scope");
    });
}

#[test]
fn two_keys_hold_independent_values() {
    running(1).block_on(async {
        NUMBER
            .scope(5, async {
                assert!(NAME.try_get().is_err(), "setting one key sets no other");
                NAME.scope("inner".to_string(), async {
                    task::yield_now().await;
                    assert_eq!(NUMBER.get(), 5);
                    assert_eq!(NAME.get(), "inner");
                    NUMBER
                        .scope(6, async {
                            assert_eq!(NUMBER.get(), 6);
                            assert_eq!(NAME.get(), "inner");
                        })
                        .await;
                })
                .await;
                assert_eq!(NUMBER.get(), 5);
                assert!(NAME.try_get().is_err());
            })
            .await;
    });
}

#[test]
fn sync_scope_sets_the_value_for_the_closure_only_and_returns_its_output() {
    assert!(NUMBER.try_get().is_err());
    let output = NUMBER.sync_scope(10, || {
        let inner = NUMBER.sync_scope(11, || NUMBER.get());
        (NUMBER.get(), inner)
    });
    assert_eq!(output, (10, 11));
    assert!(NUMBER.try_get().is_err());
}

#[test]
fn sync_scope_drops_its_value_when_it_returns() {
    let drops = Arc::new(AtomicUsize::new(0));
    escapement::task_local! {
        static COUNTED: DropCounter;
    }
    COUNTED.sync_scope(DropCounter(drops.clone()), || {
        assert_eq!(drops.load(Ordering::SeqCst), 0);
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
#[should_panic(expected = "cannot access a task-local storage value without setting it first")]
fn with_outside_every_scope_panics() {
    NUMBER.with(|_| ());
}

#[test]
#[should_panic(expected = "cannot access a task-local storage value without setting it first")]
fn get_in_a_task_outside_every_scope_panics() {
    running(1).block_on(async {
        let task = escapement::spawn(async { NUMBER.get() });
        panic::resume_unwind(task.await.unwrap_err().into_panic());
    });
}

#[test]
fn try_with_and_try_get_outside_every_scope_give_an_access_error() {
    let ran = AtomicUsize::new(0);
    let error: AccessError = NAME
        .try_with(|_| ran.fetch_add(1, Ordering::SeqCst))
        .unwrap_err();
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the closure does not run");
    assert!(matches!(NAME.try_get(), Err(AccessError { .. })));
    assert_eq!(error.to_string(), "task-local value not set");
    assert_eq!(format!("{error:?}"), "AccessError");
    assert_eq!(error, error.clone());
    let boxed: Box<dyn Error + Send + Sync> = Box::new(error);
    assert!(boxed.source().is_none());
}

#[test]
fn tasks_interleaving_on_one_worker_each_see_their_own_value() {
    let rt = running(1);
    let log = Arc::new(Mutex::new(Vec::<(u32, Option<u32>)>::new()));
    let parent = {
        let log = log.clone();
        rt.spawn(async move {
            // Spawned from the only worker, so none runs before the parent returns.
            let scoped = |id: u32, value: u32| {
                let log = log.clone();
                escapement::spawn(NUMBER.scope(value, async move {
                    for _ in 0..5 {
                        log.lock().unwrap().push((id, NUMBER.try_get().ok()));
                        task::yield_now().await;
                    }
                }))
            };
            let unscoped = {
                let log = log.clone();
                escapement::spawn(async move {
                    for _ in 0..5 {
                        log.lock().unwrap().push((0, NUMBER.try_get().ok()));
                        task::yield_now().await;
                    }
                })
            };
            (scoped(1, 100), scoped(2, 200), unscoped)
        })
    };
    rt.block_on(async {
        let (first, second, unscoped) = parent.await.unwrap();
        first.await.unwrap();
        second.await.unwrap();
        unscoped.await.unwrap();
    });
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 15);
    for &(id, seen) in log.iter() {
        let expected = [None, Some(100), Some(200)][id as usize];
        assert_eq!(seen, expected, "task {id} in {log:?}");
    }
    let switches = log.windows(2).filter(|w| w[0].0 != w[1].0).count();
    assert!(switches >= 4, "the tasks interleaved: {log:?}");
}

#[test]
fn a_panic_inside_a_scoped_task_leaves_the_key_unset_on_its_worker() {
    let rt = running(1);
    rt.block_on(async {
        let panicked = escapement::spawn(NUMBER.scope(7, async {
            task::yield_now().await;
            assert_eq!(NUMBER.get(), 7);
            panic!("a panic inside the scope");
        }));
        let error = panicked.await.unwrap_err();
        assert!(error.is_panic());
        // The only worker runs the next task, on the thread the panic unwound on.
        let seen = escapement::spawn(async { NUMBER.try_get() }).await.unwrap();
        assert!(seen.is_err(), "the key is unset: {seen:?}");
    });
}

#[test]
fn a_panic_inside_a_nested_scope_restores_the_outer_value() {
    running(1).block_on(async {
        NUMBER
            .scope(1, async {
                let inner = NUMBER.scope(2, async {
                    task::yield_now().await;
                    assert_eq!(NUMBER.get(), 2);
                    panic!("a panic inside the inner scope");
                });
                let caught = AssertUnwindSafe(inner).catch_unwind().await;
                assert!(caught.is_err());
                assert_eq!(NUMBER.get(), 1);
            })
            .await;
        assert!(NUMBER.try_get().is_err());
    });
}

#[test]
fn a_panic_inside_sync_scope_restores_the_previous_value() {
    NUMBER.sync_scope(1, || {
        let caught = panic::catch_unwind(|| {
            NUMBER.sync_scope(2, || panic!("a panic inside the inner scope"));
        });
        assert!(caught.is_err());
        assert_eq!(NUMBER.get(), 1);
    });
    let caught = panic::catch_unwind(|| NUMBER.sync_scope(3, || panic!("a panic in a scope")));
    assert!(caught.is_err());
    assert!(NUMBER.try_get().is_err());
}

#[test]
fn take_value_before_completion_unsets_the_key_for_the_rest_of_the_future() {
    let (_, waker) = CountingWaker::waker();
    let mut future = Box::pin(NUMBER.scope(5, async {
        let before = NUMBER.try_get();
        PendingOnce::default().await;
        (before, NUMBER.try_get())
    }));
    assert!(poll_once(future.as_mut(), &waker).is_pending());
    assert_eq!(future.as_mut().take_value(), Some(5));
    assert_eq!(future.as_mut().take_value(), None);
    // Also inside an enclosing scope of the key: the taken value leaves it unset, not
    // the enclosing one's.
    let output = NUMBER.sync_scope(9, || poll_once(future.as_mut(), &waker));
    let Poll::Ready((before, after)) = output else {
        panic!("the future completes on its second poll");
    };
    assert_eq!(before, Ok(5));
    assert!(after.is_err(), "unset after take_value: {after:?}");
}

#[test]
fn take_value_after_completion_gives_the_value_back_and_the_inner_future_is_gone() {
    running(1).block_on(async {
        let drops = Arc::new(AtomicUsize::new(0));
        let counter = DropCounter(drops.clone());
        let mut future = Box::pin(NAME.scope("kept".to_string(), async move {
            let _counter = counter;
            NAME.get()
        }));
        assert_eq!(future.as_mut().await, "kept");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the inner future is dropped"
        );
        assert!(format!("{future:?}").contains("completed: true"));
        assert_eq!(future.as_mut().take_value().as_deref(), Some("kept"));
        assert_eq!(future.as_mut().take_value(), None);
    });
}

#[test]
#[should_panic(expected = "`TaskLocalFuture` polled after completion")]
fn polling_after_completion_panics() {
    let (_, waker) = CountingWaker::waker();
    let mut future = Box::pin(NUMBER.scope(1, async {}));
    assert!(poll_once(future.as_mut(), &waker).is_ready());
    let _ = poll_once(future.as_mut(), &waker);
}

#[test]
#[should_panic(
    expected = "cannot enter a task-local scope while the task-local storage is borrowed"
)]
fn entering_a_scope_inside_with_of_the_same_key_panics() {
    NUMBER.sync_scope(1, || NUMBER.with(|_| NUMBER.sync_scope(2, || ())));
}

#[test]
fn dropping_the_future_drops_the_inner_future_with_the_value_set() {
    let (_, waker) = CountingWaker::waker();
    let read = Arc::new(Mutex::new(None));
    let reader = ReadsNumberOnDrop(read.clone());
    let mut future = Box::pin(NUMBER.scope(3, async move {
        let _reader = reader;
        pending::<()>().await;
    }));
    assert!(poll_once(future.as_mut(), &waker).is_pending());
    drop(future);
    assert_eq!(*read.lock().unwrap(), Some(Ok(3)));
    assert!(NUMBER.try_get().is_err(), "unset after the drop");

    // Never polled: the captured reader still drops inside the scope.
    let read = Arc::new(Mutex::new(None));
    let reader = ReadsNumberOnDrop(read.clone());
    drop(NUMBER.scope(4, async move {
        let _reader = reader;
    }));
    assert_eq!(*read.lock().unwrap(), Some(Ok(4)));
}

#[test]
fn dropping_the_future_after_take_value_drops_the_inner_future_without_it() {
    let read = Arc::new(Mutex::new(None));
    let reader = ReadsNumberOnDrop(read.clone());
    let mut future = Box::pin(NUMBER.scope(3, async move {
        let _reader = reader;
    }));
    assert_eq!(future.as_mut().take_value(), Some(3));
    drop(future);
    assert!(matches!(*read.lock().unwrap(), Some(Err(_))));
}

#[test]
fn an_aborted_task_drops_its_future_with_the_value_set() {
    let read = Arc::new(Mutex::new(None));
    running(1).block_on(async {
        let reader = ReadsNumberOnDrop(read.clone());
        let task = escapement::spawn(NUMBER.scope(8, async move {
            let _reader = reader;
            pending::<()>().await;
        }));
        task::yield_now().await;
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
    });
    assert_eq!(*read.lock().unwrap(), Some(Ok(8)));
}

#[test]
fn the_macro_keeps_visibility_and_attributes_and_declares_several_keys() {
    let public: &'static LocalKey<u64> = &keys::PUBLIC;
    let parent: &'static LocalKey<Vec<u8>> = &keys::PARENT;
    let output = public.sync_scope(1, || {
        keys::CRATE.sync_scope("crate", || {
            parent.sync_scope(vec![2], || {
                (keys::PUBLIC.get(), keys::CRATE.get(), keys::PARENT.get())
            })
        })
    });
    assert_eq!(output, (1, "crate", vec![2]));
    assert!(keys::PUBLIC.try_get().is_err());
}

#[test]
fn keys_and_futures_format_with_debug() {
    assert_eq!(format!("{:?}", NUMBER), "LocalKey { .. }");
    let future: TaskLocalFuture<u32, _> = NUMBER.scope(12, async {});
    assert_eq!(
        format!("{future:?}"),
        "TaskLocalFuture { value: Some(12), completed: false }"
    );
}
