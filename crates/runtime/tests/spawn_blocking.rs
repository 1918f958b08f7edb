//! `task::spawn_blocking`: runs a closure on a thread of its own, reports panics as
//! `JoinError`s, and holds a paused clock's auto-advance back while it runs.

use escapement::task::spawn_blocking;
use escapement::time::{sleep, Duration, Instant};

#[test]
fn the_closure_runs_off_the_workers_and_returns_its_value() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    let (value, thread) = rt.block_on(async {
        spawn_blocking(|| (21 * 2, std::thread::current().name().map(str::to_owned)))
            .await
            .unwrap()
    });
    assert_eq!(value, 42);
    assert_eq!(thread.as_deref(), Some("escapement-blocking"));
}

#[test]
fn a_panic_becomes_a_join_error() {
    let rt = escapement::Runtime::new().expect("a runtime");
    let error = rt
        .block_on(async { spawn_blocking(|| panic!("blocking boom")).await })
        .unwrap_err();
    assert!(error.is_panic());
    assert!(error.to_string().contains("blocking boom"));
}

#[test]
fn blocking_work_holds_auto_advance_back() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .start_paused(true)
        .build()
        .expect("a runtime");
    let (slept, seen) = rt.block_on(async {
        let start = Instant::now();
        // The blocking thread reads the clock after real time passes; the runtime is idle
        // meanwhile, with a timer pending, but must not jump while the thread is busy.
        let blocking = spawn_blocking(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            Instant::now()
        });
        let timer = escapement::spawn(async move {
            sleep(Duration::from_secs(3600)).await;
            start.elapsed()
        });
        let seen = blocking.await.unwrap();
        (timer.await.unwrap(), seen - start)
    });
    assert_eq!(
        seen,
        Duration::ZERO,
        "the clock moved while the blocking thread ran"
    );
    assert_eq!(slept, Duration::from_secs(3600));
}

#[test]
#[should_panic(expected = "spawn_blocking must be called from inside an escapement runtime")]
fn spawn_blocking_outside_a_runtime_panics() {
    drop(spawn_blocking(|| ()));
}
