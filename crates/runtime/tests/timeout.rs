//! `timeout` and `timeout_at`: a ready future is `Ok` even with a zero or past deadline (the
//! future is polled first), a slow one is `Err(Elapsed)` at exactly the deadline on the
//! paused clock, the accessors of `Timeout`, and `Elapsed`'s `Display`, `Error`,
//! `PartialEq` and conversion to an `io::Error` of kind `TimedOut`.

mod support;

use std::error::Error;
use std::future::{pending, ready, Future};
use std::io;
use std::pin::pin;
use std::task::{Context, Poll};

use escapement::time::error::Elapsed;
use escapement::time::{self, sleep, timeout, timeout_at, Duration, Instant};
use futures::task::noop_waker_ref;

use support::paused;

/// An `Elapsed`, from a timeout that ran out.
fn elapsed() -> Elapsed {
    paused(1).block_on(async {
        timeout(Duration::from_millis(1), pending::<()>())
            .await
            .expect_err("the timeout ran out")
    })
}

#[test]
fn a_ready_future_is_ok_even_with_a_zero_or_past_deadline() {
    let rt = paused(1);
    rt.block_on(async {
        assert_eq!(timeout(Duration::ZERO, ready(5)).await, Ok(5));
        assert_eq!(
            timeout(Duration::ZERO, async { "async" }).await,
            Ok("async")
        );
        time::advance(Duration::from_secs(1)).await;
        let past = Instant::now() - Duration::from_millis(500);
        assert_eq!(timeout_at(past, ready(6)).await, Ok(6));
        assert_eq!(timeout_at(Instant::now(), ready(7)).await, Ok(7));
    });
}

#[test]
fn a_ready_future_is_ok_at_the_first_poll() {
    let rt = paused(1);
    rt.block_on(async {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut quick = pin!(timeout(Duration::ZERO, ready(1)));
        assert_eq!(quick.as_mut().poll(&mut cx), Poll::Ready(Ok(1)));
    });
}

#[test]
fn a_slow_future_times_out_exactly_at_the_deadline() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            let slow = timeout(Duration::from_millis(80), sleep(Duration::from_secs(60))).await;
            let _: Elapsed = slow.expect_err("the sleep is slower than the timeout");
            assert_eq!(start.elapsed(), Duration::from_millis(80));

            let deadline = Instant::now() + Duration::from_millis(45);
            assert!(timeout_at(deadline, pending::<()>()).await.is_err());
            assert_eq!(Instant::now(), deadline);
        });
    }
}

#[test]
fn a_future_finishing_before_the_deadline_is_ok_at_its_own_time() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        let quick = timeout(Duration::from_millis(100), async {
            sleep(Duration::from_millis(30)).await;
            "done"
        })
        .await;
        assert_eq!(quick, Ok("done"));
        assert_eq!(start.elapsed(), Duration::from_millis(30));
    });
}

#[test]
fn the_future_wins_a_tie_with_the_deadline() {
    let rt = paused(1);
    rt.block_on(async {
        let tie = timeout(Duration::from_millis(20), sleep(Duration::from_millis(20))).await;
        assert_eq!(tie, Ok(()), "the inner future is polled first");
    });
}

#[test]
fn a_timeout_with_zero_duration_on_a_pending_future_elapses_without_moving_the_clock() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        assert!(timeout(Duration::ZERO, pending::<()>()).await.is_err());
        assert_eq!(Instant::now(), start);
    });
}

#[test]
fn timeout_accepts_into_future_and_exposes_the_inner_future() {
    let rt = paused(1);
    rt.block_on(async {
        let mut wrapped = timeout(Duration::from_secs(1), ready(3));
        assert_eq!(wrapped.get_ref().clone().into_inner(), 3);
        *wrapped.get_mut() = ready(4);
        assert!(format!("{wrapped:?}").contains("Timeout"));
        assert_eq!(wrapped.into_inner().await, 4);
    });
}

#[test]
fn elapsed_is_a_displayable_comparable_error() {
    let error = elapsed();
    assert_eq!(error, elapsed());
    assert_eq!(error.to_string(), "deadline has elapsed");
    assert!(format!("{error:?}").contains("Elapsed"));
    let as_error: &dyn Error = &error;
    assert!(as_error.source().is_none());
    let copy = error;
    assert_eq!(copy, error);
}

#[test]
fn elapsed_converts_to_a_timed_out_io_error() {
    let io_error = io::Error::from(elapsed());
    assert_eq!(io_error.kind(), io::ErrorKind::TimedOut);
    assert_eq!(io_error.to_string(), "deadline has elapsed");
    let inner = io_error.into_inner().expect("the Elapsed is kept");
    assert!(inner.downcast_ref::<Elapsed>().is_some());

    fn with_question_mark() -> io::Result<()> {
        paused(1).block_on(async {
            timeout(Duration::from_millis(3), pending::<()>()).await?;
            Ok(())
        })
    }
    assert_eq!(
        with_question_mark().expect_err("timed out").kind(),
        io::ErrorKind::TimedOut
    );
}

#[test]
fn timeout_on_the_real_clock_is_never_early() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let start = std::time::Instant::now();
        let result = timeout(Duration::from_millis(30), pending::<()>()).await;
        let elapsed = start.elapsed();
        assert!(result.is_err());
        assert!(elapsed >= Duration::from_millis(30), "early: {elapsed:?}");
        assert!(elapsed < Duration::from_secs(10), "hung: {elapsed:?}");
    });
}
