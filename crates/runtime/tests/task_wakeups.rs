//! A task woken while it runs is neither lost nor run twice: a task that wakes itself many
//! times in each poll is polled exactly once more per poll; a wake sent by another thread
//! while the poll is still running gets exactly one more poll; tasks woken from several
//! threads at once are never polled concurrently and always see the last wake. Polls are
//! counted, and a guard fails on a poll that overlaps another.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use support::{join_within, running};

/// Scales a count down under Miri, which interprets every poll and wake.
const fn sized(count: usize, under_miri: usize) -> usize {
    if cfg!(miri) {
        under_miri
    } else {
        count
    }
}

/// Fails if two polls of one task overlap.
#[derive(Default)]
struct PollGuard {
    in_poll: AtomicBool,
    polls: AtomicUsize,
}

impl PollGuard {
    fn enter(&self) -> PollGuardScope<'_> {
        assert!(
            !self.in_poll.swap(true, Ordering::SeqCst),
            "the task was polled on two threads at once"
        );
        self.polls.fetch_add(1, Ordering::SeqCst);
        PollGuardScope(self)
    }

    fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }
}

struct PollGuardScope<'a>(&'a PollGuard);

impl Drop for PollGuardScope<'_> {
    fn drop(&mut self) {
        self.0.in_poll.store(false, Ordering::SeqCst);
    }
}

/// Wakes itself `wakes_per_poll` times in each of its first `rounds - 1` polls.
struct SelfWaking {
    guard: Arc<PollGuard>,
    rounds: usize,
    wakes_per_poll: usize,
}

impl Future for SelfWaking {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let _scope = self.guard.enter();
        if self.guard.polls() == self.rounds {
            return Poll::Ready(());
        }
        for i in 0..self.wakes_per_poll {
            if i % 2 == 0 {
                cx.waker().wake_by_ref();
            } else {
                // A clone woken by value: the other path into the scheduler.
                let waker = cx.waker().clone();
                waker.wake();
            }
        }
        Poll::Pending
    }
}

#[test]
fn a_task_waking_itself_many_times_is_polled_once_more_per_poll() {
    for workers in [1, 4] {
        let rt = running(workers);
        let guard = Arc::new(PollGuard::default());
        let task = rt.spawn(SelfWaking {
            guard: guard.clone(),
            rounds: sized(500, 20),
            wakes_per_poll: sized(50, 6),
        });
        join_within(&rt, task);
        assert_eq!(guard.polls(), sized(500, 20), "{workers} workers");
    }
}

/// In each poll, has a helper thread wake it and waits until that wake happened before
/// returning `Pending`: the wake lands while the task is running.
struct WokenFromElsewhereWhileRunning {
    guard: Arc<PollGuard>,
    rounds: usize,
    helper: mpsc::Sender<(Waker, Arc<AtomicBool>)>,
}

impl Future for WokenFromElsewhereWhileRunning {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let _scope = self.guard.enter();
        if self.guard.polls() == self.rounds {
            return Poll::Ready(());
        }
        let woken = Arc::new(AtomicBool::new(false));
        self.helper
            .send((cx.waker().clone(), woken.clone()))
            .expect("the helper lives");
        while !woken.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        Poll::Pending
    }
}

#[test]
fn a_wake_from_another_thread_during_the_poll_is_not_lost() {
    for workers in [1, 3] {
        let rt = running(workers);
        let (helper, requests) = mpsc::channel::<(Waker, Arc<AtomicBool>)>();
        let waker_thread = std::thread::spawn(move || {
            for (waker, woken) in requests {
                waker.wake_by_ref();
                waker.wake();
                woken.store(true, Ordering::SeqCst);
            }
        });
        let guard = Arc::new(PollGuard::default());
        let task = rt.spawn(WokenFromElsewhereWhileRunning {
            guard: guard.clone(),
            rounds: sized(300, 20),
            helper,
        });
        join_within(&rt, task);
        assert_eq!(guard.polls(), sized(300, 20), "{workers} workers");
        waker_thread.join().expect("the helper ran");
    }
}

/// Pending until `done`; stores its latest waker for others to wake.
struct WaitsForDone {
    guard: Arc<PollGuard>,
    waker: Arc<Mutex<Option<Waker>>>,
    done: Arc<AtomicBool>,
}

impl Future for WaitsForDone {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let _scope = self.guard.enter();
        // The waker is stored before `done` is read, under the same lock the waking side
        // takes after setting `done`, so the last wake cannot be missed.
        *self.waker.lock().expect("not poisoned") = Some(cx.waker().clone());
        if self.done.load(Ordering::SeqCst) {
            Poll::Ready(self.guard.polls())
        } else {
            Poll::Pending
        }
    }
}

#[test]
fn tasks_woken_from_many_threads_at_once_run_one_poll_at_a_time() {
    for workers in [1, 4] {
        let rt = running(workers);
        let done = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = (0..sized(40, 6))
            .map(|_| {
                let guard = Arc::new(PollGuard::default());
                let waker = Arc::new(Mutex::new(None::<Waker>));
                let task = rt.spawn(WaitsForDone {
                    guard: guard.clone(),
                    waker: waker.clone(),
                    done: done.clone(),
                });
                (task, waker)
            })
            .collect();
        let wakers: Vec<_> = tasks.iter().map(|(_, waker)| waker.clone()).collect();
        let wakes = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let wakers = wakers.clone();
                let wakes = wakes.clone();
                std::thread::spawn(move || {
                    for _ in 0..sized(200, 4) {
                        for slot in &wakers {
                            let waker = slot.lock().expect("not poisoned").clone();
                            if let Some(waker) = waker {
                                waker.wake();
                                wakes.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("the waking thread ran");
        }
        done.store(true, Ordering::SeqCst);
        for slot in &wakers {
            let waker = slot.lock().expect("not poisoned").clone();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
        let total_wakes = wakes.load(Ordering::SeqCst);
        for (task, _) in tasks {
            let polls = join_within(&rt, task);
            assert!(polls >= 1);
            assert!(
                polls <= total_wakes + 2,
                "more polls ({polls}) than wakes ({total_wakes})"
            );
        }
    }
}

#[test]
fn a_burst_of_wakes_on_an_idle_task_never_overlaps_its_polls() {
    let rt = running(2);
    let guard = Arc::new(PollGuard::default());
    let waker = Arc::new(Mutex::new(None::<Waker>));
    let done = Arc::new(AtomicBool::new(false));
    let task = rt.spawn(WaitsForDone {
        guard: guard.clone(),
        waker: waker.clone(),
        done: done.clone(),
    });
    let begin = std::time::Instant::now();
    while waker.lock().expect("not poisoned").is_none() {
        assert!(begin.elapsed() < Duration::from_secs(10), "never polled");
        std::thread::sleep(Duration::from_millis(1));
    }
    let stored = waker.lock().expect("not poisoned").clone().expect("stored");
    let wakes = sized(10_000, 300);
    for _ in 0..wakes {
        stored.wake_by_ref();
    }
    done.store(true, Ordering::SeqCst);
    stored.wake();
    let polls = join_within(&rt, task);
    assert!(polls <= wakes + 2, "{polls} polls for {} wakes", wakes + 1);
}
