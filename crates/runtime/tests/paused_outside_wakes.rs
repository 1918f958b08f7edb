//! Auto-advance beside wakes and aborts from a thread outside the runtime: a plain thread wakes
//! tasks that await sleeps on a paused clock, once per sleep, and each sleep must still
//! complete exactly at its deadline; or it aborts tasks that await sleeps, and each must be
//! dropped no later than its sleep's deadline. Both for spawned tasks and for the local tasks
//! of a `LocalSet` that `block_on` drives. The outside thread marks a task woken (or
//! cancelled) before it queues it; if worker 0 could move the clock in between, a sleep of
//! that task that fell due would be seen late (its wake finds the task marked and adds
//! nothing), and a cancelled task would be dropped after the clock passed its deadline. The
//! race is narrow, so each test makes many wakes or aborts on one worker at a 10 µs tick,
//! where it showed before the outside thread held the clock; a pass cannot prove the race gone
//! (the loom model `auto_advance` does that for wakes of spawned tasks).

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use escapement::task::{self, AbortHandle, LocalSet};
use escapement::time::{sleep, Instant};
use escapement::Runtime;

const TASKS: usize = 4;
/// Under Miri a few rounds check the memory of the hold and of its wake or abort, not the race.
const ROUNDS: usize = if cfg!(miri) { 10 } else { 50_000 };

/// Where each task leaves a waker or an abort handle for the outside thread to take and use.
type Slots<T> = Arc<Vec<Mutex<Option<T>>>>;

/// A sleep seen late, or a task dropped late: the task, its round, the sleep's length and the
/// time from the sleep's start to its completion or to the task's drop.
type Late = (usize, usize, Duration, Duration);

#[test]
fn sleeps_of_spawned_tasks_complete_on_time_while_an_outside_thread_wakes_them() {
    woken_from_outside(false);
}

#[test]
fn sleeps_of_local_tasks_complete_on_time_while_an_outside_thread_wakes_them() {
    woken_from_outside(true);
}

/// Runs `sleeps` in each task beside a thread that wakes them; no sleep may be seen late.
fn woken_from_outside(local: bool) {
    let late: Vec<Late> = with_outside_thread(Waker::wake, |rt, slots| {
        run_each(rt, local, |index| sleeps(index, slots.clone()))
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(late.is_empty(), "sleeps seen late: {late:?}");
}

#[test]
fn spawned_tasks_aborted_from_outside_are_dropped_before_their_sleeps_are_due() {
    aborted_from_outside(false);
}

#[test]
fn local_tasks_aborted_from_outside_are_dropped_before_their_sleeps_are_due() {
    aborted_from_outside(true);
}

/// Runs `aborts` in each task beside a thread that aborts what they spawn; no task may be
/// dropped late, and some must be aborted.
fn aborted_from_outside(local: bool) {
    let abort = |handle: AbortHandle| handle.abort();
    let outputs = with_outside_thread(abort, |rt, slots| {
        run_each(rt, local, |index| aborts(index, slots.clone(), local))
    });
    let late: Vec<&Late> = outputs.iter().flat_map(|(late, _)| late).collect();
    assert!(late.is_empty(), "tasks dropped late: {late:?}");
    let aborted: usize = outputs.iter().map(|(_, aborted)| aborted).sum();
    assert!(aborted > 0, "no task was aborted");
}

/// Runs `make(index)` as each of the tasks, spawned, or if `local` local tasks of a set driven
/// before in another runtime, in `rt`; returns their outputs.
fn run_each<F>(rt: &Runtime, local: bool, make: impl Fn(usize) -> F) -> Vec<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let all = async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|index| {
                if local {
                    task::spawn_local(make(index))
                } else {
                    escapement::spawn(make(index))
                }
            })
            .collect();
        let mut outputs = Vec::new();
        for task in tasks {
            outputs.push(task.await.unwrap());
        }
        outputs
    };
    if local {
        set_driven_before().block_on(rt, all)
    } else {
        rt.block_on(all)
    }
}

/// Runs `f` on a paused runtime of one worker at a 10 µs tick, beside a plain thread that
/// passes to `act` whatever it finds in the slots until `f` returns.
fn with_outside_thread<T: Send + 'static, R>(
    act: fn(T),
    f: impl FnOnce(&Runtime, &Slots<T>) -> R,
) -> R {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .timer_resolution(Duration::from_micros(10))
        .start_paused(true)
        .build()
        .unwrap();
    let slots: Slots<T> = Arc::new((0..TASKS).map(|_| Mutex::new(None)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let outside = std::thread::spawn({
        let (slots, done) = (slots.clone(), done.clone());
        move || {
            while !done.load(Ordering::Relaxed) {
                for slot in slots.iter() {
                    let found = slot.lock().unwrap().take();
                    if let Some(found) = found {
                        act(found);
                    }
                }
                std::thread::yield_now();
            }
        }
    });
    let result = f(&rt, &slots);
    done.store(true, Ordering::Relaxed);
    outside.join().unwrap();
    result
}

/// A set already driven once in another paused runtime, so the wakes and aborts of the test
/// must hold the clock of the runtime that drives it now, not of the one it was driven in first.
fn set_driven_before() -> LocalSet {
    let set = LocalSet::new();
    let other = escapement::Builder::new()
        .worker_threads(1)
        .start_paused(true)
        .build()
        .unwrap();
    set.block_on(&other, task::yield_now());
    set
}

/// The length of task `index`'s sleep in `round`: 10 to 50 µs in turn.
fn wait_of(index: usize, round: usize) -> Duration {
    Duration::from_micros(10 * (1 + (index + round) % 5) as u64)
}

/// Task `index`: sleeps in turn, leaving its waker in its slot at the first poll of each;
/// returns the sleeps it saw complete late.
async fn sleeps(index: usize, slots: Slots<Waker>) -> Vec<Late> {
    let mut late = Vec::new();
    for round in 0..ROUNDS {
        let wait = wait_of(index, round);
        let start = Instant::now();
        let mut sleep = pin!(sleep(wait));
        let mut first = true;
        poll_fn(|cx| {
            // Once per sleep: a waker left at every poll would have the thread and the task
            // wake each other without a pause, and the clock would seldom find them idle.
            if std::mem::take(&mut first) {
                *slots[index].lock().unwrap() = Some(cx.waker().clone());
            }
            sleep.as_mut().poll(cx)
        })
        .await;
        if start.elapsed() != wait {
            late.push((index, round, wait, start.elapsed()));
        }
    }
    late
}

/// What a task of `aborts` shares with the task it spawns each round.
#[derive(Default)]
struct Victim {
    /// The spawned task's abort handle, until the task moves it to the outside thread's slot.
    handle: Mutex<Option<AbortHandle>>,
    /// When the spawned task's future was dropped, by completion or by abort.
    dropped: Mutex<Option<Instant>>,
}

/// Task `index`: spawns in turn (with `spawn_local` if `local`) tasks that each sleep once and
/// hand their abort handle to the outside thread once the sleep is registered; returns the
/// tasks dropped after their sleep's deadline and how many tasks were aborted.
async fn aborts(index: usize, slots: Slots<AbortHandle>, local: bool) -> (Vec<Late>, usize) {
    let (mut late, mut aborted) = (Vec::new(), 0);
    let victim = Arc::new(Victim::default());
    for round in 0..ROUNDS {
        let wait = wait_of(index, round);
        let start = Instant::now();
        let sleeper = sleep_once(wait, victim.clone(), slots.clone(), index);
        let task = if local {
            task::spawn_local(sleeper)
        } else {
            escapement::spawn(sleeper)
        };
        *victim.handle.lock().unwrap() = Some(task.abort_handle());
        if let Err(error) = task.await {
            assert!(error.is_cancelled(), "{error}");
            aborted += 1;
        }
        let dropped = victim.dropped.lock().unwrap().take();
        let took = dropped.expect("the future was not dropped before its handle was ready");
        let took = took - start;
        if took > wait {
            late.push((index, round, wait, took));
        }
    }
    (late, aborted)
}

/// Sleeps `wait`, moving its abort handle from `victim` to the outside thread's slot once the
/// sleep is registered, and leaves in `victim` when its future is dropped.
async fn sleep_once(wait: Duration, victim: Arc<Victim>, slots: Slots<AbortHandle>, index: usize) {
    let _dropped = DropTime(victim.clone());
    let mut sleep = pin!(sleep(wait));
    let mut first = true;
    poll_fn(|cx| {
        let poll = sleep.as_mut().poll(cx);
        if std::mem::take(&mut first) {
            *slots[index].lock().unwrap() = victim.handle.lock().unwrap().take();
        }
        poll
    })
    .await;
}

/// Leaves in its `Victim` the time it is dropped.
struct DropTime(Arc<Victim>);

impl Drop for DropTime {
    fn drop(&mut self) {
        *self.0.dropped.lock().unwrap() = Some(Instant::now());
    }
}
