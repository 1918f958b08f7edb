//! `Interval` as a `futures::Stream` of tick instants: it yields the same instants as
//! `tick`, never ends, combines with stream adapters, and follows its missed-tick behaviour.

mod support;

use escapement::time::{self, interval, interval_at, Duration, Instant, MissedTickBehavior};
use futures::{Stream, StreamExt};

use support::paused;

#[test]
fn the_stream_yields_each_tick_instant() {
    for workers in [1, 3] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            let ticks: Vec<Instant> = interval(Duration::from_millis(300)).take(3).collect().await;
            let expected: Vec<Instant> = (0..3u32)
                .map(|n| start + Duration::from_millis(300) * n)
                .collect();
            assert_eq!(ticks, expected);
            assert_eq!(start.elapsed(), Duration::from_millis(600));
        });
    }
}

#[test]
fn stream_and_tick_share_one_schedule() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now() + Duration::from_millis(5);
        let mut ticker = interval_at(start, Duration::from_millis(20));
        assert_eq!(ticker.next().await, Some(start));
        assert_eq!(ticker.tick().await, start + Duration::from_millis(20));
        assert_eq!(ticker.next().await, Some(start + Duration::from_millis(40)));
        assert_eq!(Instant::now(), start + Duration::from_millis(40));
    });
}

#[test]
fn the_stream_never_ends() {
    let rt = paused(1);
    rt.block_on(async {
        let ticker = interval(Duration::from_millis(1));
        // As `tokio-stream`'s `IntervalStream` says: at least `usize::MAX` items.
        assert_eq!(ticker.size_hint(), (usize::MAX, None));
        let count = ticker.take(1_000).count().await;
        assert_eq!(count, 1_000);
    });
}

#[test]
fn the_stream_follows_the_missed_tick_behaviour() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        assert_eq!(ticker.next().await, Some(start));
        time::advance(Duration::from_millis(250)).await;
        let after: Vec<Instant> = ticker.by_ref().take(2).collect().await;
        assert_eq!(
            after,
            [
                start + Duration::from_millis(100),
                start + Duration::from_millis(300)
            ]
        );
    });
}

#[test]
fn the_stream_works_with_adapters_across_tasks() {
    let rt = paused(4);
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (1..=8u64)
            .map(|i| {
                escapement::spawn(async move {
                    interval(Duration::from_millis(10 * i))
                        .skip(1)
                        .map(|at| at - start)
                        .take(2)
                        .collect::<Vec<Duration>>()
                        .await
                })
            })
            .collect();
        for (i, task) in (1..=8u64).zip(tasks) {
            let offsets = task.await.expect("the task completes");
            assert_eq!(
                offsets,
                [Duration::from_millis(10 * i), Duration::from_millis(20 * i)]
            );
        }
    });
}
