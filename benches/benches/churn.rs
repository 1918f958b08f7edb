//! Connection churn as a TCP stack does it: timer operations per second with 400k timers
//! live, on escapement and on tokio with the same number of workers: one per CPU (the
//! runtimes' default), then one.
//!
//! # The model
//!
//! [`CONNECTIONS`] simulated connections, split evenly among [`HANDLERS`] tasks, as a stack
//! keeps many connections per task (one task per timer would measure the scheduler instead).
//! Each connection holds four timers, 400k in all (how many of them are armed at a moment
//! depends on the rate, below):
//!
//! - **retransmit** ([`RTO`]): reset on every event to `now + RTO`, a later deadline: the
//!   common case of an ACK arriving for data in flight (`Sleep::reset`). A connection that
//!   sees no event for an RTO has its retransmit fire; the next event's reset arms it again
//!   (a registration), and the fire is counted then.
//! - **keep-alive** ([`KEEPALIVE`]): restarted on every [`KEEPALIVE_EVERY`]th event of its
//!   connection, as stacks restart it lazily (`Sleep::reset`, later).
//! - **delayed ACK** ([`DELAYED_ACK`]): every event sends the ACK the connection owed on an
//!   outgoing segment, cancelling the pending delayed-ACK timer (dropped in place), and the
//!   segment that arrived arms a new one (created and polled once, which registers it). A
//!   connection that sees no event for 40 ms has its delayed ACK fire instead: that is
//!   counted as a fire, not a cancel.
//! - **TIME-WAIT** ([`TIME_WAIT`], scaled down from 2 MSL so that several generations fire
//!   in a run): every connection slot has one, all of the same length, so each handler keeps
//!   them in a FIFO in deadline order and polls only the head. A fired head is a closed
//!   connection leaving TIME-WAIT; its slot's next connection closes at once, re-arming the
//!   same timer for `now + TIME_WAIT` (`Sleep::reset` after firing) at the back of the FIFO.
//!   The first generation's deadlines are spread evenly over one TIME-WAIT period.
//!
//! A handler picks connections uniformly at random (seeded), reads the clock once per batch
//! of [`BATCH`] events (as a stack does per read from its socket), then checks its TIME-WAIT
//! FIFO and yields (`task::yield_now`), standing for waiting on the socket, so the runtime
//! gets to fire timers. The handlers run under `task::unconstrained` on both runtimes: the
//! cooperative budget would otherwise make every timer poll after the 128th of a batch
//! return `Pending` without registering.
//!
//! Timer operations counted: resets (retransmit, keep-alive, TIME-WAIT re-arm), registers
//! (delayed ACK armed), cancels (delayed ACK dropped before firing) and fires (TIME-WAIT, and
//! the delayed ACKs and retransmits found fired by their connection's next event). The handlers set up their connections, wait for each other, then
//! run for [`DURATION`]; ops/s is all handlers' operations over the time from the first
//! handler's start to the last one's end. Each run is a child process (the binary re-executes
//! itself with `--child`), [`RUNS`] runs per runtime, alternating; a run still going after
//! [`HANG_LIMIT`] is killed and reported as hung, and a runtime's runs stop after
//! [`MAX_HANGS`] hangs.
//!
//! The delayed ACKs are cancelled before they fire only if each connection sees an event
//! within 40 ms, that is at 2.5M events/s or more over the 100k connections: a runtime that
//! handles fewer sees more of them fire. Retransmits fire the same way, for a connection
//! with no event in 200 ms: with events arriving at random, a share of about
//! e^(-0.2 s * events per second / 100k) of the events find theirs fired (6 % at 1.4M
//! events/s, under 0.1 % at 3.5M). The table gives each kind of operation, and the
//! connection events per second (one delayed-ACK registration each), so that a difference
//! in the mix shows.
//!
//! ```sh
//! cargo bench -p escapement-benches --bench churn
//! ```
//!
//! # The floor
//!
//! `churn --child floor WORKERS` (the bench binary, run by hand) runs the same handlers on
//! escapement's executor against [`FloorSleep`], a timer with no driver behind it: 104 bytes
//! like escapement's `Sleep`, whose whole state is a deadline in milliseconds that a reset
//! overwrites, compared with a clock that a thread advances every millisecond. It never
//! takes a lock, never enters a list and never wakes anyone, and `sleep` does not read the
//! clock. What it costs is what the loop costs around any timer: picking connections,
//! touching the boxed timers (a cache miss each for most of the 400k), polling and yielding.
//! No runtime's timers can run the loop faster, so its figure bounds what any runtime can
//! reach against tokio's.

use std::collections::VecDeque;
use std::future::Future;
use std::ops::AddAssign;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[allow(
    dead_code,
    reason = "each benchmark binary uses its own part of the shared code"
)]
mod common;

use common::{
    child_args, poll_once, print_result, started_by_cargo_bench, worker_counts, Escapement, Rt,
    Runs, Tokio,
};

/// Simulated connections.
const CONNECTIONS: usize = 100_000;

/// Tasks handling them.
const HANDLERS: usize = 8;

/// Events a handler processes between two yields.
const BATCH: usize = 256;

/// How long the handlers run, after setting up.
const DURATION: Duration = Duration::from_secs(3);

/// Retransmission timeout.
const RTO: Duration = Duration::from_millis(200);

/// Keep-alive idle time.
const KEEPALIVE: Duration = Duration::from_secs(75);

/// The keep-alive timer is restarted on every this many events of its connection.
const KEEPALIVE_EVERY: u8 = 8;

/// Delayed-ACK timeout.
const DELAYED_ACK: Duration = Duration::from_millis(40);

/// TIME-WAIT length (scaled down from 2 MSL).
const TIME_WAIT: Duration = Duration::from_millis(250);

/// Runs per runtime and worker count.
const RUNS: usize = 5;

/// A run still going after this long is killed (a run takes about 4 s).
const HANG_LIMIT: Duration = Duration::from_secs(30);

/// After this many hung runs of a runtime, its remaining runs at that worker count are
/// skipped.
const MAX_HANGS: usize = 2;

/// Timer operations, by kind.
#[derive(Debug, Default, Clone, Copy)]
struct Ops {
    resets: u64,
    registers: u64,
    cancels: u64,
    fires: u64,
}

impl Ops {
    fn total(&self) -> u64 {
        self.resets + self.registers + self.cancels + self.fires
    }
}

impl AddAssign for Ops {
    fn add_assign(&mut self, other: Ops) {
        self.resets += other.resets;
        self.registers += other.registers;
        self.cancels += other.cancels;
        self.fires += other.fires;
    }
}

/// One simulated connection's timers (TIME-WAIT lives in its handler's FIFO).
struct Connection<R: Rt> {
    retransmit: Pin<Box<R::Sleep>>,
    keepalive: Pin<Box<R::Sleep>>,
    delayed_ack: Pin<Box<R::Sleep>>,
    events: u8,
}

/// What a run measured: operations and the seconds they took.
#[derive(Debug, Clone, Copy)]
struct Sample {
    ops: Ops,
    seconds: f64,
}

impl Sample {
    fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.seconds
    }
}

fn main() {
    if let Some(args) = child_args() {
        let workers: usize = args[1].parse().expect("a worker count");
        let sample = match args[0].as_str() {
            "escapement" => churn(&Escapement::new(workers)),
            "tokio" => churn(&Tokio::new(workers)),
            "floor" => churn(&Floor::new(workers)),
            other => panic!("--child escapement|tokio|floor WORKERS, got {other:?}"),
        };
        let o = sample.ops;
        print_result(format_args!(
            "{} {} {} {} {}",
            sample.seconds, o.resets, o.registers, o.cancels, o.fires
        ));
        return;
    }
    if !started_by_cargo_bench(module_path!()) {
        return;
    }
    for workers in worker_counts() {
        table(workers);
    }
}

/// Runs every child with `workers` workers and prints the table.
fn table(workers: usize) {
    println!(
        "churn: {CONNECTIONS} connections x 4 timers, {HANDLERS} handler tasks, workers: {workers}, \
         {DURATION:?} per run, {RUNS} runs each"
    );
    let runs = Runs::collect(workers, RUNS, HANG_LIMIT, MAX_HANGS, parse, |sample| {
        format!(
            "{:.2} M timer ops/s ({:?} in {:.2} s)",
            sample.per_second(sample.ops.total()) / 1e6,
            sample.ops,
            sample.seconds
        )
    });
    println!();
    println!("| workers: {workers}, M ops/s | escapement | tokio | escapement / tokio |");
    println!("|---|---|---|---|");
    let rows: [Row; 5] = [
        ("all timer operations", Ops::total),
        ("resets", |o| o.resets),
        ("registers (= connection events)", |o| o.registers),
        ("cancels", |o| o.cancels),
        ("fires", |o| o.fires),
    ];
    for (label, count) in rows {
        runs.print_row(label, |s| s.per_second(count(&s.ops)) / 1e6, 2);
    }
    runs.print_completed();
    println!();
}

/// A row of the table: its label and the count it reports.
type Row = (&'static str, fn(&Ops) -> u64);

/// A child's result line.
fn parse(line: &str) -> Sample {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let count = |i: usize| fields[i].parse::<u64>().expect("a count");
    Sample {
        seconds: fields[0].parse().expect("seconds"),
        ops: Ops {
            resets: count(1),
            registers: count(2),
            cancels: count(3),
            fires: count(4),
        },
    }
}

/// One run, in a child process.
fn churn<R: Rt>(rt: &R) -> Sample {
    rt.block_on(async {
        let ready = Arc::new(AtomicUsize::new(0));
        let handlers: Vec<_> = (0..HANDLERS)
            .map(|h| rt.spawn(R::unconstrained(handler::<R>(h as u64, ready.clone()))))
            .collect();
        let mut ops = Ops::default();
        let mut first_start: Option<Instant> = None;
        let mut last_end: Option<Instant> = None;
        for handler in handlers {
            let (o, start, end) = handler.await;
            ops += o;
            first_start = Some(first_start.map_or(start, |s| s.min(start)));
            last_end = Some(last_end.map_or(end, |e| e.max(end)));
        }
        let seconds =
            (last_end.expect("a handler") - first_start.expect("a handler")).as_secs_f64();
        Sample { ops, seconds }
    })
}

/// One handler: sets up its connections, waits for the others, runs for `DURATION`; returns
/// its operations and when it started and ended.
async fn handler<R: Rt>(seed: u64, ready: Arc<AtomicUsize>) -> (Ops, Instant, Instant) {
    let n = CONNECTIONS / HANDLERS;
    let mut rng = SmallRng::seed_from_u64(seed);

    // Set up: every connection's four timers, registered.
    let mut connections: Vec<Connection<R>> = Vec::with_capacity(n);
    for _ in 0..n {
        let jitter = |rng: &mut SmallRng, d: Duration| d + d.mul_f64(rng.random::<f64>());
        let mut c = Connection::<R> {
            retransmit: Box::pin(R::sleep(jitter(&mut rng, RTO))),
            keepalive: Box::pin(R::sleep(jitter(&mut rng, KEEPALIVE))),
            delayed_ack: Box::pin(R::sleep(DELAYED_ACK)),
            events: rng.random(),
        };
        poll_once(c.retransmit.as_mut()).await;
        poll_once(c.keepalive.as_mut()).await;
        poll_once(c.delayed_ack.as_mut()).await;
        connections.push(c);
    }
    let mut time_wait: VecDeque<Pin<Box<R::Sleep>>> = VecDeque::with_capacity(n);
    for i in 1..=n {
        let mut sleep = Box::pin(R::sleep(TIME_WAIT.mul_f64(i as f64 / n as f64)));
        poll_once(sleep.as_mut()).await;
        time_wait.push_back(sleep);
    }

    // Start together.
    ready.fetch_add(1, Ordering::AcqRel);
    while ready.load(Ordering::Acquire) < HANDLERS {
        R::yield_now().await;
    }

    let start = Instant::now();
    let end = start + DURATION;
    let mut ops = Ops::default();
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        for _ in 0..BATCH {
            let c = &mut connections[rng.random_range(0..n)];
            // An ACK for data in flight: the retransmit timer moves later. One that fired
            // (its connection idle for an RTO) is armed again by the reset.
            if R::is_elapsed(&c.retransmit) {
                ops.fires += 1;
            }
            R::reset(c.retransmit.as_mut(), now + RTO);
            ops.resets += 1;
            c.events = c.events.wrapping_add(1);
            if c.events % KEEPALIVE_EVERY == 0 {
                R::reset(c.keepalive.as_mut(), now + KEEPALIVE);
                ops.resets += 1;
            }
            // The owed ACK leaves with this segment (cancel), the data that came in arms a
            // new delayed ACK (register).
            if R::is_elapsed(&c.delayed_ack) {
                ops.fires += 1;
            } else {
                ops.cancels += 1;
            }
            c.delayed_ack.set(R::sleep(DELAYED_ACK));
            poll_once(c.delayed_ack.as_mut()).await;
            ops.registers += 1;
        }
        // Connections leaving TIME-WAIT; each slot's next connection enters it at once.
        while let Some(head) = time_wait.front_mut() {
            if !poll_once(head.as_mut()).await {
                break;
            }
            ops.fires += 1;
            R::reset(head.as_mut(), now + TIME_WAIT);
            poll_once(head.as_mut()).await;
            ops.resets += 1;
            time_wait.rotate_left(1);
        }
        R::yield_now().await;
    }
    (ops, start, Instant::now())
}

/// The floor's runtime: escapement's executor with [`FloorSleep`] for its timers.
#[derive(Debug)]
struct Floor(escapement::Runtime);

impl Floor {
    /// Escapement with `workers` workers, and the thread that advances [`FloorSleep`]'s
    /// clock, which runs until the process exits.
    fn new(workers: usize) -> Floor {
        FloorSleep::now_ms();
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(1));
            FloorSleep::advance();
        });
        Floor(Escapement::new(workers).0)
    }
}

/// A timer with nothing behind it but its deadline: see "The floor" above. Polling it once
/// its deadline has passed is `Ready`, before that `Pending`, and it never wakes the task, so
/// it serves only a loop that polls it again by itself (as the churn polls its TIME-WAIT
/// heads); awaited, it would never finish.
#[derive(Debug)]
struct FloorSleep {
    /// The deadline, in milliseconds since [`FloorSleep::base`].
    deadline_ms: u64,
    /// The rest of the 104 bytes of escapement's `Sleep`, so that the timers take the same
    /// memory and the same cache misses.
    _rest: [u8; size_of::<escapement::time::Sleep>() - size_of::<u64>()],
}

/// The floor's clock: milliseconds since [`FloorSleep::base`], advanced by [`Floor`]'s thread.
static FLOOR_NOW_MS: AtomicU64 = AtomicU64::new(0);

impl FloorSleep {
    /// The instant the floor's clock counts from.
    fn base() -> Instant {
        static BASE: OnceLock<Instant> = OnceLock::new();
        *BASE.get_or_init(Instant::now)
    }

    /// The floor's clock, in milliseconds: a load, no clock read.
    fn now_ms() -> u64 {
        Self::base();
        FLOOR_NOW_MS.load(Ordering::Relaxed)
    }

    /// Moves the floor's clock to the real time.
    fn advance() {
        let ms = u64::try_from(Self::base().elapsed().as_millis()).unwrap_or(u64::MAX);
        FLOOR_NOW_MS.store(ms, Ordering::Relaxed);
    }

    /// `deadline` in the floor's milliseconds, rounded up as a runtime rounds up to its tick.
    fn to_ms(deadline: Instant) -> u64 {
        let since = deadline.saturating_duration_since(Self::base());
        u64::try_from(since.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }
}

impl Future for FloorSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.deadline_ms <= FloorSleep::now_ms() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Rt for Floor {
    const NAME: &'static str = "floor";

    type Sleep = FloorSleep;

    fn sleep(duration: Duration) -> FloorSleep {
        let ms = u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        FloorSleep {
            deadline_ms: FloorSleep::now_ms().saturating_add(ms),
            _rest: [0; size_of::<escapement::time::Sleep>() - size_of::<u64>()],
        }
    }

    fn deadline_after(duration: Duration) -> impl Copy {
        Instant::now() + duration
    }

    fn reset(sleep: Pin<&mut FloorSleep>, deadline: Instant) {
        sleep.get_mut().deadline_ms = FloorSleep::to_ms(deadline);
    }

    fn is_elapsed(sleep: &FloorSleep) -> bool {
        sleep.deadline_ms <= FloorSleep::now_ms()
    }

    fn timeout<F: Future>(
        duration: Duration,
        future: F,
    ) -> impl Future<Output = Option<F::Output>> {
        Escapement::timeout(duration, future)
    }

    common::rt_executor!(escapement, unconstrained: escapement::task::unconstrained);
}
