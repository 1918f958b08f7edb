//! The three `MissedTickBehavior`s after a stall, on the paused clock, against tokio's
//! schedules: `Burst` fires the missed ticks at once and keeps the original schedule
//! (next = missed deadline + period), `Delay` restarts one period after the late tick
//! (next = now + period), `Skip` takes the next tick of the original schedule after now. A
//! tick is missed only when it is more than 5 ms late (at a coarser timer resolution, plus
//! what its rounding adds).
//!
//! Each case records, for every tick, the instant it was due (what `tick` returns) and the
//! instant it completed, both in milliseconds since the interval started.

mod support;

use escapement::time::{self, interval, sleep, Duration, Instant, MissedTickBehavior};

use support::paused;

fn millis(start: Instant, at: Instant) -> u64 {
    u64::try_from((at - start).as_millis()).expect("a short test")
}

/// How the stall is made.
#[derive(Clone, Copy, Debug)]
enum Stall {
    /// `time::advance`, which moves the clock by exactly the stall and fires what is due.
    Advance,
    /// A `sleep` in the ticking task, which lets the clock auto-advance.
    Sleep,
}

/// Ticks a 100 ms interval `before` times, stalls for `stall_ms`, then ticks `after` more
/// times; returns `(due, completed)` in ms since the start for every tick.
fn schedule(
    workers: usize,
    behavior: MissedTickBehavior,
    before: usize,
    stall_ms: u64,
    stall: Stall,
    after: usize,
) -> Vec<(u64, u64)> {
    paused(workers).block_on(async move {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.set_missed_tick_behavior(behavior);
        let mut ticks = Vec::new();
        for _ in 0..before {
            let due = ticker.tick().await;
            ticks.push((millis(start, due), millis(start, Instant::now())));
        }
        match stall {
            Stall::Advance => time::advance(Duration::from_millis(stall_ms)).await,
            Stall::Sleep => sleep(Duration::from_millis(stall_ms)).await,
        }
        for _ in 0..after {
            let due = ticker.tick().await;
            ticks.push((millis(start, due), millis(start, Instant::now())));
        }
        ticks
    })
}

#[test]
fn burst_fires_the_missed_ticks_at_once_then_keeps_the_schedule() {
    for (workers, stall) in [(1, Stall::Advance), (1, Stall::Sleep), (4, Stall::Sleep)] {
        assert_eq!(
            schedule(workers, MissedTickBehavior::Burst, 1, 250, stall, 4),
            [(0, 0), (100, 250), (200, 250), (300, 300), (400, 400)],
            "{workers} workers, stall by {stall:?}"
        );
    }
}

#[test]
fn delay_restarts_the_schedule_after_the_late_tick() {
    for (workers, stall) in [(1, Stall::Advance), (1, Stall::Sleep), (4, Stall::Sleep)] {
        assert_eq!(
            schedule(workers, MissedTickBehavior::Delay, 1, 250, stall, 3),
            [(0, 0), (100, 250), (350, 350), (450, 450)],
            "{workers} workers, stall by {stall:?}"
        );
    }
}

#[test]
fn skip_drops_the_missed_ticks_and_keeps_the_schedule() {
    for (workers, stall) in [(1, Stall::Advance), (1, Stall::Sleep), (4, Stall::Sleep)] {
        assert_eq!(
            schedule(workers, MissedTickBehavior::Skip, 1, 250, stall, 3),
            [(0, 0), (100, 250), (300, 300), (400, 400)],
            "{workers} workers, stall by {stall:?}"
        );
    }
}

/// The example of `MissedTickBehavior`'s documentation: ticks due at 100, 200, 300, ... and
/// a stall that makes the tick due at 200 come out at 350.
#[test]
fn the_documented_table_holds() {
    let burst = schedule(2, MissedTickBehavior::Burst, 2, 250, Stall::Sleep, 4);
    assert_eq!(
        burst,
        [
            (0, 0),
            (100, 100),
            (200, 350),
            (300, 350),
            (400, 400),
            (500, 500)
        ]
    );
    let delay = schedule(2, MissedTickBehavior::Delay, 2, 250, Stall::Sleep, 3);
    assert_eq!(
        delay,
        [(0, 0), (100, 100), (200, 350), (450, 450), (550, 550)]
    );
    let skip = schedule(2, MissedTickBehavior::Skip, 2, 250, Stall::Sleep, 3);
    assert_eq!(
        skip,
        [(0, 0), (100, 100), (200, 350), (400, 400), (500, 500)]
    );
}

#[test]
fn a_stall_over_several_periods_bursts_every_missed_tick() {
    assert_eq!(
        schedule(1, MissedTickBehavior::Burst, 1, 420, Stall::Advance, 6),
        [
            (0, 0),
            (100, 420),
            (200, 420),
            (300, 420),
            (400, 420),
            (500, 500),
            (600, 600)
        ]
    );
}

#[test]
fn skip_after_a_stall_ending_on_the_schedule_waits_a_full_period() {
    // Late by exactly two periods: tokio's formula gives now + period.
    assert_eq!(
        schedule(1, MissedTickBehavior::Skip, 1, 300, Stall::Advance, 2),
        [(0, 0), (100, 300), (400, 400)]
    );
}

#[test]
fn a_tick_late_by_at_most_5_ms_is_not_missed() {
    // Delay shows the difference best: a missed tick moves the whole schedule.
    assert_eq!(
        schedule(1, MissedTickBehavior::Delay, 1, 105, Stall::Advance, 2),
        [(0, 0), (100, 105), (200, 200)],
        "5 ms late keeps the schedule"
    );
    assert_eq!(
        schedule(1, MissedTickBehavior::Delay, 1, 106, Stall::Advance, 2),
        [(0, 0), (100, 106), (206, 206)],
        "6 ms late restarts it"
    );
    assert_eq!(
        schedule(1, MissedTickBehavior::Skip, 1, 106, Stall::Advance, 2),
        [(0, 0), (100, 106), (200, 200)]
    );
}

#[test]
fn no_stall_means_the_same_schedule_for_every_behaviour() {
    for behavior in [
        MissedTickBehavior::Burst,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Skip,
    ] {
        assert_eq!(
            schedule(2, behavior, 3, 0, Stall::Advance, 2),
            [(0, 0), (100, 100), (200, 200), (300, 300), (400, 400)],
            "{behavior:?}"
        );
    }
}

#[test]
fn a_coarse_timer_resolution_does_not_make_ticks_on_time_count_as_missed() {
    // At 10 ms ticks a deadline at 13 ms fires at 20 ms, 7 ms after it: rounding, not a
    // stall, so `Delay` keeps the schedule of 13 ms steps.
    let rt = escapement::Builder::new_current_thread()
        .timer_resolution(Duration::from_millis(10))
        .start_paused(true)
        .build()
        .unwrap();
    let due = rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(13));
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut due = Vec::new();
        for _ in 0..4 {
            due.push(millis(start, ticker.tick().await));
        }
        due
    });
    assert_eq!(due, [0, 13, 26, 39]);
}
