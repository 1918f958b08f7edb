//! The operations a task draws, each of which checks what it sees.
//!
//! A top-level task runs a few operations, one after another or two at once. Each draws its
//! kind and its durations from its own seeded generator, so a round's operations are the same
//! on every run of its seed; only their interleaving differs. Durations are drawn in
//! microseconds, often with odd nanoseconds added, so that deadlines fall between ticks.
//!
//! - `timers`: sleeps, past deadlines, resets of every kind, two timers' order, `select!`,
//!   and many sleeps in one task;
//! - `timeout`: timeouts around a sleep and around other futures;
//! - `interval`: ticks under each missed-tick behaviour, stalls, resets, dropped ticks;
//! - `tasks`: timers moved between tasks and threads, aborts, yields, `block_in_place`,
//!   `spawn_blocking`, `JoinSet`, a `LocalSet` on a blocking thread, nested and detached
//!   spawns, panics;
//! - `outside`: timers on threads outside the runtime, and a second runtime's timers.

mod interval;
mod outside;
mod tasks;
mod timeout;
mod timers;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant as StdInstant};

use escapement::task;
use escapement::time::{self, Instant, Sleep};
use rand::rngs::SmallRng;
use rand::Rng;

use crate::round::Round;

pub(crate) const MS: Duration = Duration::from_millis(1);
/// Far enough that a timer set to it never fires within a round.
pub(crate) const HOUR: Duration = Duration::from_secs(3600);

/// The message of the panics the operations raise on purpose; the panic hook skips them.
pub(crate) const INTENDED_PANIC: &str = "soak: an intended panic";

/// The kinds of operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Op {
    Sleep,
    PastDeadline,
    ResetEarlier,
    ResetLater,
    ResetPast,
    ResetAfterFire,
    ResetUnpolled,
    TimeoutSleep,
    TimeoutOther,
    Interval,
    CrossTask,
    CrossThreadDrop,
    Abort,
    YieldLoop,
    BlockInPlace,
    SpawnBlocking,
    JoinSet,
    LocalSet,
    Nested,
    Panic,
    OrderPair,
    Select,
    Many,
    ResetRace,
    OutsideThread,
    OtherRuntime,
}

impl Op {
    /// Every kind, in declaration order: `Op::ALL[op as usize] == op`.
    pub(crate) const ALL: [Op; 26] = [
        Op::Sleep,
        Op::PastDeadline,
        Op::ResetEarlier,
        Op::ResetLater,
        Op::ResetPast,
        Op::ResetAfterFire,
        Op::ResetUnpolled,
        Op::TimeoutSleep,
        Op::TimeoutOther,
        Op::Interval,
        Op::CrossTask,
        Op::CrossThreadDrop,
        Op::Abort,
        Op::YieldLoop,
        Op::BlockInPlace,
        Op::SpawnBlocking,
        Op::JoinSet,
        Op::LocalSet,
        Op::Nested,
        Op::Panic,
        Op::OrderPair,
        Op::Select,
        Op::Many,
        Op::ResetRace,
        Op::OutsideThread,
        Op::OtherRuntime,
    ];

    /// Whether the quiet mode draws this kind: timers only, and nothing that spins or blocks.
    fn is_quiet(self) -> bool {
        !matches!(
            self,
            Op::Abort
                | Op::YieldLoop
                | Op::BlockInPlace
                | Op::SpawnBlocking
                | Op::JoinSet
                | Op::LocalSet
                | Op::Nested
                | Op::Panic
                | Op::OutsideThread
                | Op::OtherRuntime
        )
    }

    /// Draws a kind, plain sleeps and resets more often than the others.
    fn draw(round: &Round, rng: &mut SmallRng, depth: u32) -> Op {
        let op = if rng.random_bool(0.25) {
            Op::ALL[rng.random_range(0..4)]
        } else if round.quiet() {
            let mut quiet = Op::ALL.into_iter().filter(|op| op.is_quiet());
            let n = quiet.clone().count();
            quiet.nth(rng.random_range(0..n)).expect("n counts them")
        } else {
            Op::ALL[rng.random_range(0..Op::ALL.len())]
        };
        let unfit = match op {
            Op::OtherRuntime => round.other.lock().unwrap().is_none(),
            Op::BlockInPlace => !round.multi,
            // `Handle::block_on` on a blocking thread, as outside threads do it.
            Op::LocalSet => round.starts_paused(),
            // Bounds the tree of tasks an operation spawns.
            Op::CrossTask | Op::Abort | Op::JoinSet | Op::Nested => depth > 2,
            _ => false,
        };
        if unfit {
            Op::Sleep
        } else {
            op
        }
    }
}

/// What an operation works with.
pub(crate) struct Ctx {
    round: Arc<Round>,
    rng: SmallRng,
    /// Where the watchdog sees the operation: a top-level task's slot, or none.
    slot: Option<usize>,
    /// How deep in spawns by other operations this one runs.
    depth: u32,
    op: Op,
}

impl Ctx {
    /// Marks the operation in flight, due to end within about `expect`.
    fn begin(&self, expect: Duration) {
        if let Some(slot) = self.slot {
            self.round.begin(slot, self.op, expect);
        }
    }

    fn now(&self) -> Instant {
        self.round.now()
    }

    /// A duration of up to `max_us` microseconds, sometimes with odd nanoseconds added.
    fn micros(&mut self, max_us: u64) -> Duration {
        draw_micros(&mut self.rng, max_us)
    }

    /// A generator for a child, seeded from this one.
    fn child_rng(&mut self) -> SmallRng {
        rand::SeedableRng::seed_from_u64(self.rng.random())
    }
}

pub(crate) fn draw_micros(rng: &mut SmallRng, max_us: u64) -> Duration {
    let nanos = if rng.random_bool(0.3) {
        rng.random_range(0..1000)
    } else {
        0
    };
    Duration::from_micros(rng.random_range(0..=max_us)) + Duration::from_nanos(nanos)
}

pub(crate) type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs one operation drawn from `rng`, watched in `slot` if it has one.
pub(crate) fn run(
    round: Arc<Round>,
    mut rng: SmallRng,
    slot: Option<usize>,
    depth: u32,
) -> BoxFuture {
    Box::pin(async move {
        let op = Op::draw(&round, &mut rng, depth);
        round.counts.ops.fetch_add(1, Relaxed);
        let mut cx = Ctx {
            round,
            rng,
            slot,
            depth,
            op,
        };
        match op {
            Op::Sleep => timers::sleep(&mut cx).await,
            Op::PastDeadline => timers::past_deadline(&mut cx).await,
            Op::ResetEarlier => timers::reset_earlier(&mut cx).await,
            Op::ResetLater => timers::reset_later(&mut cx).await,
            Op::ResetPast => timers::reset_past(&mut cx).await,
            Op::ResetAfterFire => timers::reset_after_fire(&mut cx).await,
            Op::ResetUnpolled => timers::reset_unpolled(&mut cx).await,
            Op::OrderPair => timers::order_pair(&mut cx).await,
            Op::Select => timers::select(&mut cx).await,
            Op::Many => timers::many(&mut cx).await,
            Op::ResetRace => timers::reset_race(&mut cx).await,
            Op::TimeoutSleep => timeout::around_sleep(&mut cx).await,
            Op::TimeoutOther => timeout::around_other(&mut cx).await,
            Op::Interval => interval::ticks(&mut cx).await,
            Op::CrossTask => tasks::cross_task(&mut cx).await,
            Op::CrossThreadDrop => tasks::cross_thread_drop(&mut cx).await,
            Op::Abort => tasks::abort(&mut cx).await,
            Op::YieldLoop => tasks::yield_loop(&mut cx).await,
            Op::BlockInPlace => tasks::block_in_place(&mut cx).await,
            Op::SpawnBlocking => tasks::spawn_blocking(&mut cx).await,
            Op::JoinSet => tasks::join_set(&mut cx).await,
            Op::LocalSet => tasks::local_set(&mut cx).await,
            Op::Nested => tasks::nested(&mut cx).await,
            Op::Panic => tasks::panic(&mut cx).await,
            Op::OutsideThread => outside::thread(&mut cx).await,
            Op::OtherRuntime => outside::other_runtime(&mut cx).await,
        }
        if let Some(slot) = cx.slot {
            cx.round.end(slot);
        }
    })
}

/// Polls a sleep once, outside the cooperative budget (which could make a due one pending).
async fn poll_once(sleep: &mut Pin<Box<Sleep>>) -> Poll<()> {
    futures::poll!(task::unconstrained(sleep.as_mut()))
}

/// Waits, with a sleep, until about 300 µs before `target` on std's clock, then spins to it
/// (for at most 1 ms), to land a poll or a reset right by a deadline.
async fn approach(target: StdInstant) {
    let margin = Duration::from_micros(300);
    if target > StdInstant::now() + margin {
        time::sleep_until(Instant::from_std(target - margin)).await;
    }
    let give_up = StdInstant::now() + MS;
    while StdInstant::now() < target && StdInstant::now() < give_up {
        std::hint::spin_loop();
    }
}

fn intended_panic() -> ! {
    std::panic::panic_any(INTENDED_PANIC.to_string())
}
