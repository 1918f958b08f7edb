//! The time API against tokio's, on paused clocks: a port that only changes the import must
//! see the same instants.
//!
//! Proptest draws a few tasks, each a short script of sleeps, resets, timeouts, interval
//! ticks and resets, with each missed-tick behaviour, and `spawn_blocking` closures, which
//! hold auto-advance back while they run. The same scripts run on tokio's current-thread
//! runtime, and on escapement's current-thread runtime, two workers, and two workers at a
//! 10 µs tick, each started paused. Every task records what it saw (when each wait ended,
//! which side of a timeout won, each tick's scheduled instant, a sleep's deadline after its
//! reset, whether a sleep had fired before it was reset) as durations from the instant the
//! block began, and each of escapement's runs must record what tokio's did.
//!
//! In escapement's current-thread run, and the tokio run it is checked against, the block
//! also moves the clock with up to two `advance`s, each followed by a sleep. It yields before
//! each: a task woken at the same instant as the block then runs before the advance, on both
//! runtimes. Without the yield the two differ, as `docs/guarantees.md` says ("The
//! current-thread runtime right after `advance`"). With worker threads the tasks run beside
//! the block, so an advance there would race them ("Paused time and spawned tasks"): the
//! two-worker runs, and a second tokio run they are checked against, move the clock by
//! auto-advance alone. They also leave out the timeouts around a tick: the interval's timer
//! and the timeout's may have been made on different workers, in different shards, and a
//! task may then run between the two firing at one instant ("Ordering"). When there are
//! advances, the scripts leave out their blocking closures in the runs with them, as an
//! advance would race those on either runtime.
//!
//! Every duration is a whole number of milliseconds and the clocks start on a tick, so no
//! deadline falls between ticks, where the two runtimes round differently ("Paused time off a
//! tick boundary"); at a 10 µs tick the same deadlines must fire at the same instants.
//! Durations stay far below tokio's 30-year cap. Within those bounds tokio is the oracle: the
//! scripts do not say what a result should be, only that both runtimes agree on it.
//!
//! Tokio is a peer here as in the benchmarks, which is why this test lives in their package:
//! the runtime's own crates never depend on it.

use std::time::Duration;

use proptest::prelude::*;

/// One step of a task's script. Every number is in milliseconds; an `at` counts from the
/// instant the block began, so it may lie in the past when the step runs.
#[derive(Clone, Debug)]
enum Step {
    /// `sleep(ms).await`.
    Sleep(u64),
    /// `sleep_until(start + at).await`.
    SleepUntil(u64),
    /// A sleep of `first`, polled once so that it registers if `polled`; then a wait of
    /// `wait`; then a reset to `start + to` and an await of the sleep.
    Reset {
        first: u64,
        polled: bool,
        wait: u64,
        to: u64,
    },
    /// `timeout(limit, sleep(inner)).await`.
    Timeout { limit: u64, inner: u64 },
    /// `timeout_at(start + at, sleep(inner)).await`.
    TimeoutAt { at: u64, inner: u64 },
    /// `spawn_blocking` of a closure that sleeps `micros` of real time, awaited: while it
    /// runs, auto-advance must hold the paused clock, though every task is asleep.
    Blocking { micros: u64 },
    /// `interval_at(start + at, period)`, or `interval(period)` without an `at`, with a
    /// missed-tick behaviour, then its own steps.
    Interval {
        at: Option<u64>,
        period: u64,
        behavior: Behavior,
        steps: Vec<OnInterval>,
    },
}

/// A step of the block beside the tasks: `advance(by)`, then a sleep of `then_sleep`, at
/// least a tick, so that the tasks the advance woke run before the next one.
#[derive(Clone, Debug)]
struct Advance {
    by: u64,
    then_sleep: u64,
}

/// `MissedTickBehavior`, named apart from either runtime's type.
#[derive(Clone, Copy, Debug)]
enum Behavior {
    Burst,
    Delay,
    Skip,
}

/// One step of a script's interval.
#[derive(Clone, Debug)]
enum OnInterval {
    /// `tick().await`.
    Tick,
    /// `timeout(ms, tick()).await`: a tick that a timeout may cancel, which must not
    /// consume it.
    TickWithin(u64),
    /// A sleep between ticks, long enough at times to miss some.
    Work(u64),
    /// `reset()`.
    Reset,
    /// `reset_immediately()`.
    ResetImmediately,
    /// `reset_after(ms)`.
    ResetAfter(u64),
    /// `reset_at(start + at)`.
    ResetAt(u64),
}

/// What a task saw, in durations from the instant its block began.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    /// A wait ended at this instant.
    Woke(Duration),
    /// A sleep's deadline after its reset.
    Deadline(Duration),
    /// Whether a sleep had fired when its task looked, before resetting it.
    Elapsed(bool),
    /// A timeout ended at this instant, with its future done (`true`) or elapsed.
    Timeout(bool, Duration),
    /// A tick: the instant it was scheduled for, and the instant the task saw it.
    Ticked(Duration, Duration),
    /// A timeout around a tick ended at this instant, before the tick came.
    TickTimedOut(Duration),
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// The scripts' runner, written once against `rt`, the runtime's crate: each module that
/// expands it names `rt`.
macro_rules! runner {
    () => {
        use std::pin::pin;

        use rt::time::{
            interval, interval_at, sleep, sleep_until, timeout, timeout_at, Instant,
            MissedTickBehavior,
        };

        use super::{ms, Advance, Behavior, OnInterval, Seen, Step};

        /// Runs one task's script from `start`.
        async fn run(start: Instant, script: Vec<Step>) -> Vec<Seen> {
            let now = || Instant::now() - start;
            let mut seen = Vec::new();
            for step in script {
                match step {
                    Step::Sleep(d) => {
                        sleep(ms(d)).await;
                        seen.push(Seen::Woke(now()));
                    }
                    Step::SleepUntil(at) => {
                        sleep_until(start + ms(at)).await;
                        seen.push(Seen::Woke(now()));
                    }
                    Step::Reset {
                        first,
                        polled,
                        wait,
                        to,
                    } => {
                        let mut first = pin!(sleep(ms(first)));
                        if polled {
                            let _ = futures::poll!(first.as_mut());
                        }
                        sleep(ms(wait)).await;
                        seen.push(Seen::Elapsed(first.is_elapsed()));
                        first.as_mut().reset(start + ms(to));
                        seen.push(Seen::Deadline(first.deadline() - start));
                        first.await;
                        seen.push(Seen::Woke(now()));
                    }
                    Step::Timeout { limit, inner } => {
                        let done = timeout(ms(limit), sleep(ms(inner))).await.is_ok();
                        seen.push(Seen::Timeout(done, now()));
                    }
                    Step::TimeoutAt { at, inner } => {
                        let done = timeout_at(start + ms(at), sleep(ms(inner))).await.is_ok();
                        seen.push(Seen::Timeout(done, now()));
                    }
                    Step::Blocking { micros } => {
                        rt::task::spawn_blocking(move || {
                            std::thread::sleep(std::time::Duration::from_micros(micros))
                        })
                        .await
                        .expect("the closure does not panic");
                        seen.push(Seen::Woke(now()));
                    }
                    Step::Interval {
                        at,
                        period,
                        behavior,
                        steps,
                    } => {
                        let mut ticks = match at {
                            Some(at) => interval_at(start + ms(at), ms(period)),
                            None => interval(ms(period)),
                        };
                        ticks.set_missed_tick_behavior(match behavior {
                            Behavior::Burst => MissedTickBehavior::Burst,
                            Behavior::Delay => MissedTickBehavior::Delay,
                            Behavior::Skip => MissedTickBehavior::Skip,
                        });
                        for tick in steps {
                            match tick {
                                OnInterval::Tick => {
                                    let at = ticks.tick().await;
                                    seen.push(Seen::Ticked(at - start, now()));
                                }
                                OnInterval::TickWithin(d) => {
                                    match timeout(ms(d), ticks.tick()).await {
                                        Ok(at) => seen.push(Seen::Ticked(at - start, now())),
                                        Err(_) => seen.push(Seen::TickTimedOut(now())),
                                    }
                                }
                                OnInterval::Work(d) => {
                                    sleep(ms(d)).await;
                                    seen.push(Seen::Woke(now()));
                                }
                                OnInterval::Reset => ticks.reset(),
                                OnInterval::ResetImmediately => ticks.reset_immediately(),
                                OnInterval::ResetAfter(d) => ticks.reset_after(ms(d)),
                                OnInterval::ResetAt(at) => ticks.reset_at(start + ms(at)),
                            }
                        }
                    }
                }
            }
            seen
        }

        /// Runs every script as a task of `runtime` while the block moves the clock by each
        /// of `advances`, and returns what the block saw, then what each task saw.
        pub(crate) fn run_all(
            runtime: rt::runtime::Runtime,
            advances: &[Advance],
            scripts: &[Vec<Step>],
        ) -> Vec<Vec<Seen>> {
            runtime.block_on(async {
                let start = Instant::now();
                let now = || Instant::now() - start;
                let tasks: Vec<_> = scripts
                    .iter()
                    .map(|script| rt::spawn(run(start, script.clone())))
                    .collect();
                let mut block = Vec::new();
                for advance in advances {
                    // Lets the tasks woken with the block run before the advance.
                    rt::task::yield_now().await;
                    rt::time::advance(ms(advance.by)).await;
                    block.push(Seen::Woke(now()));
                    sleep(ms(advance.then_sleep)).await;
                    block.push(Seen::Woke(now()));
                }
                let mut seen = vec![block];
                for task in tasks {
                    seen.push(task.await.expect("a script does not panic"));
                }
                seen
            })
        }
    };
}

mod on_tokio {
    use ::tokio as rt;
    runner!();
}

mod on_escapement {
    use ::escapement as rt;
    runner!();
}

fn tokio_current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("tokio's runtime builds")
}

fn escapement_runtime(workers: Option<usize>, tick: Duration) -> escapement::Runtime {
    let mut builder = match workers {
        None => escapement::runtime::Builder::new_current_thread(),
        Some(workers) => {
            let mut builder = escapement::runtime::Builder::new_multi_thread();
            builder.worker_threads(workers);
            builder
        }
    };
    builder
        .enable_all()
        .start_paused(true)
        .timer_resolution(tick)
        .build()
        .expect("escapement's runtime builds")
}

fn behavior() -> impl Strategy<Value = Behavior> {
    prop_oneof![
        Just(Behavior::Burst),
        Just(Behavior::Delay),
        Just(Behavior::Skip)
    ]
}

fn on_interval() -> impl Strategy<Value = OnInterval> {
    prop_oneof![
        4 => Just(OnInterval::Tick),
        2 => (0..10u64).prop_map(OnInterval::TickWithin),
        3 => (0..25u64).prop_map(OnInterval::Work),
        1 => Just(OnInterval::Reset),
        1 => Just(OnInterval::ResetImmediately),
        1 => (0..15u64).prop_map(OnInterval::ResetAfter),
        1 => (0..60u64).prop_map(OnInterval::ResetAt),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..20u64).prop_map(Step::Sleep),
        (0..60u64).prop_map(Step::SleepUntil),
        (0..20u64, any::<bool>(), 0..20u64, 0..60u64).prop_map(|(first, polled, wait, to)| {
            Step::Reset {
                first,
                polled,
                wait,
                to,
            }
        }),
        (0..15u64, 0..15u64).prop_map(|(limit, inner)| Step::Timeout { limit, inner }),
        (0..60u64, 0..15u64).prop_map(|(at, inner)| Step::TimeoutAt { at, inner }),
        (0..200u64).prop_map(|micros| Step::Blocking { micros }),
        (
            proptest::option::of(0..30u64),
            1..10u64,
            behavior(),
            proptest::collection::vec(on_interval(), 1..12)
        )
            .prop_map(|(at, period, behavior, steps)| Step::Interval {
                at,
                period,
                behavior,
                steps
            }),
    ]
}

/// The scripts without the steps that `step` picks, and without the interval steps that
/// `tick` picks.
fn without(
    scripts: &[Vec<Step>],
    step: impl Fn(&Step) -> bool,
    tick: impl Fn(&OnInterval) -> bool,
) -> Vec<Vec<Step>> {
    let keep = |s: &Step| match s {
        Step::Interval {
            at,
            period,
            behavior,
            steps,
        } => Some(Step::Interval {
            at: *at,
            period: *period,
            behavior: *behavior,
            steps: steps.iter().filter(|t| !tick(t)).cloned().collect(),
        }),
        other => (!step(other)).then(|| other.clone()),
    };
    scripts
        .iter()
        .map(|script| script.iter().filter_map(keep).collect())
        .collect()
}

fn advances() -> impl Strategy<Value = Vec<Advance>> {
    proptest::collection::vec(
        (0..30u64, 1..10u64).prop_map(|(by, then_sleep)| Advance { by, then_sleep }),
        0..3,
    )
}

fn scripts() -> impl Strategy<Value = Vec<Vec<Step>>> {
    proptest::collection::vec(proptest::collection::vec(step(), 1..6), 1..4)
}

/// 1,024 cases, about three seconds in a debug build; `PROPTEST_CASES` sets another count,
/// for a longer search.
fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            default.cases
        } else {
            1024
        },
        failure_persistence: None,
        ..default
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn scripts_see_the_same_instants_as_on_tokio(
        advances in advances(),
        scripts in scripts(),
    ) {
        // An advance while a blocking closure runs races it on either runtime.
        let advanced = if advances.is_empty() {
            scripts.clone()
        } else {
            without(&scripts, |step| matches!(step, Step::Blocking { .. }), |_| false)
        };
        let tokio = on_tokio::run_all(tokio_current_thread(), &advances, &advanced);
        let current =
            on_escapement::run_all(escapement_runtime(None, ms(1)), &advances, &advanced);
        prop_assert_eq!(&current, &tokio, "escapement's current-thread runtime, with advances");
        // On two workers a timeout around a tick may elapse where a current-thread runtime
        // gives the tick: the two timers may be in different shards (`docs/guarantees.md`,
        // "Ordering").
        let unsharded = without(&scripts, |_| false, |tick| matches!(tick, OnInterval::TickWithin(_)));
        let tokio = on_tokio::run_all(tokio_current_thread(), &[], &unsharded);
        let workers =
            on_escapement::run_all(escapement_runtime(Some(2), ms(1)), &[], &unsharded);
        prop_assert_eq!(&workers, &tokio, "escapement's two workers");
        let fine = on_escapement::run_all(
            escapement_runtime(Some(2), Duration::from_micros(10)),
            &[],
            &unsharded,
        );
        prop_assert_eq!(&fine, &tokio, "escapement's two workers at a 10 µs tick");
    }
}
