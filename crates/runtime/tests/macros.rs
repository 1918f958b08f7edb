//! `#[escapement::test]` and `#[escapement::main]`: the runtime each builds, as seen from the
//! body, with each argument, tokio's `flavor` included. (Compile errors are in `macros_ui.rs`.)

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use escapement::time::{sleep, Duration, Instant};
use escapement::Handle;

/// Whether the current runtime runs `count` tasks at once: each task blocks its worker
/// thread until all `count` have started, or gives up after ten seconds.
async fn tasks_run_at_once(count: usize) -> bool {
    let started = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let started = started.clone();
            escapement::spawn(async move {
                started.fetch_add(1, Ordering::SeqCst);
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while started.load(Ordering::SeqCst) < count {
                    if std::time::Instant::now() > deadline {
                        return false;
                    }
                    thread::sleep(Duration::from_millis(1));
                }
                true
            })
        })
        .collect();
    let mut all = true;
    for task in tasks {
        all &= task.await.expect("the task ran");
    }
    all
}

#[escapement::test]
async fn runs_the_body_on_the_test_thread() {
    assert!(
        Handle::try_current().is_ok(),
        "the body runs inside the runtime"
    );
    let name = thread::current().name().unwrap_or_default().to_owned();
    assert!(
        !name.starts_with("escapement-worker"),
        "not on a worker: {name}"
    );
    let answer = escapement::spawn(async { 6 * 7 }).await.unwrap();
    assert_eq!(answer, 42);
}

/// Checks that the runtime is a current-thread one: the tasks it spawns run on the thread of
/// the test's body, and only once the body yields.
async fn tasks_run_on_the_body_thread() {
    assert_eq!(
        Handle::current().runtime_flavor(),
        escapement::runtime::RuntimeFlavor::CurrentThread
    );
    let started = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let started = started.clone();
            escapement::spawn(async move {
                started.fetch_add(1, Ordering::SeqCst);
                thread::current().id()
            })
        })
        .collect();
    assert_eq!(
        started.load(Ordering::SeqCst),
        0,
        "no task ran before a yield"
    );
    for task in tasks {
        assert_eq!(task.await.unwrap(), thread::current().id());
    }
}

#[escapement::test]
async fn a_test_runtime_is_a_current_thread_one_by_default() {
    tasks_run_on_the_body_thread().await;
}

/// tokio's `current_thread` flavor, named.
#[escapement::test(flavor = "current_thread")]
async fn the_current_thread_flavor_runs_tasks_on_the_test_thread() {
    tasks_run_on_the_body_thread().await;
}

#[escapement::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_multi_thread_flavor_takes_a_worker_count() {
    assert!(tasks_run_at_once(2).await);
}

/// Without a count, a worker per CPU, as `Runtime::new` gives.
#[escapement::test(flavor = "multi_thread")]
async fn the_multi_thread_flavor_has_a_worker_per_cpu() {
    let cpus = thread::available_parallelism().map_or(1, usize::from);
    assert!(tasks_run_at_once(cpus).await);
}

#[escapement::test(worker_threads = 2)]
async fn two_worker_threads_run_tasks_at_once() {
    assert!(tasks_run_at_once(2).await);
}

#[escapement::test(start_paused = true)]
async fn a_paused_clock_sleeps_a_day_at_once() {
    let start = Instant::now();
    let wall = std::time::Instant::now();
    sleep(Duration::from_secs(86_400)).await;
    assert_eq!(Instant::now() - start, Duration::from_secs(86_400));
    assert!(
        wall.elapsed() < Duration::from_secs(60),
        "no real day went by"
    );
}

#[escapement::test(start_paused = true, worker_threads = 2)]
async fn arguments_combine_in_any_order() {
    let start = Instant::now();
    sleep(Duration::from_secs(3600)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(3600));
    assert!(tasks_run_at_once(2).await);
}

#[escapement::test(start_paused = false)]
async fn an_unpaused_clock_follows_real_time() {
    let start = Instant::now();
    let wall = std::time::Instant::now();
    sleep(Duration::from_millis(20)).await;
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert!(wall.elapsed() >= Duration::from_millis(20));
}

#[escapement::test]
async fn a_test_may_return_a_result() -> Result<(), io::Error> {
    let answer: Result<u32, io::Error> = Ok(7);
    assert_eq!(answer?, 7);
    Ok(())
}

#[escapement::test]
async fn inner_attributes_stay_on_the_function() {
    #![allow(unused_variables)]
    let unused = sleep(Duration::from_millis(1)).await;
}

/// Attributes on the function are kept: this one must panic to pass.
#[escapement::test]
#[should_panic(expected = "the body's panic")]
async fn a_panic_in_the_body_fails_the_test() {
    sleep(Duration::from_millis(1)).await;
    panic!("the body's panic");
}

/// `#[escapement::main]` on a function not named `main`: each call builds a runtime.
#[escapement::main(worker_threads = 1, start_paused = true)]
async fn sleep_an_hour() -> Duration {
    let start = Instant::now();
    sleep(Duration::from_secs(3600)).await;
    start.elapsed()
}

#[test]
fn main_runs_its_body_on_a_runtime_of_its_own() {
    assert!(Handle::try_current().is_err());
    assert_eq!(sleep_an_hour(), Duration::from_secs(3600));
    assert_eq!(sleep_an_hour(), Duration::from_secs(3600));
    assert!(Handle::try_current().is_err(), "the runtime is gone");
}

/// A connection pool with a synchronous entry point, as `#[tokio::main]` on a method makes.
struct Pool {
    size: usize,
}

impl Pool {
    /// `#[escapement::main]` on a method: it borrows `self` and takes arguments.
    #[escapement::main(worker_threads = 1, start_paused = true)]
    async fn connect_all(&self, timeout_each: Duration, mut log: Vec<usize>) -> Vec<usize> {
        for connection in 0..self.size {
            sleep(timeout_each).await;
            log.push(connection);
        }
        log
    }
}

#[test]
fn main_on_a_method_takes_self_and_arguments() {
    let pool = Pool { size: 3 };
    let log = pool.connect_all(Duration::from_secs(1), vec![7]);
    assert_eq!(log, [7, 0, 1, 2]);
}

#[escapement::test(name = "named-in-the-attribute")]
async fn the_name_argument_names_the_runtime() {
    assert_eq!(Handle::current().name(), Some("named-in-the-attribute"));
}

/// The crate under another name, as a `Cargo.toml` that renames the dependency gives it.
mod renamed {
    pub(crate) use escapement as timers;
}

#[escapement::test(crate = "renamed::timers", worker_threads = 2)]
async fn the_crate_argument_names_the_crate_by_its_path() {
    assert_eq!(escapement::Handle::current().metrics().workers(), 2);
}
