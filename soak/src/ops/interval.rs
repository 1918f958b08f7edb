//! An interval's ticks (from `tick`, or from the interval as a `Stream`) under each missed-tick
//! behaviour, between stalls, sleeps, resets and ticks dropped unfinished.
//!
//! Every tick returns an instant not after it completes, at least a period after the one
//! before; `Burst` and `Skip` keep to the schedule (a whole number of periods after the start
//! or the last reset), and `Burst` returns exactly the next one. After `reset_at` the next tick
//! is the one it set; after the other resets too on the exact clock, which the interval and
//! the checks read alike. On the exact clock each tick completes at once if it was due when
//! awaited, else at its instant rounded up to the tick.

use std::sync::atomic::Ordering::Relaxed;
use std::task::Poll;
use std::time::Duration;

use escapement::time::{self, Instant, Interval, MissedTickBehavior};
use futures::StreamExt;
use rand::Rng;

use super::{Ctx, MS};
use crate::round::fail;

/// What the next tick must be, from the ticks and resets so far.
struct Schedule {
    behavior: MissedTickBehavior,
    period: Duration,
    /// The exact instant of the next tick, where it is known.
    expected: Option<Instant>,
    /// The last tick returned (not compared with the next one after a reset).
    previous: Option<Instant>,
    /// Where `Burst` and `Skip` count their periods from.
    start: Instant,
    /// Whether the interval was reset since the last tick.
    reset: bool,
}

pub(super) async fn ticks(cx: &mut Ctx) {
    let period = Duration::from_micros(cx.rng.random_range(200..10_000));
    let behavior = match cx.rng.random_range(0..3) {
        0 => MissedTickBehavior::Burst,
        1 => MissedTickBehavior::Delay,
        _ => MissedTickBehavior::Skip,
    };
    let ticks = cx.rng.random_range(2..7);
    cx.begin(period * (ticks + 3) + 30 * MS);
    let created = cx.now();
    let at = cx.rng.random_bool(0.3);
    let start = if at {
        created + cx.micros(5000)
    } else {
        created
    };
    let mut interval = if at {
        time::interval_at(start, period)
    } else {
        time::interval(period)
    };
    interval.set_missed_tick_behavior(behavior);
    // `interval` starts at the runtime's reading, which only the exact clock shares (another
    // task's `advance` may move the paused one in between).
    let expected = (at || cx.round.exact()).then_some(start);
    let mut schedule = Schedule {
        behavior,
        period,
        expected,
        previous: None,
        start,
        reset: false,
    };
    // The ticks come from `tick`, or from the interval as a `Stream`.
    let stream = cx.rng.random_bool(0.3);
    for k in 0..ticks {
        let before = cx.now();
        let tick = if stream {
            interval
                .next()
                .await
                .expect("an interval's stream never ends")
        } else {
            interval.tick().await
        };
        let now = cx.now();
        if k == 0 && schedule.expected.is_none() {
            if tick < created || tick > now {
                fail!(
                    cx.round,
                    "interval()'s first tick {tick:?} not in [{created:?}, {now:?}]"
                );
            }
            schedule.start = tick;
        }
        check_tick(cx, &mut schedule, k, before, tick, now);
        disturb(cx, &mut interval, &mut schedule, tick).await;
    }
}

/// Checks tick `k`, returned as `tick` and seen done at `now` after it was awaited at
/// `before`, and moves the schedule past it.
fn check_tick(
    cx: &Ctx,
    schedule: &mut Schedule,
    k: u32,
    before: Instant,
    tick: Instant,
    now: Instant,
) {
    let Schedule {
        behavior, period, ..
    } = *schedule;
    if now < tick {
        fail!(
            cx.round,
            "{behavior:?} tick {k} returned {:?} early",
            tick - now
        );
    }
    if schedule.reset {
        schedule.start = tick;
    }
    if let Some(expected) = schedule.expected {
        if tick != expected {
            let reset = schedule.reset;
            fail!(
                cx.round,
                "{behavior:?} tick {k} is {tick:?}, not {expected:?} (reset: {reset})"
            );
        }
    }
    if let (Some(previous), false) = (schedule.previous, schedule.reset) {
        if tick < previous + period {
            let gap = tick - previous;
            fail!(
                cx.round,
                "{behavior:?} tick {k} came {gap:?} after the one before"
            );
        }
        let off = (tick - schedule.start).as_nanos() % period.as_nanos();
        if behavior != MissedTickBehavior::Delay && off != 0 {
            fail!(
                cx.round,
                "{behavior:?} tick {k} is {off} ns off its schedule"
            );
        }
    }
    if cx.round.exact() {
        let due = if tick <= before {
            before
        } else {
            cx.round.round_up(tick)
        };
        if now != due {
            fail!(cx.round, "exact: tick {k} done at {now:?}, not {due:?}");
        }
    } else if cx.round.std_clock() && tick > before {
        cx.round
            .late("interval tick", now.saturating_duration_since(tick));
    }
    cx.round.counts.timer_checks.fetch_add(1, Relaxed);
    schedule.previous = Some(tick);
    schedule.reset = false;
    schedule.expected = (behavior == MissedTickBehavior::Burst).then(|| tick + period);
}

/// Between ticks, after `tick`: sometimes stalls the worker (so that ticks are missed),
/// sleeps a few periods, resets the interval, or polls a tick once and drops it.
async fn disturb(cx: &mut Ctx, interval: &mut Interval, schedule: &mut Schedule, tick: Instant) {
    let Schedule {
        behavior, period, ..
    } = *schedule;
    match cx.rng.random_range(0..10) {
        0 if cx.round.std_clock() && !cx.round.quiet() => {
            std::thread::sleep(Duration::from_micros(cx.rng.random_range(0..8000)));
        }
        1 => time::sleep(period * cx.rng.random_range(1..4)).await,
        2 => {
            let now = cx.now();
            // The interval reads the runtime's clock, which only the exact one shares.
            let exact = cx.round.exact();
            let known = |at: Instant| exact.then_some(at);
            schedule.expected = match cx.rng.random_range(0..4) {
                0 => {
                    interval.reset();
                    known(now + period)
                }
                1 => {
                    interval.reset_immediately();
                    known(now)
                }
                2 => {
                    let after = cx.micros(5000);
                    interval.reset_after(after);
                    known(now + after)
                }
                _ => {
                    let at = now + cx.micros(5000);
                    interval.reset_at(at);
                    Some(at)
                }
            };
            schedule.reset = true;
        }
        3 => {
            // A tick polled once and dropped: it counts only if it was ready.
            if let Poll::Ready(next) = futures::poll!(std::pin::pin!(interval.tick())) {
                if cx.now() < next {
                    fail!(cx.round, "a polled tick is early");
                }
                if next < tick + period {
                    fail!(
                        cx.round,
                        "{behavior:?}: an extra tick {:?} after one",
                        next - tick
                    );
                }
                if schedule.expected.is_some_and(|expected| next != expected) {
                    fail!(cx.round, "{behavior:?}: a polled tick is off its schedule");
                }
                schedule.previous = Some(next);
                schedule.expected = (behavior == MissedTickBehavior::Burst).then(|| next + period);
            }
        }
        _ => {}
    }
}
