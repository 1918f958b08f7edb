//! `JoinHandle` and `JoinError`: the output through the handle (awaited in the runtime or
//! on another thread), dropped exactly once whether the handle goes before or after the task
//! completes, `is_finished`, `Debug`, and every accessor of `JoinError` for a cancelled and
//! a panicked task: `is_cancelled`, `is_panic`, `into_panic`, `try_into_panic`, `id`,
//! `Display`, and the conversion to `io::Error`. A handle dropped with a waker whose drop
//! panics still lets its task, and so its runtime, be freed.

mod support;

use std::any::Any;
use std::future::pending;
use std::io;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Waker};
use std::time::Duration;

use escapement::JoinError;

use support::{poll_once, running, wait_finished, wait_until, DropCounter};

fn cancelled_error() -> JoinError {
    let rt = running(1);
    let task = rt.spawn(pending::<()>());
    task.abort();
    rt.block_on(task).expect_err("the task was aborted")
}

fn panic_error<P: Any + Send + 'static>(payload: P) -> JoinError {
    let rt = running(1);
    let task = rt.spawn(async move { panic::panic_any(payload) });
    rt.block_on(task).expect_err("the task panicked")
}

#[test]
fn the_handle_gives_the_output() {
    let rt = running(2);
    let task = rt.spawn(async { vec![1, 2, 3] });
    assert_eq!(rt.block_on(task).expect("completes"), [1, 2, 3]);
}

#[test]
fn the_handle_can_be_awaited_on_another_thread() {
    let rt = running(2);
    let task = rt.spawn(async { String::from("across") });
    let output = std::thread::spawn(move || futures::executor::block_on(task))
        .join()
        .expect("the thread ran");
    assert_eq!(output.expect("completes"), "across");
}

#[test]
fn outputs_are_dropped_exactly_once_however_the_handle_goes() {
    // Fewer under Miri, which interprets every poll.
    let tasks: usize = if cfg!(miri) { 60 } else { 3_000 };
    for workers in [1, 4] {
        let rt = running(workers);
        let drops = Arc::new(AtomicUsize::new(0));
        let made = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let (drops, made) = (drops.clone(), made.clone());
                rt.spawn(async move {
                    if i % 2 == 0 {
                        escapement::task::yield_now().await;
                    }
                    made.fetch_add(1, Ordering::SeqCst);
                    DropCounter(drops)
                })
            })
            .collect();
        // A third dropped at once (likely before completion), a third from another thread
        // while tasks complete, a third awaited and their outputs dropped here.
        let mut rest = Vec::new();
        let mut elsewhere = Vec::new();
        for (i, handle) in handles.into_iter().enumerate() {
            match i % 3 {
                0 => drop(handle),
                1 => elsewhere.push(handle),
                _ => rest.push(handle),
            }
        }
        std::thread::spawn(move || drop(elsewhere))
            .join()
            .expect("dropped on another thread");
        for handle in rest {
            drop(rt.block_on(handle).expect("completes"));
        }
        // A task whose handle is gone may still be queued after its yield: the shutdown
        // would cancel it before it makes its output.
        wait_until("every task to make its output", || {
            made.load(Ordering::SeqCst) == tasks
        });
        drop(rt);
        assert_eq!(drops.load(Ordering::SeqCst), tasks, "{workers} workers");
    }
}

#[test]
fn is_finished_follows_the_task() {
    let rt = running(2);
    let (tx, rx) = futures::channel::oneshot::channel::<()>();
    let task = rt.spawn(async move {
        rx.await.expect("the sender sends");
        11
    });
    std::thread::sleep(Duration::from_millis(20));
    assert!(!task.is_finished(), "waiting on the channel");
    assert_eq!(
        format!("{task:?}"),
        format!("JoinHandle {{ id: {:?}, finished: false }}", task.id())
    );
    tx.send(()).expect("the task waits");
    wait_finished(&task);
    assert!(task.is_finished());
    assert_eq!(rt.block_on(task).expect("completes"), 11);
}

#[test]
fn a_cancelled_error_says_so() {
    let error = cancelled_error();
    assert!(error.is_cancelled());
    assert!(!error.is_panic());
    let id = error.id();
    assert_eq!(error.to_string(), format!("task {id} was cancelled"));
    assert_eq!(
        format!("{error:?}"),
        format!("JoinError::Cancelled({id:?})")
    );
    let error = error
        .try_into_panic()
        .expect_err("a cancelled task has no panic payload");
    assert!(error.is_cancelled(), "try_into_panic gives the error back");
    let io_error = io::Error::from(error);
    assert_eq!(io_error.kind(), io::ErrorKind::Other);
    assert_eq!(io_error.to_string(), "task was cancelled", "tokio's words");
}

#[test]
#[should_panic(expected = "called on a task that was cancelled")]
fn into_panic_on_a_cancelled_error_panics() {
    let _ = cancelled_error().into_panic();
}

#[test]
fn a_panic_error_carries_the_payload() {
    let error = panic_error("boom");
    assert!(error.is_panic());
    assert!(!error.is_cancelled());
    let id = error.id();
    assert_eq!(
        error.to_string(),
        format!("task {id} panicked with message \"boom\"")
    );
    assert_eq!(
        format!("{error:?}"),
        format!("JoinError::Panic({id:?}, \"boom\", ...)")
    );
    let payload = error.into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
}

#[test]
fn a_formatted_panic_message_is_kept() {
    let rt = running(1);
    let code = 7;
    let task = rt.spawn(async move { panic!("failed with code {code}") });
    let error = rt.block_on(task).expect_err("the task panicked");
    assert!(error.to_string().contains("failed with code 7"), "{error}");
    let payload = error.try_into_panic().expect("a panic payload");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some("failed with code 7")
    );
}

#[test]
fn a_non_string_payload_is_kept_and_can_be_resumed() {
    let error = panic_error(42u32);
    let id = error.id();
    assert_eq!(error.to_string(), format!("task {id} panicked"));
    assert_eq!(
        format!("{error:?}"),
        format!("JoinError::Panic({id:?}, ...)")
    );
    let payload = error.into_panic();
    let resumed = panic::catch_unwind(AssertUnwindSafe(|| panic::resume_unwind(payload)))
        .expect_err("resume_unwind panics again");
    assert_eq!(resumed.downcast_ref::<u32>(), Some(&42));
}

#[test]
fn task_ids_are_unique() {
    let rt = running(2);
    // Fewer under Miri, which interprets every abort.
    let tasks = if cfg!(miri) { 20 } else { 50 };
    let mut ids: Vec<escapement::task::Id> = (0..tasks)
        .map(|_| {
            let task = rt.spawn(pending::<()>());
            task.abort();
            rt.block_on(task).expect_err("aborted").id()
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), tasks);
}

/// A waker each of whose copies panics when dropped.
fn a_waker_whose_drop_panics() -> ManuallyDrop<Waker> {
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn nothing(_: *const ()) {}
    fn drop_waker(_: *const ()) {
        panic!("a waker's drop panicked");
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, nothing, nothing, drop_waker);
    // SAFETY: the vtable's functions ignore the data pointer, and never touch memory.
    ManuallyDrop::new(unsafe { Waker::from_raw(clone(std::ptr::null())) })
}

/// The handle holds the last reference that frees its task, and the task holds the runtime's
/// shared state, with the thread callbacks in it: a panic in the waker's drop that unwound
/// out before the handle released its reference leaked both.
#[test]
fn a_handle_dropped_with_a_waker_whose_drop_panics_leaks_neither_task_nor_runtime() {
    let sentinel = Arc::new(());
    let held = sentinel.clone();
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .on_thread_start(move || drop(held.clone()))
        .build()
        .expect("a runtime");
    let (release, released) = futures::channel::oneshot::channel::<()>();
    let mut task = Box::pin(rt.spawn(async move {
        let _ = released.await;
    }));
    assert!(poll_once(task.as_mut(), &a_waker_whose_drop_panics()).is_pending());
    let dropped = panic::catch_unwind(AssertUnwindSafe(|| drop(task)));
    assert!(
        dropped.is_err(),
        "the waker's drop panicked out of the handle's"
    );
    release.send(()).unwrap();
    drop(rt);
    wait_until("the runtime's shared state to be freed", || {
        Arc::strong_count(&sentinel) == 1
    });
}
