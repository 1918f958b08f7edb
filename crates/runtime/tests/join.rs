//! `join!` and `try_join!`: the futures run concurrently and their outputs come back in the
//! order written; `try_join!` returns the first error at once and drops the rest; the first
//! future polled moves on by one at each poll, and `biased;` polls in the order written;
//! `IntoFuture` arguments; no future and one; the expansion's variables out of the user's
//! reach; futures and outputs drop in the order written; a future that never returns warns
//! of nothing; the state is the futures and three words, however many there are; user types
//! named like the primitive types the expansion uses. (Two hundred futures, spawned, are in
//! `join_many.rs`.)
//!
//! The file forbids `unsafe`, so the expansions are shown to need none.
#![forbid(unsafe_code)]

mod support;

use std::cell::RefCell;
use std::future::{pending, ready, Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use escapement::time::{sleep, Duration, Instant};

use support::{forever, paused, DropCounter, Named};

#[test]
fn join_runs_its_futures_concurrently() {
    paused(1).block_on(async {
        let start = Instant::now();
        let (a, b, c) = escapement::join!(
            async {
                sleep(Duration::from_millis(20)).await;
                1
            },
            async {
                sleep(Duration::from_millis(30)).await;
                "two"
            },
            ready(3.0),
        );
        assert_eq!((a, b, c), (1, "two", 3.0));
        assert_eq!(start.elapsed(), Duration::from_millis(30));
    });
}

#[test]
fn try_join_returns_the_first_error_without_waiting_for_the_rest() {
    paused(1).block_on(async {
        let start = Instant::now();
        let result: Result<(u32, u32), &str> = escapement::try_join!(
            async {
                sleep(Duration::from_secs(3600)).await;
                Ok(1)
            },
            async {
                sleep(Duration::from_millis(5)).await;
                Err("failed")
            },
        );
        assert_eq!(result, Err("failed"));
        assert_eq!(start.elapsed(), Duration::from_millis(5));
        let both: Result<(u32, u32), &str> = escapement::try_join!(ready(Ok(1)), ready(Ok(2)));
        assert_eq!(both, Ok((1, 2)));
    });
}

#[test]
fn an_error_drops_the_other_futures_and_the_outputs_already_in() {
    paused(1).block_on(async {
        let dropped = Arc::new(AtomicUsize::new(0));
        let done = DropCounter(dropped.clone());
        let waiting = DropCounter(dropped.clone());
        let result: Result<(DropCounter, (), ()), &str> = escapement::try_join!(
            ready(Ok(done)),
            async move {
                let _waiting = waiting;
                pending::<Result<(), &str>>().await
            },
            async {
                sleep(Duration::from_millis(1)).await;
                Err("failed")
            },
        );
        assert!(result.is_err());
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            2,
            "the finished output and the future still waiting are both dropped"
        );
    });
}

/// Records its index in `log` at every poll, and is ready at its `ready_at`-th poll (waking
/// its task at the others, so the `join!` is polled again at once).
struct Logged<'a> {
    index: usize,
    polls: usize,
    ready_at: usize,
    log: &'a RefCell<Vec<usize>>,
}

impl<'a> Logged<'a> {
    fn new(index: usize, ready_at: usize, log: &'a RefCell<Vec<usize>>) -> Self {
        Logged {
            index,
            polls: 0,
            ready_at,
            log,
        }
    }
}

impl Future for Logged<'_> {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.log.borrow_mut().push(self.index);
        self.polls += 1;
        if self.polls == self.ready_at {
            Poll::Ready(self.index)
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[test]
fn the_first_future_polled_moves_on_by_one_at_each_poll() {
    paused(1).block_on(async {
        let log = RefCell::new(Vec::new());
        let outputs = escapement::join!(
            Logged::new(0, 4, &log),
            Logged::new(1, 4, &log),
            Logged::new(2, 4, &log),
        );
        assert_eq!(outputs, (0, 1, 2));
        assert_eq!(
            log.into_inner(),
            [0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2],
            "each poll starts one further on, wrapping around"
        );
    });
}

#[test]
fn biased_polls_in_the_order_written_and_skips_what_is_done() {
    paused(1).block_on(async {
        let log = RefCell::new(Vec::new());
        let outputs = escapement::join!(
            biased;
            Logged::new(0, 1, &log),
            Logged::new(1, 3, &log),
            Logged::new(2, 2, &log),
        );
        assert_eq!(outputs, (0, 1, 2));
        assert_eq!(log.into_inner(), [0, 1, 2, 1, 2, 1]);
    });
}

#[test]
fn biased_try_join_stops_at_the_first_error_in_order() {
    paused(1).block_on(async {
        let log = RefCell::new(Vec::new());
        let result: Result<(usize, (), usize), &str> = escapement::try_join!(
            biased;
            async { Ok(Logged::new(0, 1, &log).await) },
            ready(Err("second")),
            async { Ok(Logged::new(2, 1, &log).await) },
        );
        assert_eq!(result, Err("second"));
        assert_eq!(
            log.into_inner(),
            [0],
            "the future after the error is never polled"
        );
    });
}

#[test]
fn into_future_arguments() {
    struct Later(u32);

    impl IntoFuture for Later {
        type Output = u32;
        type IntoFuture = std::future::Ready<u32>;

        fn into_future(self) -> Self::IntoFuture {
            ready(self.0 * 10)
        }
    }

    struct LaterOk(u32);

    impl IntoFuture for LaterOk {
        type Output = Result<u32, ()>;
        type IntoFuture = std::future::Ready<Result<u32, ()>>;

        fn into_future(self) -> Self::IntoFuture {
            ready(Ok(self.0))
        }
    }

    paused(1).block_on(async {
        assert_eq!(escapement::join!(Later(1), ready(2)), (10, 2));
        assert_eq!(escapement::try_join!(LaterOk(3), ready(Ok(4))), Ok((3, 4)));
    });
}

#[test]
fn no_future_and_one_future() {
    paused(1).block_on(async {
        let () = escapement::join!();
        let () = escapement::join!(biased;);
        let none: Result<(), &str> = escapement::try_join!();
        assert_eq!(none, Ok(()));
        assert_eq!(escapement::join!(ready(1)), (1,));
        assert_eq!(escapement::join!(biased; ready(1),), (1,));
        let one: Result<(u8,), &str> = escapement::try_join!(ready(Ok(1)));
        assert_eq!(one, Ok((1,)));
        let failed: Result<(u8,), &str> = escapement::try_join!(biased; ready(Err("no")));
        assert_eq!(failed, Err("no"));
    });
}

#[test]
fn user_variables_named_like_the_expansions_own_are_untouched() {
    paused(1).block_on(async {
        let (cx, pending, first, index, offset, next_first, future0) = (1, 2, 3, 4, 5, 6, 7);
        let sums = escapement::join!(
            async move { cx + pending },
            ready(first + index),
            ready(offset + next_first + future0),
        );
        assert_eq!(sums, (3, 7, 18));
    });
}

#[test]
fn futures_and_outputs_drop_in_the_order_written() {
    paused(1).block_on(async {
        let log = RefCell::new(Vec::new());
        let log = &log;
        // A `join!` that loses a `select!` drops an output already in and a future waiting.
        escapement::select! {
            _ = async move {
                escapement::join!(
                    ready(Named("output", log)),
                    async move {
                        let _named = Named("future", log);
                        pending::<()>().await
                    },
                )
            } => unreachable!("the join never finishes"),
            _ = sleep(Duration::from_millis(1)) => {}
        }
        assert_eq!(*log.borrow(), ["output", "future"]);

        log.borrow_mut().clear();
        let result: Result<((), Named<'_>, ()), &str> = escapement::try_join!(
            async move {
                let _named = Named("first", log);
                pending::<Result<(), &str>>().await
            },
            ready(Ok(Named("second", log))),
            async {
                sleep(Duration::from_millis(1)).await;
                Err("failed")
            },
        );
        assert!(result.is_err());
        assert_eq!(*log.borrow(), ["first", "second"]);
    });
}

/// A future whose output is `!` leaves the outputs' tuple unreachable in the expansion; that
/// is no warning here, as with tokio.
#[test]
#[deny(unreachable_code)]
fn a_future_that_never_returns_warns_of_no_unreachable_code() {
    paused(1).block_on(async {
        let joined = escapement::time::timeout(Duration::from_millis(5), async {
            escapement::join!(forever(), ready(1))
        })
        .await;
        assert!(
            joined.is_err(),
            "a join of a future that never returns never returns"
        );
    });
}

/// Stands for any future: 16 bytes of state, an 8-byte output.
async fn leaf(x: u64) -> u64 {
    x
}

/// The futures sit in one pinned value that the poll reaches through one pointer, so an
/// `async` block around `join!` holds the futures (each kept with room for its output) and
/// three words more, for any number of futures: 72 bytes for two, 144 for five, as tokio's.
/// (With a pinned local per future, each borrowed by the poll, it was two words more per
/// future: 96 and 216.)
#[test]
fn the_state_is_the_futures_and_three_words() {
    use futures::future::maybe_done;
    use std::mem::size_of_val;

    let words = 3 * size_of::<usize>();
    let one = size_of_val(&maybe_done(leaf(1)));
    let join_two = async { escapement::join!(leaf(1), leaf(2)) };
    assert!(
        size_of_val(&join_two) <= 2 * one + words,
        "{}",
        size_of_val(&join_two)
    );
    let join_five = async { escapement::join!(leaf(1), leaf(2), leaf(3), leaf(4), leaf(5)) };
    assert!(
        size_of_val(&join_five) <= 5 * one + words,
        "{}",
        size_of_val(&join_five)
    );
    let try_five = async {
        escapement::try_join!(
            async { Ok::<_, u8>(1) },
            async { Ok(2) },
            async { Ok(3) },
            async { Ok(4) },
            async { Ok(5) }
        )
    };
    let one = size_of_val(&maybe_done(async { Ok::<u64, u8>(1) }));
    assert!(
        size_of_val(&try_five) <= 5 * one + words,
        "{}",
        size_of_val(&try_five)
    );
}

/// A user's types named `u32` and `u8` leave the expansion's own integers alone.
#[test]
fn user_types_named_like_primitive_types_are_untouched() {
    #[allow(non_camel_case_types, dead_code)]
    struct u32;
    #[allow(non_camel_case_types, dead_code)]
    struct u8;
    paused(1).block_on(async {
        assert_eq!(escapement::join!(ready(1), ready(2)), (1, 2));
        assert_eq!(
            escapement::try_join!(ready(Ok::<_, ()>(1)), ready(Ok(2))),
            Ok((1, 2))
        );
        assert_eq!(escapement::join!(biased; ready(1), ready(2)), (1, 2));
    });
}
