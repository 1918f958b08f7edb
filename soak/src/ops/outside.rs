//! Timers away from the runtime's own tasks: on a thread outside it, and of a second runtime.

use escapement::time;
use escapement::Handle;
use futures::channel::oneshot;
use rand::Rng;

use super::{poll_once, Ctx, MS};
use crate::checked::{checked, spawn_checked};
use crate::round::fail;

/// A sleep on a thread outside the runtime: made under `Handle::enter` and awaited by another
/// executor, or awaited in `Handle::block_on` (not on a paused clock), which may spawn a task
/// and await it too.
pub(super) async fn thread(cx: &mut Ctx) {
    let d = cx.micros(15_000);
    cx.begin(d + 20 * MS);
    let (done, finished) = oneshot::channel::<()>();
    let handle = Handle::current();
    let round = cx.round.clone();
    let block_on = cx.rng.random_bool(0.5) && !cx.round.starts_paused();
    let spawns = cx.rng.random_bool(0.5);
    let thread = std::thread::spawn(move || {
        if block_on {
            handle.block_on(async {
                let start = round.now();
                time::sleep(d).await;
                round.check_not_early("a sleep in Handle::block_on", start + d, round.now());
                if !spawns {
                    return;
                }
                let task_round = round.clone();
                let task = spawn_checked(&round, async move {
                    let start = task_round.now();
                    time::sleep(d / 2).await;
                    let now = task_round.now();
                    task_round.check_not_early(
                        "a task spawned in Handle::block_on",
                        start + d / 2,
                        now,
                    );
                });
                if let Err(e) = task.await {
                    fail!(round, "a task spawned in Handle::block_on failed: {e:?}");
                }
            });
        } else {
            let (start, sleep) = {
                let _guard = handle.enter();
                (round.now(), time::sleep(d))
            };
            futures::executor::block_on(sleep);
            let now = round.now_outside(&handle);
            round.check_not_early("a sleep awaited by another executor", start + d, now);
        }
        let _ = done.send(());
    });
    let _ = finished.await;
    cx.round.threads.lock().unwrap().push(thread);
}

/// A second runtime's sleep, made under its handle: awaited here, reset and awaited here, or
/// awaited in a task of that runtime beside one of this runtime's sleeps.
pub(super) async fn other_runtime(cx: &mut Ctx) {
    let other = cx
        .round
        .other
        .lock()
        .unwrap()
        .clone()
        .expect("drawn only with a second runtime");
    let d = cx.micros(15_000);
    cx.begin(d + 20 * MS);
    let start = cx.now();
    let mut sleep = {
        let _guard = other.enter();
        Box::pin(time::sleep(d))
    };
    match cx.rng.random_range(0..3) {
        0 => {
            sleep.as_mut().await;
            cx.round
                .check("the other runtime's sleep", start + d, cx.now());
        }
        1 => {
            let _ = poll_once(&mut sleep).await;
            let again = cx.micros(5000);
            let now = cx.now();
            sleep.as_mut().reset(now + again);
            sleep.as_mut().await;
            cx.round
                .check("the other runtime's sleep, reset", now + again, cx.now());
        }
        _ => {
            let round = cx.round.clone();
            let ours = Box::pin(time::sleep(d / 2));
            let task = other.spawn(checked(&cx.round, async move {
                sleep.as_mut().await;
                round.check("a sleep awaited in its own runtime", start + d, round.now());
                ours.await;
                round.check(
                    "a sleep awaited in the other runtime",
                    start + d / 2,
                    round.now(),
                );
            }));
            if let Err(e) = task.await {
                fail!(cx.round, "a task on the other runtime failed: {e:?}");
            }
        }
    }
}
