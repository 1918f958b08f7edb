//! The cooperative budget: a task polling ready sleeps, past timeouts or finished join
//! handles in a loop yields after 128 of them, so the other tasks of its worker run; in
//! `block_on` too; and not inside `task::unconstrained` or a `spawn_blocking` closure. A
//! `JoinSet` spends it once per output and still hands out every one. A `select!` yields once
//! it is spent, even with a branch that is always ready and knows nothing of it.
//! `task::coop::consume_budget` (also at `task::consume_budget`) spends it as a ready sleep
//! does, and `has_budget_remaining` tells when it is spent. `poll_proceed` spends a unit only
//! when the work it allowed made progress, and `cooperative` makes any future spend it as
//! tokio's does; a guard dropped where there is no budget puts none back.

mod support;

use std::future::{pending, poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{ready, Poll};
use std::time::Duration;

use escapement::task::coop::{consume_budget, cooperative, has_budget_remaining, poll_proceed};
use escapement::task::{unconstrained, yield_now, JoinSet};
use escapement::time::{sleep, timeout};

use support::running;

/// How many polls `future` takes to finish.
async fn polls_to_finish(future: impl Future<Output = ()>) -> usize {
    let mut future = pin!(future);
    let mut polls = 0;
    poll_fn(|cx| {
        polls += 1;
        future.as_mut().poll(cx)
    })
    .await;
    polls
}

/// A thousand sleeps that are over as soon as they are made: 7 × 128 + 104.
async fn thousand_ready_sleeps() {
    for _ in 0..1000 {
        sleep(Duration::ZERO).await;
    }
}

/// Runs `looping` (which ends once `flag` is set) and then a task that sets `flag`, on a
/// runtime with one worker; returns whether both finished within a minute.
fn both_finish_on_one_worker<F>(looping: impl FnOnce(Arc<AtomicBool>) -> F) -> bool
where
    F: Future<Output = ()> + Send + 'static,
{
    let rt = running(1);
    let flag = Arc::new(AtomicBool::new(false));
    let looping = rt.spawn(looping(flag.clone()));
    let setter = rt.spawn(async move { flag.store(true, Ordering::SeqCst) });
    let (done, finished) = mpsc::channel();
    // On a thread of its own, so a loop that never yields fails the test instead of hanging
    // it (the runtime is then leaked with its worker still looping).
    std::thread::spawn(move || {
        rt.block_on(async {
            looping.await.unwrap();
            setter.await.unwrap();
        });
        done.send(()).unwrap();
        drop(rt);
    });
    finished.recv_timeout(Duration::from_secs(60)).is_ok()
}

#[test]
fn a_loop_over_ready_sleeps_lets_the_other_tasks_of_its_worker_run() {
    assert!(both_finish_on_one_worker(|flag| async move {
        while !flag.load(Ordering::SeqCst) {
            sleep(Duration::ZERO).await;
        }
    }));
}

#[test]
fn a_loop_over_past_timeouts_lets_the_other_tasks_of_its_worker_run() {
    assert!(both_finish_on_one_worker(|flag| async move {
        while !flag.load(Ordering::SeqCst) {
            let elapsed = timeout(Duration::ZERO, pending::<()>()).await;
            assert!(elapsed.is_err());
        }
    }));
}

#[test]
fn a_task_yields_after_128_ready_sleeps() {
    let rt = running(1);
    let polls = rt
        .block_on(rt.spawn(polls_to_finish(thousand_ready_sleeps())))
        .unwrap();
    assert_eq!(polls, 8);
}

#[test]
fn a_select_with_the_budget_spent_yields_before_polling_its_branches() {
    let rt = running(1);
    let polls = rt.block_on(polls_to_finish(async {
        for _ in 0..128 {
            sleep(Duration::ZERO).await;
        }
        let chosen = escapement::select! {
            biased;
            n = std::future::ready(1) => n,
        };
        assert_eq!(chosen, 1);
    }));
    assert_eq!(
        polls, 2,
        "the select! returned `Pending` once, with the budget spent"
    );
}

#[test]
fn a_loop_over_a_select_with_a_branch_blind_to_the_budget_lets_the_other_tasks_run() {
    assert!(both_finish_on_one_worker(|flag| async move {
        while !flag.load(Ordering::SeqCst) {
            // Once the sleeps have spent the budget they return `Pending`, and the branch
            // that is always ready would win every time after.
            escapement::select! {
                () = sleep(Duration::ZERO) => {}
                () = std::future::ready(()) => {}
            }
        }
    }));
}

#[test]
fn block_on_gives_its_future_the_same_budget() {
    let rt = running(1);
    assert_eq!(rt.block_on(polls_to_finish(thousand_ready_sleeps())), 8);
}

#[test]
fn unconstrained_lifts_the_budget() {
    let rt = running(1);
    let polls = rt
        .block_on(rt.spawn(polls_to_finish(unconstrained(thousand_ready_sleeps()))))
        .unwrap();
    assert_eq!(polls, 1);
}

#[test]
fn finished_join_handles_spend_the_budget() {
    let rt = running(2);
    let polls = rt
        .block_on(rt.spawn(async {
            // 2 × 128 + 44.
            let handles: Vec<_> = (0..300).map(|_| escapement::spawn(async {})).collect();
            while !handles.iter().all(|handle| handle.is_finished()) {
                yield_now().await;
            }
            polls_to_finish(async {
                for handle in handles {
                    handle.await.unwrap();
                }
            })
            .await
        }))
        .unwrap();
    assert_eq!(polls, 3);
}

#[test]
fn a_timeout_whose_future_spent_the_last_unit_still_sees_its_deadline() {
    let rt = running(1);
    let polls = rt
        .block_on(rt.spawn(async {
            // 127 units spent; the timeout's inner future spends the last one, so its own
            // deadline, already past, is looked at without the budget.
            for _ in 0..127 {
                sleep(Duration::ZERO).await;
            }
            let mut polls = 0;
            let never = poll_fn(|_| {
                polls += 1;
                Poll::<()>::Pending
            });
            let elapsed = timeout(Duration::ZERO, async {
                sleep(Duration::ZERO).await;
                never.await;
            })
            .await;
            assert!(elapsed.is_err(), "the deadline had passed");
            polls
        }))
        .unwrap();
    assert_eq!(polls, 1, "the inner future ran once, in the same poll");
}

/// Runs `body` on a runtime with `workers` workers, on a thread of its own; returns its
/// value, or `None` if it has not finished within a minute.
fn within_a_minute<T: Send + 'static>(
    workers: usize,
    body: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = running(workers);
        let value = rt.block_on(rt.spawn(body)).unwrap();
        done.send(value).unwrap();
    });
    finished.recv_timeout(Duration::from_secs(60)).ok()
}

#[test]
fn a_join_set_hands_out_more_outputs_than_the_budget_holds() {
    let joined = within_a_minute(1, async {
        let mut set = JoinSet::new();
        let finished = Arc::new(AtomicUsize::new(0));
        for _ in 0..300 {
            let finished = finished.clone();
            set.spawn(async move {
                finished.fetch_add(1, Ordering::SeqCst);
            });
        }
        // All finished before the first `join_next`, so it has 300 outputs ready at once.
        while finished.load(Ordering::SeqCst) < 300 {
            yield_now().await;
        }
        let mut joined = 0;
        while let Some(output) = set.join_next().await {
            output.unwrap();
            joined += 1;
        }
        joined
    });
    assert_eq!(joined, Some(300), "join_next handed out every output");
}

#[test]
fn try_join_next_finds_a_finished_task_with_the_budget_spent() {
    let found = within_a_minute(1, async {
        let mut set = JoinSet::new();
        set.spawn(async { 7 });
        // The poll that finds this sleep over starts with a fresh budget: one unit for the
        // sleep and 127 more spend all of it.
        sleep(Duration::from_millis(10)).await;
        for _ in 0..127 {
            sleep(Duration::ZERO).await;
        }
        set.try_join_next().map(Result::unwrap)
    });
    assert_eq!(found, Some(Some(7)));
}

#[test]
fn a_blocking_closure_has_no_budget() {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = running(1);
        let polls = rt.block_on(rt.spawn_blocking(|| {
            // Another executor inside the closure (which runs in the runtime's context):
            // none of its polls is cut short.
            futures::executor::block_on(polls_to_finish(thousand_ready_sleeps()))
        }));
        done.send(polls.unwrap()).unwrap();
    });
    let polls = finished.recv_timeout(Duration::from_secs(60));
    assert_eq!(
        polls,
        Ok(1),
        "the closure's executor ran its future in one poll"
    );
}

/// A thousand units of budget spent through `coop::consume_budget`, half of them through
/// `task::consume_budget`, the same function at the path of older tokio.
async fn consume_a_thousand_units() {
    for unit in 0..1000 {
        if unit % 2 == 0 {
            consume_budget().await;
        } else {
            escapement::task::consume_budget().await;
        }
    }
}

#[test]
fn consume_budget_spends_a_unit_and_yields_once_the_budget_is_spent() {
    let rt = running(1);
    let polls = rt
        .block_on(rt.spawn(polls_to_finish(consume_a_thousand_units())))
        .unwrap();
    assert_eq!(polls, 8, "7 × 128 + 104 units");
    let polls = rt
        .block_on(rt.spawn(polls_to_finish(unconstrained(consume_a_thousand_units()))))
        .unwrap();
    assert_eq!(polls, 1, "nothing to spend inside unconstrained");
    assert!(both_finish_on_one_worker(|flag| async move {
        while !flag.load(Ordering::SeqCst) {
            consume_budget().await;
        }
    }));
}

#[test]
fn has_budget_remaining_turns_false_when_the_budget_is_spent() {
    let rt = running(1);
    let (before, after, spent) = rt
        .block_on(rt.spawn(async {
            let before = has_budget_remaining();
            let mut spent = 0;
            for _ in 0..128 {
                sleep(Duration::ZERO).await;
                spent += 1;
            }
            (before, has_budget_remaining(), spent)
        }))
        .unwrap();
    assert!(before && !after, "128 ready sleeps spend the budget");
    assert_eq!(spent, 128);
    assert!(
        has_budget_remaining(),
        "outside a task there is no budget to spend"
    );
    let unlimited = rt.block_on(unconstrained(async {
        consume_a_thousand_units().await;
        has_budget_remaining()
    }));
    assert!(unlimited);
}

/// A thousand units asked of `coop::poll_proceed`, each kept only `if progress`.
async fn proceed_a_thousand_times(progress: bool) {
    for _ in 0..1000 {
        poll_fn(|cx| {
            let restore = ready!(poll_proceed(cx));
            if progress {
                restore.made_progress();
            }
            Poll::Ready(())
        })
        .await;
    }
}

#[test]
fn poll_proceed_spends_a_unit_only_when_the_work_made_progress() {
    let rt = running(1);
    let polls = rt
        .block_on(rt.spawn(polls_to_finish(proceed_a_thousand_times(true))))
        .unwrap();
    assert_eq!(polls, 8, "7 × 128 + 104 units");
    let (polls, left) = rt
        .block_on(rt.spawn(async {
            let polls = polls_to_finish(proceed_a_thousand_times(false)).await;
            (polls, has_budget_remaining())
        }))
        .unwrap();
    assert_eq!(
        polls, 1,
        "each unit went back as its RestoreOnPending dropped"
    );
    assert!(left);
    let polls = rt.block_on(unconstrained(polls_to_finish(proceed_a_thousand_times(
        true,
    ))));
    assert_eq!(polls, 1, "nothing to spend inside unconstrained");
    assert!(both_finish_on_one_worker(|flag| async move {
        while !flag.load(Ordering::SeqCst) {
            proceed_a_thousand_times(true).await;
        }
    }));
}

#[test]
fn a_cooperative_future_spends_a_unit_when_ready_and_none_when_pending() {
    let rt = running(1);
    let polls = rt
        .block_on(rt.spawn(polls_to_finish(async {
            for _ in 0..1000 {
                cooperative(std::future::ready(())).await;
            }
        })))
        .unwrap();
    assert_eq!(polls, 8, "7 × 128 + 104 units");
    let left = rt
        .block_on(rt.spawn(async {
            let mut never = pin!(cooperative(pending::<()>()));
            poll_fn(|cx| {
                for _ in 0..1000 {
                    assert!(never.as_mut().poll(cx).is_pending());
                }
                Poll::Ready(())
            })
            .await;
            has_budget_remaining()
        }))
        .unwrap();
    assert!(left, "a pending poll spent the budget");
    // As tokio's, it takes its unit before polling: with one left, a ready sleep inside it
    // finds none, and the task yields once.
    let polls = rt
        .block_on(rt.spawn(polls_to_finish(async {
            for _ in 0..127 {
                consume_budget().await;
            }
            cooperative(sleep(Duration::ZERO)).await;
        })))
        .unwrap();
    assert_eq!(polls, 2);
    assert!(both_finish_on_one_worker(|flag| async move {
        while !flag.load(Ordering::SeqCst) {
            cooperative(std::future::ready(())).await;
        }
    }));
}

#[test]
fn a_restore_dropped_where_there_is_no_budget_leaves_none() {
    let rt = running(1);
    let polls = rt.block_on(async {
        let restore = poll_fn(|cx| Poll::Ready(poll_proceed(cx))).await;
        let Poll::Ready(restore) = restore else {
            panic!("a fresh budget has units to spend");
        };
        polls_to_finish(unconstrained(async move {
            drop(restore);
            thousand_ready_sleeps().await;
        }))
        .await
    });
    assert_eq!(
        polls, 1,
        "the dropped guard put a budget back inside unconstrained"
    );
}
