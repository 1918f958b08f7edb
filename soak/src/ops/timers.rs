//! Sleeps and their resets: never early, fired by themselves, done at once when past due.

use std::time::Duration;

use escapement::task;
use escapement::time;
use rand::Rng;

use super::{approach, poll_once, Ctx, HOUR, MS};
use crate::round::fail;

/// A sleep, awaited in place or boxed (then `is_elapsed` must hold once it is done).
pub(super) async fn sleep(cx: &mut Ctx) {
    let d = cx.micros(30_000);
    cx.begin(d);
    let start = cx.now();
    if cx.rng.random_bool(0.5) {
        time::sleep(d).await;
    } else {
        let mut sleep = Box::pin(time::sleep(d));
        (&mut sleep).await;
        cx.round.probe("sleep", &sleep);
        if !sleep.is_elapsed() {
            fail!(cx.round, "a sleep completed, and is_elapsed() is false");
        }
    }
    cx.round.check("sleep", start + d, cx.now());
}

/// A deadline in the past, zero, now, or (on the real clock) shorter than a tick and passed
/// before the first poll: ready at that poll.
pub(super) async fn past_deadline(cx: &mut Ctx) {
    cx.begin(Duration::ZERO);
    let start = cx.now();
    let case = cx.rng.random_range(0..4);
    let mut sleep = match case {
        0 => {
            let ago = cx.micros(5000);
            Box::pin(time::sleep_until(start.checked_sub(ago).unwrap_or(start)))
        }
        1 => Box::pin(time::sleep(Duration::ZERO)),
        2 => Box::pin(time::sleep_until(start)),
        // Blocks the worker for up to a tick, so not in the quiet mode.
        _ if cx.round.std_clock() && !cx.round.quiet() => {
            let d = Duration::from_nanos(cx.rng.random_range(1..cx.round.tick.as_nanos() as u64));
            let sleep = Box::pin(time::sleep(d));
            std::thread::sleep(d + Duration::from_micros(5));
            sleep
        }
        _ => return,
    };
    if poll_once(&mut sleep).await.is_pending() {
        fail!(
            cx.round,
            "a sleep past its deadline (case {case}) is pending at its first poll"
        );
        sleep.as_mut().await;
    }
    if cx.round.starts_paused() {
        cx.round.check_at_once("past deadline", start, cx.now());
    }
    cx.round.probe("past deadline", &sleep);
}

/// A far sleep, polled or not, reset to a near deadline.
pub(super) async fn reset_earlier(cx: &mut Ctx) {
    let d = cx.micros(20_000);
    cx.begin(d);
    let far = if cx.rng.random_bool(0.8) {
        HOUR
    } else {
        Duration::from_secs(5)
    };
    let mut sleep = Box::pin(time::sleep(far));
    if cx.rng.random_bool(0.7) && poll_once(&mut sleep).await.is_ready() {
        fail!(cx.round, "a sleep of {far:?} is ready at once");
    }
    if cx.rng.random_bool(0.3) {
        task::yield_now().await;
    }
    let start = cx.now();
    sleep.as_mut().reset(start + d);
    cx.round.probe("reset earlier", &sleep);
    sleep.as_mut().await;
    cx.round.check("reset earlier", start + d, cx.now());
}

/// A registered sleep pushed later again and again, as a keep-alive is, each time near its
/// deadline (a yield, a shorter sleep, or a spin to it on the real clock).
pub(super) async fn reset_later(cx: &mut Ctx) {
    let d = cx.micros(5000).max(cx.round.tick);
    cx.begin(d + 40 * MS);
    let start = cx.now();
    let mut sleep = Box::pin(time::sleep(d));
    let _ = poll_once(&mut sleep).await;
    let mut deadline = start + d;
    for _ in 0..cx.rng.random_range(1..6) {
        match cx.rng.random_range(0..4) {
            0 => task::yield_now().await,
            1 => {
                let early = Duration::from_micros(cx.rng.random_range(0..300));
                let left = deadline.saturating_duration_since(cx.now());
                time::sleep(left.saturating_sub(early)).await;
            }
            2 if cx.round.std_clock() && !cx.round.quiet() => {
                let before = Duration::from_micros(cx.rng.random_range(0..100));
                let after = Duration::from_micros(cx.rng.random_range(0..100));
                approach(deadline.into_std() - before + after).await;
            }
            _ => {}
        }
        if poll_once(&mut sleep).await.is_ready() {
            let now = cx.now();
            cx.round
                .check("reset later (fired between resets)", deadline, now);
            let d = cx.micros(3000);
            sleep.as_mut().reset(now + d);
            deadline = sleep.deadline();
            continue;
        }
        deadline = cx.now() + cx.micros(6000);
        sleep.as_mut().reset(deadline);
        cx.round.probe("reset later", &sleep);
    }
    sleep.as_mut().await;
    cx.round.check("reset later", deadline, cx.now());
    cx.round.probe("reset later", &sleep);
}

/// A far sleep, polled or not, reset into the past: ready at the next poll.
pub(super) async fn reset_past(cx: &mut Ctx) {
    cx.begin(Duration::ZERO);
    let mut sleep = Box::pin(time::sleep(HOUR));
    if cx.rng.random_bool(0.6) {
        let _ = poll_once(&mut sleep).await;
    }
    let start = cx.now();
    let ago = cx.micros(3000);
    sleep
        .as_mut()
        .reset(start.checked_sub(ago).unwrap_or(start));
    if poll_once(&mut sleep).await.is_pending() {
        fail!(
            cx.round,
            "a sleep reset into the past is pending at its next poll"
        );
        sleep.as_mut().await;
    }
    cx.round
        .check_at_once("reset into the past", start, cx.now());
}

/// A fired sleep reset, once or more: later (it fires again) or into the past (at once).
pub(super) async fn reset_after_fire(cx: &mut Ctx) {
    let d = cx.micros(10_000);
    let again = cx.micros(10_000);
    cx.begin(d + again);
    let start = cx.now();
    let mut sleep = Box::pin(time::sleep(d));
    sleep.as_mut().await;
    cx.round
        .check("reset after firing (the first)", start + d, cx.now());
    for _ in 0..cx.rng.random_range(1..4) {
        let now = cx.now();
        if cx.rng.random_bool(0.3) {
            sleep.as_mut().reset(now.checked_sub(MS).unwrap_or(now));
            if poll_once(&mut sleep).await.is_pending() {
                fail!(cx.round, "a fired sleep reset into the past is pending");
                sleep.as_mut().await;
            }
            cx.round
                .check_at_once("reset after firing, into the past", now, cx.now());
        } else {
            sleep.as_mut().reset(now + again);
            cx.round.probe("reset after firing", &sleep);
            sleep.as_mut().await;
            cx.round
                .check("reset after firing (again)", now + again, cx.now());
        }
    }
}

/// A sleep reset before any poll; sometimes left unpolled past its deadline, when it must
/// report itself elapsed (the reset registered it).
pub(super) async fn reset_unpolled(cx: &mut Ctx) {
    let d = cx.micros(15_000);
    cx.begin(d);
    let mut sleep = Box::pin(time::sleep(HOUR));
    let start = cx.now();
    sleep.as_mut().reset(start + d);
    cx.round.probe("reset unpolled", &sleep);
    let waited = cx.rng.random_bool(0.3);
    if waited {
        time::sleep(d + 2 * cx.round.tick).await;
        cx.round.probe("reset unpolled", &sleep);
        if !sleep.is_elapsed() {
            let past = cx.now() - (start + d);
            fail!(
                cx.round,
                "a sleep reset unpolled is not elapsed {past:?} after its deadline"
            );
        }
    }
    sleep.as_mut().await;
    let now = cx.now();
    if now < start + d {
        fail!(
            cx.round,
            "a sleep reset unpolled completed {:?} early",
            start + d - now
        );
    }
    if cx.round.std_clock() && !waited {
        cx.round.late("reset unpolled", now - (start + d));
    }
}

/// Two timers of one task (so of one shard): once the later has fired, so has the earlier.
pub(super) async fn order_pair(cx: &mut Ctx) {
    let later = cx.micros(20_000).max(cx.round.tick);
    let earlier = later.saturating_sub(cx.micros(5000));
    cx.begin(later);
    let start = cx.now();
    let mut first = Box::pin(time::sleep(earlier));
    let mut second = Box::pin(time::sleep(later));
    let _ = poll_once(&mut first).await;
    let _ = poll_once(&mut second).await;
    second.as_mut().await;
    cx.round.check("the later of two", start + later, cx.now());
    if !first.is_elapsed() {
        fail!(
            cx.round,
            "sleep({later:?}) fired before sleep({earlier:?}) of the same shard"
        );
    }
    first.as_mut().await;
}

/// `select!` between two sleeps: the winner's deadline has passed.
pub(super) async fn select(cx: &mut Ctx) {
    let a = cx.micros(15_000);
    let b = cx.micros(15_000);
    cx.begin(a.max(b));
    let start = cx.now();
    let won = escapement::select! {
        _ = time::sleep(a) => a,
        _ = time::sleep(b) => b,
    };
    cx.round.check("select! winner", start + won, cx.now());
}

/// Up to 80 sleeps in one task (more than a batch of wakers), equal or spread.
pub(super) async fn many(cx: &mut Ctx) {
    let n = cx.rng.random_range(10..=80);
    let base = cx.micros(10_000);
    cx.begin(base + 10 * MS);
    let start = cx.now();
    let equal = cx.rng.random_bool(0.5);
    let durations: Vec<Duration> = (0..n)
        .map(|_| if equal { base } else { base + cx.micros(3000) })
        .collect();
    let round = &cx.round;
    futures::future::join_all(durations.into_iter().map(|d| async move {
        time::sleep(d).await;
        round.check("one of many", start + d, round.now());
    }))
    .await;
}

/// A sleep due within a tick or two, reset later right as it comes due, again and again: a
/// reset racing the driver's firing must never let the sleep complete before its new
/// deadline.
pub(super) async fn reset_race(cx: &mut Ctx) {
    cx.begin(60 * MS);
    let tick = cx.round.tick.as_nanos() as u64;
    let mut sleep = Box::pin(time::sleep(cx.round.tick));
    let _ = poll_once(&mut sleep).await;
    let mut deadline = sleep.deadline();
    for _ in 0..cx.rng.random_range(2..12) {
        // A spin, so not in the quiet mode.
        if cx.round.std_clock() && !cx.round.quiet() {
            let after = Duration::from_nanos(cx.rng.random_range(0..2 * tick));
            let before = Duration::from_nanos(cx.rng.random_range(0..tick));
            approach(deadline.into_std() + after - before).await;
        } else {
            task::yield_now().await;
        }
        deadline = cx.now() + Duration::from_nanos(cx.rng.random_range(1..3 * tick));
        sleep.as_mut().reset(deadline);
        let ready = poll_once(&mut sleep).await.is_ready();
        let now = cx.now();
        if ready && now < deadline {
            fail!(
                cx.round,
                "a reset sleep is ready {:?} before its new deadline",
                deadline - now
            );
        }
        cx.round.probe("reset race", &sleep);
        if ready {
            sleep.as_mut().reset(now + cx.round.tick);
            deadline = sleep.deadline();
        }
    }
    sleep.as_mut().await;
    cx.round.check("reset race", deadline, cx.now());
}
