//! Auto-advance beside wakes from a thread outside the runtime: a plain thread wakes tasks that
//! await sleeps on a paused clock, once per sleep, and each sleep must still complete exactly
//! at its deadline, for spawned tasks and for the local tasks of a `LocalSet` that `block_on`
//! drives. The waking thread marks a task woken before it queues it; if worker 0 could move the
//! clock in between, a sleep of that task that fell due would be seen late (its wake finds the
//! task marked and adds nothing). The race is narrow, so each test makes many wakes on one
//! worker at a 10 µs tick, where it showed before the waking thread held the clock; a pass
//! cannot prove the race gone (the loom model `auto_advance` does that for spawned tasks).

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use escapement::task::{self, LocalSet};
use escapement::time::{sleep, Instant};
use escapement::{JoinHandle, Runtime};

const TASKS: usize = 4;
const ROUNDS: usize = 50_000;

/// Where each task leaves its waker for the outside thread to take and wake.
type Slots = Arc<Vec<Mutex<Option<Waker>>>>;

/// A sleep seen late: the task, its round, the sleep's length and the time it took.
type Late = (usize, usize, Duration, Duration);

#[test]
fn sleeps_of_spawned_tasks_complete_on_time_while_an_outside_thread_wakes_them() {
    let late = with_outside_waker(|rt, slots| {
        rt.block_on(async {
            let tasks = (0..TASKS)
                .map(|index| escapement::spawn(sleeps(index, slots.clone())))
                .collect();
            gather(tasks).await
        })
    });
    assert!(late.is_empty(), "sleeps seen late: {late:?}");
}

#[test]
fn sleeps_of_local_tasks_complete_on_time_while_an_outside_thread_wakes_them() {
    let late = with_outside_waker(|rt, slots| {
        LocalSet::new().block_on(rt, async {
            let tasks = (0..TASKS)
                .map(|index| task::spawn_local(sleeps(index, slots.clone())))
                .collect();
            gather(tasks).await
        })
    });
    assert!(late.is_empty(), "sleeps seen late: {late:?}");
}

/// Runs `f` on a paused runtime of one worker at a 10 µs tick, beside a plain thread that
/// wakes whatever waker it finds in the slots until `f` returns.
fn with_outside_waker(f: impl FnOnce(&Runtime, &Slots) -> Vec<Late>) -> Vec<Late> {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .timer_resolution(Duration::from_micros(10))
        .start_paused(true)
        .build()
        .unwrap();
    let slots: Slots = Arc::new((0..TASKS).map(|_| Mutex::new(None)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let outside = std::thread::spawn({
        let (slots, done) = (slots.clone(), done.clone());
        move || {
            while !done.load(Ordering::Relaxed) {
                for slot in slots.iter() {
                    let waker = slot.lock().unwrap().take();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                std::thread::yield_now();
            }
        }
    });
    let late = f(&rt, &slots);
    done.store(true, Ordering::Relaxed);
    outside.join().unwrap();
    late
}

/// Task `index`: sleeps of 10 to 50 µs in turn, leaving its waker in its slot at the first
/// poll of each; returns the sleeps it saw complete late.
async fn sleeps(index: usize, slots: Slots) -> Vec<Late> {
    let mut late = Vec::new();
    for round in 0..ROUNDS {
        let wait = Duration::from_micros(10 * (1 + (index + round) % 5) as u64);
        let start = Instant::now();
        let mut sleep = pin!(sleep(wait));
        let mut first = true;
        std::future::poll_fn(|cx| {
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

async fn gather(tasks: Vec<JoinHandle<Vec<Late>>>) -> Vec<Late> {
    let mut late = Vec::new();
    for task in tasks {
        late.extend(task.await.unwrap());
    }
    late
}
