//! `timeout` and `timeout_at`: give any future a deadline. The result is `Ok` with the
//! future's output if it finished in time, or `Err(Elapsed)` if the deadline passed first,
//! in which case the future is dropped (cancelled).
//!
//! ```text
//! cargo run --example timeout
//! ```

use escapement::time::{sleep, timeout, timeout_at, Duration, Instant};

/// Pretends to fetch something that takes `delay`.
async fn fetch(delay: Duration) -> &'static str {
    sleep(delay).await;
    "response"
}

/// Prints when it is dropped, to show that a timed-out future is cancelled.
struct Noisy(&'static str);

impl Drop for Noisy {
    fn drop(&mut self) {
        println!("  ({} was dropped)", self.0);
    }
}

#[escapement::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ms = Duration::from_millis;

    // 1. In time: the future's output comes back in `Ok`.
    let quick = timeout(ms(100), fetch(ms(10))).await;
    println!("fetch taking 10 ms, 100 ms timeout: {quick:?}");

    // 2. Too slow: `Err(Elapsed)`, no earlier than the deadline.
    let start = Instant::now();
    let slow = timeout(ms(20), fetch(ms(1000))).await;
    println!(
        "fetch taking 1 s, 20 ms timeout: {slow:?} after {:?}",
        start.elapsed()
    );
    if let Err(elapsed) = slow {
        // `Elapsed` is an error type: it prints, and converts into `io::Error` for `?`.
        println!("  as an error: {elapsed}");
    }

    // 3. The timed-out future is dropped at the deadline: whatever it held is released.
    let work = async {
        let _guard = Noisy("the slow work");
        sleep(ms(1000)).await;
    };
    println!("slow work with a 10 ms timeout:");
    let _ = timeout(ms(10), work).await;

    // 4. A future that is ready wins even against a deadline already past: the future is
    //    polled first, so no work is thrown away.
    let past = Instant::now() - ms(1);
    let ready = timeout_at(past, async { 42 }).await;
    println!("a ready future, deadline already past: {ready:?}");

    // 5. Several steps under one deadline: `timeout_at` with a shared instant.
    let deadline = Instant::now() + ms(50);
    let first = timeout_at(deadline, fetch(ms(20))).await;
    let second = timeout_at(deadline, fetch(ms(20))).await;
    let third = timeout_at(deadline, fetch(ms(20))).await;
    println!("three 20 ms steps under one 50 ms deadline: {first:?}, {second:?}, {third:?}");

    // 6. A spawned task under a timeout: `?` turns `Elapsed` and `JoinError` into errors.
    let task = escapement::spawn(fetch(ms(5)));
    let answer = timeout(ms(100), task).await??;
    println!("a task awaited with a timeout: {answer}");
    Ok(())
}
