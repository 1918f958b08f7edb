//! `sleep` and `sleep_until`: wait for a while, or until an instant, without blocking a
//! thread. A timer never fires early: it fires at its deadline rounded up to the runtime's
//! tick (1 ms by default), plus the time the OS takes to wake the thread.
//!
//! ```text
//! cargo run --example sleep
//! ```

use std::pin::pin;

use escapement::time::{sleep, sleep_until, timeout, Duration, Instant};

#[escapement::main]
async fn main() {
    // 1. Sleep for a few durations and measure how long each took: never less than asked,
    //    and here about a tick more, as each sleep starts just after the tick that woke the
    //    previous one and its deadline is rounded up to the next whole tick.
    for ms in [1, 5, 20, 100] {
        let asked = Duration::from_millis(ms);
        let start = Instant::now();
        sleep(asked).await;
        let took = start.elapsed();
        assert!(took >= asked, "a timer fired early");
        println!("sleep({asked:?}) took {took:?}, {:?} late", took - asked);
    }

    // 2. Sleep until an instant: handy to keep a schedule that does not drift.
    let deadline = Instant::now() + Duration::from_millis(30);
    sleep_until(deadline).await;
    println!(
        "sleep_until(now + 30ms) woke {:?} after its deadline",
        Instant::now() - deadline
    );

    // 3. Sleeps are futures, so many can wait at once: these tasks wake in deadline order,
    //    whatever order they were spawned in.
    let start = Instant::now();
    let tasks: Vec<_> = [30u64, 10, 20]
        .into_iter()
        .map(|ms| {
            escapement::spawn(async move {
                sleep(Duration::from_millis(ms)).await;
                println!("  task sleeping {ms} ms woke at {:?}", start.elapsed());
            })
        })
        .collect();
    println!("three tasks sleeping at once:");
    for task in tasks {
        task.await.expect("the task panicked");
    }
    println!("all three done after {:?}, not 60 ms", start.elapsed());

    // 4. A sleep can be moved: `reset` gives a pinned sleep a new deadline, earlier or later.
    let start = Instant::now();
    let mut long = pin!(sleep(Duration::from_secs(3600)));
    long.as_mut()
        .reset(Instant::now() + Duration::from_millis(10));
    long.await;
    println!(
        "an hour-long sleep reset to 10 ms woke after {:?}",
        start.elapsed()
    );

    // 5. Dropping a sleep before it fires cancels its timer (an O(1) unlink). Here a timeout
    //    gives up on an hour-long sleep after 5 ms and drops it; the metrics count the cancel.
    let before = escapement::Handle::current().metrics().timers_cancelled();
    let gave_up = timeout(Duration::from_millis(5), sleep(Duration::from_secs(3600))).await;
    let after = escapement::Handle::current().metrics().timers_cancelled();
    println!(
        "timeout(5ms, sleep(1h)) = {gave_up:?}; timers cancelled: {}",
        after - before
    );
}
