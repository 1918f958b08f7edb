//! `Builder::timer_resolution`: timers round their deadline up to the tick, never fire early
//! at any resolution, and resolutions finer than 10 µs are refused.

use std::pin::pin;

use escapement::time::{sleep, Duration, Instant};
use escapement::Builder;

fn runtime(resolution: Duration, paused: bool) -> escapement::Runtime {
    Builder::new()
        .worker_threads(2)
        .timer_resolution(resolution)
        .start_paused(paused)
        .build()
        .expect("a runtime")
}

#[test]
fn deadlines_round_up_to_the_tick_on_the_paused_clock() {
    for (resolution, asked, expected) in [
        (
            Duration::from_millis(1),
            Duration::from_micros(250),
            Duration::from_millis(1),
        ),
        (
            Duration::from_micros(100),
            Duration::from_micros(250),
            Duration::from_micros(300),
        ),
        (
            Duration::from_micros(10),
            Duration::from_micros(250),
            Duration::from_micros(250),
        ),
        (
            Duration::from_micros(100),
            Duration::from_millis(7),
            Duration::from_millis(7),
        ),
    ] {
        let rt = runtime(resolution, true);
        let took = rt.block_on(async move {
            let start = Instant::now();
            sleep(asked).await;
            start.elapsed()
        });
        assert_eq!(took, expected, "sleep({asked:?}) at a {resolution:?} tick");
    }
}

#[test]
fn fine_resolutions_are_never_early_on_the_real_clock() {
    for resolution in [
        Duration::from_micros(10),
        Duration::from_micros(100),
        Duration::from_millis(1),
    ] {
        let rt = runtime(resolution, false);
        let early = rt.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..200u64 {
                tasks.push(escapement::spawn(async move {
                    let asked = Duration::from_micros(50 + i * 37 % 3_000);
                    let start = Instant::now();
                    sleep(asked).await;
                    start.elapsed() < asked
                }));
            }
            let mut early = 0;
            for task in tasks {
                early += usize::from(task.await.unwrap());
            }
            early
        });
        assert_eq!(early, 0, "timers fired early at a {resolution:?} tick");
    }
}

#[test]
fn a_finer_tick_makes_sub_millisecond_sleeps_sub_millisecond() {
    // Generous: on a loaded machine a wakeup can be late, so only the median is checked,
    // against half a second; with a 1 ms tick this proves nothing, with 100 µs the median of
    // a 200 µs sleep sits far below a millisecond on any machine that is not saturated.
    let rt = runtime(Duration::from_micros(100), false);
    let mut took = rt.block_on(async {
        let mut took = Vec::new();
        for _ in 0..50 {
            let start = Instant::now();
            sleep(Duration::from_micros(200)).await;
            took.push(start.elapsed());
        }
        took
    });
    took.sort();
    assert!(took[0] >= Duration::from_micros(200));
    assert!(
        took[25] < Duration::from_millis(500),
        "median {:?}",
        took[25]
    );
}

#[test]
#[should_panic(expected = "timer_resolution must be at least 10 µs")]
fn a_resolution_below_ten_microseconds_panics() {
    Builder::new().timer_resolution(Duration::from_micros(9));
}

/// A tick of `Duration::MAX` would round every deadline up to centuries ahead; the builder
/// refuses any tick above a second, and takes a second itself.
#[test]
#[should_panic(expected = "timer_resolution must be at most 1 s")]
fn a_resolution_above_a_second_panics() {
    let mut builder = Builder::new();
    builder.timer_resolution(Duration::from_secs(1));
    builder.timer_resolution(Duration::MAX);
}

#[test]
fn a_reset_to_a_later_deadline_keeps_the_rounding() {
    let rt = runtime(Duration::from_micros(100), true);
    let took = rt.block_on(async {
        let start = Instant::now();
        let mut delay = pin!(sleep(Duration::from_micros(150)));
        // Register, then move the deadline later: the timer fires at the new tick.
        assert!(futures::poll!(delay.as_mut()).is_pending());
        delay.as_mut().reset(start + Duration::from_micros(1_050));
        delay.await;
        start.elapsed()
    });
    assert_eq!(took, Duration::from_micros(1_100));
}
