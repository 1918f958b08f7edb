//! A `LocalSet`'s panics, aborts and drops: a panic or an abort becomes a `JoinError`, and an
//! abort from another thread drops the future on the set's thread; a task that aborts itself
//! is cancelled; dropping the set drops the pending futures there and cancels their join
//! handles, even when one of those destructors panics, and so does a thread that exits with
//! the set in a thread-local; a waker that outlives the set does nothing, and a guard that
//! outlives it spawns tasks that are cancelled at once. (The rest of the set is in
//! `local_set.rs` and `local_set_turns.rs`.)

mod support;

use std::cell::RefCell;
use std::future::{pending, poll_fn};
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::thread::{self, ThreadId};
use std::time::Duration;

use escapement::task::{self, LocalSet};

use support::{running, within, DropsOn};

/// A bound that only catches a hang (a lost wake-up) in the tests that wait on other threads.
const HANG: Duration = Duration::from_secs(30);

#[test]
fn a_panic_in_a_local_task_is_a_join_error() {
    let rt = running(1);
    let local = LocalSet::new();
    local.block_on(&rt, async {
        let boom = task::spawn_local(async { panic!("boom") });
        assert!(boom.await.unwrap_err().is_panic());
        // The set runs on.
        assert_eq!(task::spawn_local(async { 3 }).await.unwrap(), 3);
    });
}

#[test]
fn an_abort_from_another_thread_drops_the_future_on_the_sets_thread() {
    within(HANG, || {
        let rt = running(2);
        let local = LocalSet::new();
        let dropped_on = Arc::new(Mutex::new(None));
        let here = thread::current().id();
        local.block_on(&rt, async {
            let guard = DropsOn(dropped_on.clone());
            let task = task::spawn_local(async move {
                let _guard = guard;
                pending::<()>().await;
            });
            task::yield_now().await;
            let abort = task.abort_handle();
            // The abort runs on a worker thread.
            escapement::spawn(async move { abort.abort() })
                .await
                .unwrap();
            assert!(task.await.unwrap_err().is_cancelled());
        });
        assert_eq!(*dropped_on.lock().unwrap(), Some(here));
    });
}

#[test]
fn dropping_the_set_drops_pending_futures_on_its_thread_and_cancels_them() {
    let rt = running(1);
    let dropped_on = Arc::new(Mutex::new(None));
    let here = thread::current().id();
    let (task, never_polled) = {
        let local = LocalSet::new();
        let guard = DropsOn(dropped_on.clone());
        let task = local.spawn_local(async move {
            let _guard = guard;
            pending::<()>().await;
        });
        // Polled once, then left waiting.
        rt.block_on(local.run_until(task::yield_now()));
        let never_polled = local.spawn_local(async { 1 });
        (task, never_polled)
    };
    assert_eq!(*dropped_on.lock().unwrap(), Some(here));
    // The handles move to another thread and see the cancellation there.
    let errors = thread::spawn(move || {
        let rt = running(1);
        (
            rt.block_on(task).unwrap_err(),
            rt.block_on(never_polled).unwrap_err(),
        )
    })
    .join()
    .unwrap();
    assert!(errors.0.is_cancelled() && errors.1.is_cancelled());
}

#[test]
fn a_waker_that_outlives_its_set_does_nothing() {
    let rt = running(1);
    let (send, recv) = mpsc::channel::<Waker>();
    {
        let local = LocalSet::new();
        drop(local.spawn_local(poll_fn(move |cx| {
            send.send(cx.waker().clone()).ok();
            Poll::<()>::Pending
        })));
        rt.block_on(local.run_until(task::yield_now()));
    }
    let waker = recv.recv().unwrap();
    // On another thread and on this one: the task is gone, so nothing runs or breaks.
    let other = waker.clone();
    thread::spawn(move || other.wake()).join().unwrap();
    waker.wake();
}

#[test]
fn a_guard_that_outlives_its_set_spawns_cancelled_tasks() {
    let rt = running(1);
    let local = LocalSet::new();
    let guard = local.enter();
    drop(local);
    // The set is gone, so the task is cancelled at once and its future dropped here.
    let dropped_on = Arc::new(Mutex::new(None));
    let future_guard = DropsOn(dropped_on.clone());
    let task = task::spawn_local(async move {
        let _guard = future_guard;
    });
    assert_eq!(*dropped_on.lock().unwrap(), Some(thread::current().id()));
    assert!(rt.block_on(task).unwrap_err().is_cancelled());
    // Dropping the guard lets go of the set's last reference.
    drop(guard);
    assert!(std::panic::catch_unwind(|| task::spawn_local(async {})).is_err());
}

#[test]
fn a_local_task_that_aborts_itself_while_running_is_cancelled() {
    let rt = running(1);
    let local = LocalSet::new();
    local.block_on(&rt, async {
        let handle: Rc<RefCell<Option<task::AbortHandle>>> = Rc::default();
        let own = handle.clone();
        let task = task::spawn_local(async move {
            task::yield_now().await;
            own.borrow()
                .as_ref()
                .expect("set before the first yield")
                .abort();
            task::yield_now().await;
            unreachable!("aborted at the yield before");
        });
        *handle.borrow_mut() = Some(task.abort_handle());
        assert!(task.await.unwrap_err().is_cancelled());
    });
}

/// Records the thread it is dropped on in a shared list; the one made with `panics` panics
/// there, after spawning onto the set being dropped.
struct DropsInto(Arc<Mutex<Vec<ThreadId>>>, bool);

impl Drop for DropsInto {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(thread::current().id());
        if self.1 {
            // The set is closed by now: the task is cancelled at once.
            let late = task::spawn_local(async {});
            assert!(late.is_finished());
            panic!("a destructor that panics");
        }
    }
}

#[test]
fn a_destructor_that_panics_while_the_set_drops_leaves_the_others_dropped_there() {
    let rt = running(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let here = thread::current().id();
    let handles: Vec<_> = {
        let local = LocalSet::new();
        let handles = (0..3)
            .map(|i| {
                let guard = DropsInto(seen.clone(), i == 1);
                local.spawn_local(async move {
                    let _guard = guard;
                    pending::<()>().await;
                })
            })
            .collect();
        rt.block_on(local.run_until(task::yield_now()));
        handles
    };
    assert_eq!(*seen.lock().unwrap(), vec![here; 3]);
    let errors: Vec<_> = handles
        .into_iter()
        .map(|handle| rt.block_on(handle).unwrap_err())
        .collect();
    assert!(errors[0].is_cancelled() && errors[1].is_panic() && errors[2].is_cancelled());
}

std::thread_local! {
    static KEPT: RefCell<Option<LocalSet>> = const { RefCell::new(None) };
}

#[test]
fn a_set_kept_in_a_thread_local_drops_its_tasks_when_the_thread_exits() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let thread_seen = seen.clone();
    let exited = thread::spawn(move || {
        let local = LocalSet::new();
        let guard = DropsInto(thread_seen, false);
        drop(local.spawn_local(async move {
            let _guard = guard;
            pending::<()>().await;
        }));
        // A guard that is never dropped, so the set is current as the thread's locals go.
        std::mem::forget(local.enter());
        KEPT.with(|kept| *kept.borrow_mut() = Some(local));
        thread::current().id()
    })
    .join()
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![exited]);
}
