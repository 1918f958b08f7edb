//! Timers across tasks and threads, and the task API around them: aborts, yields, blocking
//! sections, `JoinSet`, `LocalSet`, nested and detached spawns, panics.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use escapement::task::{self, JoinSet, LocalSet};
use escapement::time::{self, Sleep};
use escapement::Handle;
use futures::channel::oneshot;
use rand::Rng;

use super::{intended_panic, poll_once, run, Ctx, HOUR, MS};
use crate::checked::{checked, spawn_checked, Detached};
use crate::round::{fail, Round};

/// A registered sleep sent to another task, which awaits it or drops it.
pub(super) async fn cross_task(cx: &mut Ctx) {
    let d = cx.micros(20_000);
    cx.begin(d + 10 * MS);
    let start = cx.now();
    let mut sleep = Box::pin(time::sleep(d));
    let _ = poll_once(&mut sleep).await;
    let (send, receive) = oneshot::channel::<Pin<Box<Sleep>>>();
    let awaited = cx.rng.random_bool(0.6);
    let yields = cx.rng.random_bool(0.5);
    let round = cx.round.clone();
    let child = spawn_checked(&cx.round, async move {
        let mut sleep = receive.await.expect("the sleep is sent");
        if awaited {
            sleep.as_mut().await;
            round.check("a sleep awaited in another task", start + d, round.now());
        } else if yields {
            task::yield_now().await;
        }
    });
    if cx.rng.random_bool(0.5) {
        task::yield_now().await;
    }
    let _ = send.send(sleep);
    if let Err(e) = child.await {
        fail!(cx.round, "the task a sleep moved to failed: {e:?}");
    }
}

/// Registered sleeps dropped on a thread outside the runtime, after up to 3 ms.
pub(super) async fn cross_thread_drop(cx: &mut Ctx) {
    cx.begin(Duration::ZERO);
    let mut sleeps = Vec::new();
    for _ in 0..cx.rng.random_range(1..8) {
        let mut sleep = Box::pin(time::sleep(cx.micros(10_000)));
        let _ = poll_once(&mut sleep).await;
        sleeps.push(sleep);
    }
    let wait = Duration::from_micros(cx.rng.random_range(0..3000));
    let thread = std::thread::spawn(move || {
        std::thread::sleep(wait);
        drop(sleeps);
    });
    cx.round.threads.lock().unwrap().push(thread);
}

/// A task aborted while it sleeps (maybe as the sleep fires) or spins on yields, from its
/// spawner or from another task: cancelled, unless it finished first.
pub(super) async fn abort(cx: &mut Ctx) {
    let long = cx.rng.random_bool(0.5);
    let d = if long { HOUR } else { cx.micros(5000) };
    cx.begin(20 * MS);
    let finished = Arc::new(AtomicBool::new(false));
    let spins = cx.rng.random_bool(0.2);
    let child = spawn_checked(&cx.round, {
        let finished = finished.clone();
        async move {
            if spins {
                loop {
                    task::yield_now().await;
                }
            }
            time::sleep(d).await;
            finished.store(true, SeqCst);
        }
    });
    match cx.rng.random_range(0..3) {
        0 => {}
        // A spinning task keeps a paused clock from moving by itself, so do not sleep there.
        2 if cx.round.std_clock() || !spins => time::sleep(cx.micros(5000)).await,
        _ => task::yield_now().await,
    }
    if cx.rng.random_bool(0.5) {
        child.abort();
    } else {
        let handle = child.abort_handle();
        drop(spawn_checked(&cx.round, async move { handle.abort() }));
    }
    match child.await {
        Ok(()) if long || spins => fail!(cx.round, "an aborted task that never ends returned Ok"),
        Ok(()) if !finished.load(SeqCst) => {
            fail!(cx.round, "an aborted task returned Ok unfinished")
        }
        Ok(()) => {}
        Err(e) if !e.is_cancelled() => fail!(cx.round, "an aborted task gave {e:?}"),
        Err(_) if finished.load(SeqCst) => {
            fail!(cx.round, "an aborted task finished, then was cancelled")
        }
        Err(_) => {}
    }
}

/// Up to 300 yields: on the exact clock, a task that stays runnable keeps it still.
pub(super) async fn yield_loop(cx: &mut Ctx) {
    let yields = cx.rng.random_range(1..300);
    cx.begin(50 * MS);
    let start = cx.now();
    for _ in 0..yields {
        task::yield_now().await;
    }
    if cx.round.exact() && cx.now() != start {
        fail!(
            cx.round,
            "the exact clock moved {:?} while a task yielded",
            cx.now() - start
        );
    }
}

/// `block_in_place` around a short std sleep, sometimes with a `Handle::block_on` of a sleep
/// inside (not on a paused clock, which the blocked caller keeps still), then a sleep after
/// the worker is back.
pub(super) async fn block_in_place(cx: &mut Ctx) {
    let blocked = Duration::from_micros(cx.rng.random_range(0..2000));
    let inner = cx.rng.random_bool(0.3) && cx.round.std_clock();
    cx.begin(blocked + 50 * MS);
    let d = cx.micros(3000);
    let round = &cx.round;
    let got = task::block_in_place(|| {
        std::thread::sleep(blocked);
        if inner {
            let start = round.now();
            Handle::current().block_on(time::sleep(d));
            round.check("block_on(sleep) in block_in_place", start + d, round.now());
        }
        5
    });
    if got != 5 {
        fail!(cx.round, "block_in_place returned {got}");
    }
    let d = cx.micros(3000);
    let start = cx.now();
    time::sleep(d).await;
    cx.round
        .check("a sleep after block_in_place", start + d, cx.now());
}

/// A `spawn_blocking` closure that sleeps, sometimes blocks on a runtime timer, and sometimes
/// panics.
pub(super) async fn spawn_blocking(cx: &mut Ctx) {
    let blocked = Duration::from_micros(cx.rng.random_range(0..2000));
    let inner = cx.rng.random_bool(0.3) && cx.round.std_clock();
    let panics = cx.rng.random_bool(0.1);
    cx.begin(blocked + 100 * MS);
    let d = cx.micros(3000);
    let round = cx.round.clone();
    let closure = task::spawn_blocking(move || {
        std::thread::sleep(blocked);
        if panics {
            intended_panic();
        }
        if inner {
            let start = round.now();
            Handle::current().block_on(time::sleep(d));
            round.check("block_on(sleep) in spawn_blocking", start + d, round.now());
        }
        9
    });
    match closure.await {
        Ok(9) if !panics => {}
        Err(e) if panics && e.is_panic() => {}
        other => fail!(cx.round, "spawn_blocking gave {other:?} (panics: {panics})"),
    }
}

/// A `JoinSet` of up to 40 sleeping tasks, some aborted and some panicking: each reports
/// once, with the outcome it should have.
pub(super) async fn join_set(cx: &mut Ctx) {
    let n = cx.rng.random_range(2..=40);
    cx.begin(60 * MS);
    let mut set = JoinSet::new();
    let mut aborted = Vec::new();
    let mut panics = HashMap::new();
    for i in 0..n {
        let d = cx.micros(10_000);
        let panic = cx.rng.random_bool(0.1);
        let round = cx.round.clone();
        let handle = set.spawn(checked(&cx.round, async move {
            let start = round.now();
            time::sleep(d).await;
            round.check("a JoinSet task's sleep", start + d, round.now());
            if panic {
                intended_panic();
            }
            i
        }));
        panics.insert(handle.id(), panic);
        if cx.rng.random_bool(0.2) {
            aborted.push(handle);
        }
    }
    if cx.rng.random_bool(0.5) {
        task::yield_now().await;
    }
    for handle in &aborted {
        handle.abort();
    }
    let mut reported = 0;
    let mut seen = HashSet::new();
    while let Some(result) = set.join_next_with_id().await {
        reported += 1;
        match result {
            Ok((id, i)) => {
                if !seen.insert(i) {
                    fail!(cx.round, "JoinSet task {i} reported twice");
                }
                if panics[&id] {
                    fail!(cx.round, "a panicking JoinSet task returned Ok");
                }
            }
            Err(e) if e.is_panic() && !panics[&e.id()] => {
                fail!(cx.round, "a JoinSet task panicked unexpectedly: {e:?}")
            }
            Err(e) if e.is_panic() => {}
            Err(e) if !e.is_cancelled() => fail!(cx.round, "a JoinSet task gave {e:?}"),
            Err(e) if !aborted.iter().any(|handle| handle.id() == e.id()) => {
                fail!(cx.round, "a JoinSet task not aborted was cancelled")
            }
            Err(_) => {}
        }
    }
    if reported != n {
        fail!(cx.round, "a JoinSet of {n} tasks reported {reported}");
    }
}

/// A local task's plan: its sleep, whether it is aborted, and how many times it yields first.
type LocalPlan = (Duration, bool, u32);

/// A `LocalSet` on a blocking thread (`spawn_blocking`, then `Handle::block_on` of its
/// `run_until`), with up to 20 local tasks that hold an `Rc`, yield and sleep, a fifth of them
/// aborted: each gives its index or, aborted, is cancelled unless it finished first. A fifth
/// of the time `run_until` returns with the tasks still pending, some with timers registered,
/// and the set's drop must drop every task's future, there and then.
pub(super) async fn local_set(cx: &mut Ctx) {
    let plan: Vec<LocalPlan> = (0..cx.rng.random_range(1..=20))
        .map(|_| {
            let d = cx.micros(10_000);
            (d, cx.rng.random_bool(0.2), cx.rng.random_range(0..3))
        })
        .collect();
    let leave = cx.rng.random_bool(0.2);
    cx.begin(100 * MS);
    let round = cx.round.clone();
    let handle = Handle::current();
    let closure = task::spawn_blocking(move || {
        let set = LocalSet::new();
        let alive = Rc::new(());
        handle.block_on(set.run_until(local_tasks(&round, &plan, &alive, leave)));
        drop(set);
        let left = Rc::strong_count(&alive) - 1;
        if left != 0 {
            fail!(
                round,
                "{left} local task futures outlived their LocalSet's drop"
            );
        }
    });
    if let Err(e) = closure.await {
        fail!(cx.round, "the LocalSet's blocking closure failed: {e:?}");
    }
}

/// The body of [`local_set`]'s `run_until`: spawns the local tasks, aborts those the plan
/// says, and awaits them all unless it `leave`s them pending.
async fn local_tasks(round: &Arc<Round>, plan: &[LocalPlan], alive: &Rc<()>, leave: bool) {
    let handles: Vec<_> = plan
        .iter()
        .enumerate()
        .map(|(i, &(d, _, yields))| {
            let alive = alive.clone();
            let task_round = round.clone();
            task::spawn_local(checked(round, async move {
                let _alive = alive;
                for _ in 0..yields {
                    task::yield_now().await;
                }
                let start = task_round.now();
                time::sleep(d).await;
                let now = task_round.now();
                task_round.check_not_early("a sleep in a LocalSet's task", start + d, now);
                i
            }))
        })
        .collect();
    task::yield_now().await;
    for (handle, &(_, abort, _)) in handles.iter().zip(plan) {
        if abort {
            handle.abort();
        }
    }
    if leave {
        return;
    }
    for (i, (handle, &(_, abort, _))) in handles.into_iter().zip(plan).enumerate() {
        match handle.await {
            Ok(got) if got == i => {}
            Err(e) if abort && e.is_cancelled() => {}
            other => fail!(round, "local task {i} gave {other:?} (aborted: {abort})"),
        }
    }
}

/// Up to three operations, each in a task of its own (not watched), joined or left detached
/// (the round waits for detached ones before it ends).
pub(super) async fn nested(cx: &mut Ctx) {
    cx.begin(100 * MS);
    let mut children = Vec::new();
    for _ in 0..cx.rng.random_range(1..4) {
        let detached = Detached::new(&cx.round);
        let op = run(cx.round.clone(), cx.child_rng(), None, cx.depth + 1);
        children.push(spawn_checked(&cx.round, async move {
            op.await;
            drop(detached);
        }));
    }
    if cx.rng.random_bool(0.2) {
        return;
    }
    for child in children {
        if let Err(e) = child.await {
            fail!(cx.round, "a nested operation's task failed: {e:?}");
        }
    }
}

/// A task that panics, sometimes with timers registered: a panic `JoinError`, and its timers
/// unlinked as it unwinds.
pub(super) async fn panic(cx: &mut Ctx) {
    cx.begin(30 * MS);
    let with_timers = cx.rng.random_bool(0.6);
    let d = cx.micros(3000);
    let child = spawn_checked(&cx.round, async move {
        let mut far = Box::pin(time::sleep(HOUR));
        if with_timers {
            let _ = poll_once(&mut far).await;
            time::sleep(d).await;
        }
        intended_panic();
    });
    match child.await {
        Err(e) if e.is_panic() => {}
        other => fail!(cx.round, "a panicking task gave {other:?}"),
    }
}
