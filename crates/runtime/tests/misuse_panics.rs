//! Programmer errors panic with a clear message, at the caller: the runtime functions called
//! outside a runtime (`spawn`, `Handle::current`, `sleep`, `sleep_until`, `timeout`,
//! `timeout_at`, `interval`, `interval_at`, `pause`, `resume`); pausing twice, resuming an
//! unpaused clock; a zero interval period; a nested `block_on` (in a current-thread
//! runtime's too) or one on a worker thread;
//! zero worker threads; a zero `global_queue_interval`, `event_interval` or I/O event
//! capacity (tokio's messages); a blank runtime name; a thread name with a NUL byte; a `JoinHandle`
//! polled after it completed. An
//! `advance` checks its runtime and clock when its future is first polled, as tokio's does:
//! polled outside a runtime, or with the clock running (resumed after the `advance` was
//! made, say), it panics then, naming where `advance` was called.
//!
//! Each has a `#[should_panic]` test on a substring of its message; one test checks,
//! through a panic hook that records locations, that the `#[track_caller]` functions report
//! the caller's location rather than one inside the crate, and another that `advance`'s
//! messages name its call.

mod support;

use std::cell::RefCell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

use escapement::time::{
    self, interval, interval_at, sleep, sleep_until, timeout, timeout_at, Duration, Instant,
};
use escapement::Handle;
use futures::task::noop_waker_ref;

use support::running;

const OUTSIDE: &str = "must be called from inside an escapement runtime";

#[test]
#[should_panic(expected = "escapement::spawn must be called from inside an escapement runtime")]
fn spawn_outside_a_runtime() {
    drop(escapement::spawn(async {}));
}

#[test]
#[should_panic(
    expected = "escapement::Handle::current must be called from inside an escapement runtime"
)]
fn handle_current_outside_a_runtime() {
    let _ = Handle::current();
}

#[test]
#[should_panic(
    expected = "escapement::time::sleep must be called from inside an escapement runtime"
)]
fn sleep_outside_a_runtime() {
    drop(sleep(Duration::from_millis(1)));
}

#[test]
#[should_panic(
    expected = "escapement::time::sleep_until must be called from inside an escapement runtime"
)]
fn sleep_until_outside_a_runtime() {
    drop(sleep_until(Instant::now()));
}

#[test]
#[should_panic(
    expected = "escapement::time::timeout must be called from inside an escapement runtime"
)]
fn timeout_outside_a_runtime() {
    drop(timeout(Duration::from_millis(1), async {}));
}

#[test]
#[should_panic(
    expected = "escapement::time::timeout_at must be called from inside an escapement runtime"
)]
fn timeout_at_outside_a_runtime() {
    drop(timeout_at(Instant::now(), async {}));
}

#[test]
#[should_panic(expected = "must be called from inside an escapement runtime")]
fn interval_outside_a_runtime() {
    let _ = interval(Duration::from_millis(1));
}

#[test]
#[should_panic(expected = "must be called from inside an escapement runtime")]
fn interval_at_outside_a_runtime() {
    let _ = interval_at(Instant::now(), Duration::from_millis(1));
}

#[test]
#[should_panic(
    expected = "escapement::time::pause must be called from inside an escapement runtime"
)]
fn pause_outside_a_runtime() {
    time::pause();
}

#[test]
#[should_panic(
    expected = "escapement::time::resume must be called from inside an escapement runtime"
)]
fn resume_outside_a_runtime() {
    time::resume();
}

#[test]
#[should_panic(
    expected = "escapement::time::advance must be polled from inside an escapement runtime"
)]
fn advance_polled_outside_a_runtime() {
    futures::executor::block_on(time::advance(Duration::from_millis(1)));
}

#[test]
#[should_panic(expected = "escapement::time::pause: the clock is already paused")]
fn pausing_twice() {
    running(1).block_on(async {
        time::pause();
        time::pause();
    });
}

#[test]
#[should_panic(expected = "escapement::time::pause: the clock is already paused")]
fn pausing_a_runtime_that_started_paused() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .start_paused(true)
        .build()
        .expect("a paused runtime");
    rt.block_on(async { time::pause() });
}

#[test]
#[should_panic(expected = "escapement::time::resume: the clock is not paused")]
fn resuming_a_running_clock() {
    running(1).block_on(async { time::resume() });
}

#[test]
#[should_panic(expected = "escapement::time::resume: the clock is not paused")]
fn resuming_twice() {
    running(1).block_on(async {
        time::pause();
        time::resume();
        time::resume();
    });
}

#[test]
#[should_panic(expected = "escapement::time::advance: the clock is not paused")]
fn advancing_a_running_clock() {
    running(1).block_on(time::advance(Duration::from_millis(1)));
}

#[test]
#[should_panic(expected = "escapement::time::advance: the clock is not paused")]
fn an_advance_polled_after_resume() {
    running(1).block_on(async {
        time::pause();
        let advance = time::advance(Duration::from_millis(1));
        time::resume();
        advance.await;
    });
}

#[test]
#[should_panic(expected = "`period` must be non-zero")]
fn a_zero_interval_period() {
    running(1).block_on(async {
        let _ = interval(Duration::ZERO);
    });
}

#[test]
#[should_panic(expected = "block_on was called inside another block_on")]
fn a_nested_block_on() {
    let outer = running(1);
    let inner = running(1);
    outer.block_on(async { inner.block_on(async {}) });
}

/// In a current-thread runtime's `block_on`, the thread runs that runtime's worker; the
/// message names the `block_on`, not a worker, in the future and in the tasks alike.
#[test]
fn a_nested_block_on_in_a_current_thread_runtime() {
    let expected = "block_on was called inside another block_on, that of a current-thread runtime";
    let outer = escapement::Builder::new_current_thread().build().unwrap();
    let inner = running(1);
    let handle = inner.handle().clone();
    panic_location(expected, || {
        outer.block_on(async { inner.block_on(async {}) })
    });
    let in_task = outer
        .block_on(outer.spawn(async move { handle.block_on(async {}) }))
        .expect_err("the task panicked")
        .into_panic();
    let message = message_of(&*in_task);
    assert!(message.contains(expected), "{message:?}");
}

/// A panic's message, for the two payloads `panic!` makes.
fn message_of(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .expect("a string message")
}

#[test]
fn block_on_on_a_worker_thread() {
    let rt = running(1);
    let other = running(1);
    let outcome = rt.block_on(rt.spawn(async move { other.block_on(async {}) }));
    let payload = outcome.expect_err("the task panicked").into_panic();
    let message = message_of(&*payload);
    assert!(
        message.contains("block_on was called on a runtime worker thread"),
        "{message}"
    );
}

#[test]
#[should_panic(expected = "a runtime needs at least one worker thread")]
fn zero_worker_threads() {
    let _ = escapement::Builder::new().worker_threads(0);
}

#[test]
#[should_panic(expected = "global_queue_interval must be greater than 0")]
fn a_zero_global_queue_interval() {
    let _ = escapement::Builder::new().global_queue_interval(0);
}

#[test]
#[should_panic(expected = "event_interval must be greater than 0")]
fn a_zero_event_interval() {
    let _ = escapement::Builder::new().event_interval(0);
}

#[test]
#[should_panic(expected = "max_io_events_per_tick must be non-zero")]
fn a_zero_io_event_capacity() {
    let _ = escapement::Builder::new().max_io_events_per_tick(0);
}

#[test]
#[should_panic(expected = "max_io_events_per_busy_tick must be non-zero")]
fn a_zero_busy_io_event_capacity() {
    let _ = escapement::Builder::new().max_io_events_per_busy_tick(0);
}

#[test]
#[should_panic(expected = "a runtime's name must not be empty")]
fn a_blank_runtime_name() {
    let _ = escapement::Builder::new().name(" \t");
}

#[test]
#[should_panic(expected = "a thread name cannot contain a NUL byte")]
fn a_thread_name_with_a_nul_byte() {
    let _ = escapement::Builder::new().thread_name("app\0");
}

#[test]
#[should_panic(expected = "a JoinHandle was polled after it returned Ready")]
fn polling_a_join_handle_after_it_completed() {
    let rt = running(1);
    let mut task = rt.spawn(async { 1 });
    let mut cx = Context::from_waker(noop_waker_ref());
    let begin = std::time::Instant::now();
    loop {
        if let Poll::Ready(output) = Pin::new(&mut task).poll(&mut cx) {
            assert_eq!(output.expect("completes"), 1);
            break;
        }
        assert!(begin.elapsed() < Duration::from_secs(10), "hung");
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = Pin::new(&mut task).poll(&mut cx);
}

thread_local! {
    /// The file and line of the last panic on this thread.
    static LAST_PANIC_AT: RefCell<Option<(String, u32)>> = const { RefCell::new(None) };
}

/// Installs, once, a panic hook that records where each panic happened (per thread) and
/// then runs the previous hook.
fn record_panic_locations() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if let Some(location) = info.location() {
                let at = (location.file().to_owned(), location.line());
                LAST_PANIC_AT.with(|last| *last.borrow_mut() = Some(at));
            }
            previous(info);
        }));
    });
}

/// Runs `f`, which must panic with a string message; returns the panic's file and line, and
/// the message.
fn panic_message(f: impl FnOnce()) -> ((String, u32), String) {
    record_panic_locations();
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("it panicked");
    let message = message_of(&*payload).to_owned();
    let at = LAST_PANIC_AT
        .with(|last| last.borrow_mut().take())
        .expect("the hook recorded the location");
    (at, message)
}

/// Runs `f`, which must panic with a message containing `expected`; returns the panic's
/// file and line.
fn panic_location(expected: &str, f: impl FnOnce()) -> (String, u32) {
    let (at, message) = panic_message(f);
    assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    at
}

/// Asserts that the panic of `f` (a closure in this file) is reported in this file, at the
/// call in the closure, not inside the crate.
fn panics_here(expected: &str, f: impl FnOnce()) {
    let (file, line) = panic_location(expected, f);
    assert!(
        file.ends_with("misuse_panics.rs"),
        "{expected:?} reported at {file}:{line}, not at the caller"
    );
}

#[test]
fn panics_are_reported_at_the_caller() {
    let d = Duration::from_millis(1);
    panics_here(OUTSIDE, || drop(escapement::spawn(async {})));
    panics_here(OUTSIDE, || drop(Handle::current()));
    panics_here(OUTSIDE, || drop(sleep(d)));
    panics_here(OUTSIDE, || drop(sleep_until(Instant::now())));
    panics_here(OUTSIDE, || drop(timeout(d, async {})));
    panics_here(OUTSIDE, || drop(timeout_at(Instant::now(), async {})));
    panics_here(OUTSIDE, || drop(interval(d)));
    panics_here(OUTSIDE, || drop(interval_at(Instant::now(), d)));
    panics_here(OUTSIDE, || time::pause());
    panics_here(OUTSIDE, || time::resume());
    panics_here("must be non-zero", || drop(interval(Duration::ZERO)));
    let mut builder = escapement::Builder::new();
    panics_here("at least one worker", || _ = builder.worker_threads(0));
    panics_here("must not be empty", || _ = builder.name(""));
    panics_here("NUL byte", || _ = builder.thread_name("app\0"));
    panics_here("greater than 0", || _ = builder.global_queue_interval(0));
    panics_here("greater than 0", || _ = builder.event_interval(0));
    panics_here("must be non-zero", || _ = builder.max_io_events_per_tick(0));
    panics_here("must be non-zero", || {
        _ = builder.max_io_events_per_busy_tick(0)
    });
    panics_here("at most 1 s", || {
        _ = builder.timer_resolution(Duration::MAX)
    });

    let rt = running(1);
    let _guard = rt.enter();
    panics_here("is not paused", || time::resume());
    time::pause();
    panics_here("already paused", || time::pause());
    time::resume();
}

/// `advance` checks its runtime and its clock when its future is first polled, as tokio's
/// does, so the panic is raised inside the crate; its message names the call instead.
#[test]
fn advance_panics_name_where_it_was_called() {
    let d = Duration::from_millis(1);
    let (outside, line) = (time::advance(d), line!());
    let (_, message) = panic_message(|| futures::executor::block_on(outside));
    let here = format!("misuse_panics.rs:{line}:");
    assert!(
        message.contains("must be polled from inside") && message.contains(&here),
        "{message:?} does not name {here}"
    );
    let rt = running(1);
    let (unpaused, line) = (time::advance(d), line!());
    let (_, message) = panic_message(|| rt.block_on(unpaused));
    let here = format!("misuse_panics.rs:{line}:");
    assert!(
        message.contains("the clock is not paused") && message.contains(&here),
        "{message:?} does not name {here}"
    );
}

#[test]
#[should_panic(
    expected = "escapement::time::interval must be called from inside an escapement runtime"
)]
fn interval_outside_a_runtime_names_interval() {
    drop(interval(Duration::from_millis(1)));
}

#[test]
#[should_panic(
    expected = "escapement::time::interval_at must be called from inside an escapement runtime"
)]
fn interval_at_outside_a_runtime_names_interval_at() {
    drop(interval_at(Instant::now(), Duration::from_millis(1)));
}
