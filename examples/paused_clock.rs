//! The paused clock: how to test timer code without waiting. On a runtime built with
//! `Builder::start_paused(true)`, time moves only by `time::advance`, or by itself straight
//! to the next timer whenever every task is waiting. A day-long sleep returns at once, and
//! every duration measured with `escapement::time::Instant` is exact.
//!
//! Written like a test: each step asserts what it shows. In a test crate, use
//! `#[escapement::test(start_paused = true)]` on an `async fn` instead of building the
//! runtime by hand.
//!
//! ```text
//! cargo run --example paused_clock
//! ```

use std::future::pending;

use escapement::time::{self, interval, sleep, timeout, Duration, Instant};

fn main() {
    // The real clock, to show how little of it the program takes.
    let wall = std::time::Instant::now();
    let rt = escapement::Builder::new()
        .start_paused(true)
        .build()
        .expect("failed to build the runtime");
    let runtime_time = rt.block_on(async {
        let begin = Instant::now();

        // 1. A day-long sleep: the runtime is idle, so the clock jumps to the timer.
        let start = Instant::now();
        sleep(Duration::from_secs(86_400)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(86_400));
        println!("slept a day:              {:?} passed", start.elapsed());

        // 2. A timeout that expires is exact too: an hour, to the nanosecond.
        let start = Instant::now();
        let result = timeout(Duration::from_secs(3600), pending::<()>()).await;
        assert!(result.is_err());
        assert_eq!(start.elapsed(), Duration::from_secs(3600));
        println!("timed out after           {:?}", start.elapsed());

        // 3. With several timers pending, the clock visits each deadline in turn: a spawned
        //    task's 30-minute sleep wakes at exactly 30 minutes while this one sleeps an hour.
        let start = Instant::now();
        let task = escapement::spawn(async move {
            sleep(Duration::from_secs(30 * 60)).await;
            start.elapsed()
        });
        sleep(Duration::from_secs(3600)).await;
        let woke_after = task.await.expect("the task panicked");
        assert_eq!(woke_after, Duration::from_secs(30 * 60));
        assert_eq!(start.elapsed(), Duration::from_secs(3600));
        println!("slept 1h; a task slept   {woke_after:?} meanwhile");

        // 4. `advance` moves the clock by hand, by exactly the amount given, and fires every
        //    timer that falls due: here a sleep's deadline passes, so it completes at once.
        let start = Instant::now();
        let nap = sleep(Duration::from_secs(60));
        time::advance(Duration::from_millis(90_500)).await;
        nap.await;
        assert_eq!(start.elapsed(), Duration::from_millis(90_500));
        println!("advanced by hand:         {:?} passed", start.elapsed());

        // 5. Schedules are exact: a week of hourly ticks lands on the hour, every time.
        let start = Instant::now();
        let mut hourly = interval(Duration::from_secs(3600));
        for _ in 0..=7 * 24 {
            hourly.tick().await;
        }
        assert_eq!(start.elapsed(), Duration::from_secs(7 * 24 * 3600));
        println!("169 hourly ticks:         {:?} passed", start.elapsed());
        begin.elapsed()
    });

    // All of that took the real clock a few milliseconds.
    let real = wall.elapsed();
    assert!(
        real < Duration::from_secs(5),
        "the paused clock waited for real"
    );
    let hours = runtime_time.as_secs() / 3600;
    println!("ok: {hours} hours of runtime time in {real:?} of real time");
}
