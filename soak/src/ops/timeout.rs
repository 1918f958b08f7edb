//! Timeouts: the inner future first, the deadline never early.

use std::future::pending;
use std::time::Duration;

use escapement::task;
use escapement::time;
use rand::Rng;

use super::{Ctx, MS};
use crate::round::fail;

/// A timeout around a sleep due a little before or after it.
pub(super) async fn around_sleep(cx: &mut Ctx) {
    let d = cx.micros(20_000);
    let inner = if cx.rng.random_bool(0.5) {
        d.saturating_sub(cx.micros(3000))
    } else {
        d + cx.micros(3000)
    };
    cx.begin(d.max(inner));
    let start = cx.now();
    let result = time::timeout(d, time::sleep(inner)).await;
    let now = cx.now();
    match result {
        Ok(()) => cx.round.check("timeout's inner sleep", start + inner, now),
        Err(_) => {
            cx.round.check("timeout's deadline", start + d, now);
            // The inner sleep registers before the deadline, and the clock may pass both
            // deadlines between the two (a preemption, or another task's `advance`); then
            // the deadline, registered past due, wins, as tokio's can. Only the exact clock
            // cannot move there, and the check below holds it to the rounded deadlines.
        }
    }
    if cx.round.exact() {
        // Both fire at their deadlines rounded up to the tick; the inner wins a tie.
        let inner_wins = cx.round.round_up(start + inner) <= cx.round.round_up(start + d);
        if result.is_ok() != inner_wins {
            fail!(
                cx.round,
                "exact: timeout({d:?}, sleep({inner:?})) gave {result:?}"
            );
        }
    }
}

/// A timeout around a ready future (with a zero, near or past deadline: `Ok`), a pending one
/// (it elapses), a loop of yields (either), or a timeout around a pending future.
pub(super) async fn around_other(cx: &mut Ctx) {
    let case = cx.rng.random_range(0..5);
    let d = cx.micros(10_000);
    cx.begin(d + 10 * MS);
    let start = cx.now();
    match case {
        0 => {
            let d = if cx.rng.random_bool(0.5) {
                Duration::ZERO
            } else {
                d
            };
            let result = time::timeout(d, async { 42 }).await;
            if result != Ok(42) {
                fail!(
                    cx.round,
                    "timeout({d:?}) around a ready future gave {result:?}"
                );
            }
        }
        1 => {
            let past = start.checked_sub(MS).unwrap_or(start);
            let result = time::timeout_at(past, async { 7 }).await;
            if result != Ok(7) {
                fail!(
                    cx.round,
                    "timeout_at(the past) around a ready future gave {result:?}"
                );
            }
        }
        2 => {
            if time::timeout(d, pending::<()>()).await.is_ok() {
                fail!(cx.round, "a timeout around a pending future gave Ok");
            }
            cx.round
                .check("timeout around a pending future", start + d, cx.now());
        }
        3 => {
            let yields = cx.rng.random_range(0..200);
            let result = time::timeout(d, async {
                for _ in 0..yields {
                    task::yield_now().await;
                }
            })
            .await;
            if result.is_err() {
                cx.round.check("timeout around yields", start + d, cx.now());
            }
        }
        _ => {
            let inner = cx.micros(10_000);
            let result = time::timeout(d, time::timeout(inner, pending::<()>())).await;
            let now = cx.now();
            match result {
                Ok(Err(_)) => cx
                    .round
                    .check("the inner of two timeouts", start + inner, now),
                Err(_) => cx.round.check("the outer of two timeouts", start + d, now),
                Ok(Ok(())) => fail!(cx.round, "a pending future completed"),
            }
        }
    }
}
