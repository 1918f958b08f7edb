//! Where most timeouts live in a real service: a server holding many connections, each with a
//! read timeout and an idle timeout pushed back on every message.
//!
//! 10,000 simulated connections; each peer sends messages at random gaps of 10..=150 ms, then
//! either hangs up or goes quiet. Every connection keeps two timers for its whole life, reset
//! on every message (a reset to a later deadline takes no lock):
//!
//! - a read timeout (100 ms): the peer is slow; a real server might send a ping. It fires at
//!   most once per silence.
//! - an idle timeout (500 ms): the peer is gone; the server closes the connection.
//!
//! The report checks that every idle close came no earlier than its deadline, shows how late
//! they were, and compares the read timeouts fired with the gaps the peers' scripts held.
//!
//! ```text
//! cargo run --release --example connection_timeouts
//! ```

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

use escapement::time::{sleep_until, Duration, Instant};

const CONNECTIONS: u64 = 10_000;
const READ_TIMEOUT: Duration = Duration::from_millis(100);
const IDLE_TIMEOUT: Duration = Duration::from_millis(500);

/// How one connection ended, and what happened on it.
#[derive(Default)]
struct Outcome {
    messages: u64,
    read_timeouts: u64,
    /// Silences in the peer's script longer than the read timeout (a quiet peer's last one
    /// included): each should fire it once.
    long_gaps: u64,
    /// `Some(lateness)` if the idle timeout closed it, `None` if the peer hung up.
    idle_close: Option<Duration>,
}

/// What woke a connection.
enum Event {
    Message,
    ReadTimeout,
    Idle,
}

#[escapement::main]
async fn main() {
    // 1. Accept every connection: one task each, as a server would.
    let start = Instant::now();
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|i| escapement::spawn(connection(i)))
        .collect();

    // 2. Wait for all of them to close, and add up what happened.
    let (mut messages, mut read_timeouts, mut long_gaps) = (0, 0, 0);
    let mut idle_lateness = Vec::new();
    for task in tasks {
        let outcome = task.await.expect("a connection task panicked");
        messages += outcome.messages;
        read_timeouts += outcome.read_timeouts;
        long_gaps += outcome.long_gaps;
        idle_lateness.extend(outcome.idle_close);
    }
    idle_lateness.sort();

    // 3. Report. Lateness is measured from the idle deadline asked for; the runtime rounds
    //    it up to its 1 ms tick, so up to 1 ms of it is by design.
    let hung_up = CONNECTIONS - idle_lateness.len() as u64;
    let at = |q: f64| idle_lateness[((idle_lateness.len() - 1) as f64 * q) as usize];
    println!(
        "{CONNECTIONS} connections, {messages} messages, all closed after {:.2?}",
        start.elapsed()
    );
    println!("  closed by the peer:         {hung_up}");
    println!(
        "  closed by the idle timeout: {} (none early: each checked against its deadline)",
        idle_lateness.len()
    );
    println!(
        "    late by: min {:?}, p50 {:?}, p99 {:?}, max {:?}",
        at(0.0),
        at(0.5),
        at(0.99),
        at(1.0)
    );
    // The two agree unless a connection is polled over 10 ms late: the gaps are whole tens
    // of ms, and a message that has arrived by then wins the tie with the read timeout.
    println!("  read timeouts fired:        {read_timeouts} (silences over {READ_TIMEOUT:?} in the peers' scripts: {long_gaps})");
    let metrics = escapement::Handle::current().metrics();
    println!(
        "  runtime: {} timers registered, {} resets, {} fired, {} cancelled",
        metrics.timers_registered(),
        metrics.timer_resets(),
        metrics.timers_fired(),
        metrics.timers_cancelled()
    );
}

/// One connection, from accept to close.
async fn connection(id: u64) -> Outcome {
    // The peer's script, drawn from a generator seeded with the connection's id: how many
    // messages it sends, whether it then hangs up or goes quiet, and each gap.
    let mut rng = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut draw = move |low: u64, high: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        low + rng % (high - low + 1)
    };
    let to_send = draw(5, 30);
    let goes_quiet = draw(1, 10) <= 3;
    let mut next_gap = move || Duration::from_millis(10 * draw(1, 15));

    // The three things a connection waits on, each a timer that is reset, never recreated:
    // the next message's arrival (standing in for a socket read), and the two timeouts.
    let now = Instant::now();
    let first_gap = next_gap();
    let mut idle_deadline = now + IDLE_TIMEOUT;
    let mut arrival = pin!(sleep_until(now + first_gap));
    let mut read = pin!(sleep_until(now + READ_TIMEOUT));
    let mut idle = pin!(sleep_until(idle_deadline));
    let mut read_fired = false;
    let mut outcome = Outcome {
        long_gaps: u64::from(first_gap > READ_TIMEOUT),
        ..Outcome::default()
    };

    loop {
        // Wait for whichever comes first. A message that has arrived wins a tie; a read
        // timeout that already fired is not polled again until the next message.
        let event = poll_fn(|cx| {
            if arrival.as_mut().poll(cx).is_ready() {
                Poll::Ready(Event::Message)
            } else if idle.as_mut().poll(cx).is_ready() {
                Poll::Ready(Event::Idle)
            } else if !read_fired && read.as_mut().poll(cx).is_ready() {
                Poll::Ready(Event::ReadTimeout)
            } else {
                Poll::Pending
            }
        })
        .await;

        let now = Instant::now();
        match event {
            // A message: push both timeouts back, and schedule the peer's next message.
            Event::Message => {
                outcome.messages += 1;
                if outcome.messages == to_send && !goes_quiet {
                    return outcome; // the peer hung up after its last message
                }
                read.as_mut().reset(now + READ_TIMEOUT);
                read_fired = false;
                idle_deadline = now + IDLE_TIMEOUT;
                idle.as_mut().reset(idle_deadline);
                // A quiet peer never sends again: its next "message" is an hour away.
                let gap = if outcome.messages == to_send {
                    Duration::from_secs(3600)
                } else {
                    next_gap()
                };
                outcome.long_gaps += u64::from(gap > READ_TIMEOUT);
                arrival.as_mut().reset(now + gap);
            }
            // The peer is slow: note it, and keep waiting.
            Event::ReadTimeout => {
                outcome.read_timeouts += 1;
                read_fired = true;
            }
            // The peer is gone: close, checking the timeout was not early.
            Event::Idle => {
                assert!(now >= idle_deadline, "the idle timeout fired early");
                outcome.idle_close = Some(now - idle_deadline);
                return outcome;
            }
        }
    }
}
