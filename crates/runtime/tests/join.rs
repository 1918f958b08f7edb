//! `join!` and `try_join!`: the futures run concurrently and their outputs come back in the
//! order written; `try_join!` returns the first error at once and drops the rest; the first
//! future polled moves on by one at each poll, and `biased;` polls in the order written;
//! `IntoFuture` arguments; no future and one; the expansion's variables out of the user's
//! reach; futures and outputs drop in the order written; a future that never returns warns
//! of nothing; the state is the futures and three words, however many there are; two hundred
//! futures, spawned; user types named like the primitive types the expansion uses.
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

/// The futures nest in a balanced tree of pairs, so the compiler's checks of its type (its
/// drop, its layout, `Send` for a spawn) recurse about log2(n) deep: two hundred futures
/// build, are `Send`, and run, in `join!` and in `try_join!`. (A chain of pairs, one level per
/// future, passed the compiler's recursion limit at about 125.)
#[test]
fn two_hundred_futures_spawned() {
    let (first, last, sum) = paused(1).block_on(async {
        escapement::spawn(async {
            let all = escapement::join!(
                ready(0u32),
                ready(1u32),
                ready(2u32),
                ready(3u32),
                ready(4u32),
                ready(5u32),
                ready(6u32),
                ready(7u32),
                ready(8u32),
                ready(9u32),
                ready(10u32),
                ready(11u32),
                ready(12u32),
                ready(13u32),
                ready(14u32),
                ready(15u32),
                ready(16u32),
                ready(17u32),
                ready(18u32),
                ready(19u32),
                ready(20u32),
                ready(21u32),
                ready(22u32),
                ready(23u32),
                ready(24u32),
                ready(25u32),
                ready(26u32),
                ready(27u32),
                ready(28u32),
                ready(29u32),
                ready(30u32),
                ready(31u32),
                ready(32u32),
                ready(33u32),
                ready(34u32),
                ready(35u32),
                ready(36u32),
                ready(37u32),
                ready(38u32),
                ready(39u32),
                ready(40u32),
                ready(41u32),
                ready(42u32),
                ready(43u32),
                ready(44u32),
                ready(45u32),
                ready(46u32),
                ready(47u32),
                ready(48u32),
                ready(49u32),
                ready(50u32),
                ready(51u32),
                ready(52u32),
                ready(53u32),
                ready(54u32),
                ready(55u32),
                ready(56u32),
                ready(57u32),
                ready(58u32),
                ready(59u32),
                ready(60u32),
                ready(61u32),
                ready(62u32),
                ready(63u32),
                ready(64u32),
                ready(65u32),
                ready(66u32),
                ready(67u32),
                ready(68u32),
                ready(69u32),
                ready(70u32),
                ready(71u32),
                ready(72u32),
                ready(73u32),
                ready(74u32),
                ready(75u32),
                ready(76u32),
                ready(77u32),
                ready(78u32),
                ready(79u32),
                ready(80u32),
                ready(81u32),
                ready(82u32),
                ready(83u32),
                ready(84u32),
                ready(85u32),
                ready(86u32),
                ready(87u32),
                ready(88u32),
                ready(89u32),
                ready(90u32),
                ready(91u32),
                ready(92u32),
                ready(93u32),
                ready(94u32),
                ready(95u32),
                ready(96u32),
                ready(97u32),
                ready(98u32),
                ready(99u32),
                ready(100u32),
                ready(101u32),
                ready(102u32),
                ready(103u32),
                ready(104u32),
                ready(105u32),
                ready(106u32),
                ready(107u32),
                ready(108u32),
                ready(109u32),
                ready(110u32),
                ready(111u32),
                ready(112u32),
                ready(113u32),
                ready(114u32),
                ready(115u32),
                ready(116u32),
                ready(117u32),
                ready(118u32),
                ready(119u32),
                ready(120u32),
                ready(121u32),
                ready(122u32),
                ready(123u32),
                ready(124u32),
                ready(125u32),
                ready(126u32),
                ready(127u32),
                ready(128u32),
                ready(129u32),
                ready(130u32),
                ready(131u32),
                ready(132u32),
                ready(133u32),
                ready(134u32),
                ready(135u32),
                ready(136u32),
                ready(137u32),
                ready(138u32),
                ready(139u32),
                ready(140u32),
                ready(141u32),
                ready(142u32),
                ready(143u32),
                ready(144u32),
                ready(145u32),
                ready(146u32),
                ready(147u32),
                ready(148u32),
                ready(149u32),
                ready(150u32),
                ready(151u32),
                ready(152u32),
                ready(153u32),
                ready(154u32),
                ready(155u32),
                ready(156u32),
                ready(157u32),
                ready(158u32),
                ready(159u32),
                ready(160u32),
                ready(161u32),
                ready(162u32),
                ready(163u32),
                ready(164u32),
                ready(165u32),
                ready(166u32),
                ready(167u32),
                ready(168u32),
                ready(169u32),
                ready(170u32),
                ready(171u32),
                ready(172u32),
                ready(173u32),
                ready(174u32),
                ready(175u32),
                ready(176u32),
                ready(177u32),
                ready(178u32),
                ready(179u32),
                ready(180u32),
                ready(181u32),
                ready(182u32),
                ready(183u32),
                ready(184u32),
                ready(185u32),
                ready(186u32),
                ready(187u32),
                ready(188u32),
                ready(189u32),
                ready(190u32),
                ready(191u32),
                ready(192u32),
                ready(193u32),
                ready(194u32),
                ready(195u32),
                ready(196u32),
                ready(197u32),
                ready(198u32),
                ready(199u32),
            );
            let tried = escapement::try_join!(
                ready(Ok::<u32, ()>(0)),
                ready(Ok::<u32, ()>(1)),
                ready(Ok::<u32, ()>(2)),
                ready(Ok::<u32, ()>(3)),
                ready(Ok::<u32, ()>(4)),
                ready(Ok::<u32, ()>(5)),
                ready(Ok::<u32, ()>(6)),
                ready(Ok::<u32, ()>(7)),
                ready(Ok::<u32, ()>(8)),
                ready(Ok::<u32, ()>(9)),
                ready(Ok::<u32, ()>(10)),
                ready(Ok::<u32, ()>(11)),
                ready(Ok::<u32, ()>(12)),
                ready(Ok::<u32, ()>(13)),
                ready(Ok::<u32, ()>(14)),
                ready(Ok::<u32, ()>(15)),
                ready(Ok::<u32, ()>(16)),
                ready(Ok::<u32, ()>(17)),
                ready(Ok::<u32, ()>(18)),
                ready(Ok::<u32, ()>(19)),
                ready(Ok::<u32, ()>(20)),
                ready(Ok::<u32, ()>(21)),
                ready(Ok::<u32, ()>(22)),
                ready(Ok::<u32, ()>(23)),
                ready(Ok::<u32, ()>(24)),
                ready(Ok::<u32, ()>(25)),
                ready(Ok::<u32, ()>(26)),
                ready(Ok::<u32, ()>(27)),
                ready(Ok::<u32, ()>(28)),
                ready(Ok::<u32, ()>(29)),
                ready(Ok::<u32, ()>(30)),
                ready(Ok::<u32, ()>(31)),
                ready(Ok::<u32, ()>(32)),
                ready(Ok::<u32, ()>(33)),
                ready(Ok::<u32, ()>(34)),
                ready(Ok::<u32, ()>(35)),
                ready(Ok::<u32, ()>(36)),
                ready(Ok::<u32, ()>(37)),
                ready(Ok::<u32, ()>(38)),
                ready(Ok::<u32, ()>(39)),
                ready(Ok::<u32, ()>(40)),
                ready(Ok::<u32, ()>(41)),
                ready(Ok::<u32, ()>(42)),
                ready(Ok::<u32, ()>(43)),
                ready(Ok::<u32, ()>(44)),
                ready(Ok::<u32, ()>(45)),
                ready(Ok::<u32, ()>(46)),
                ready(Ok::<u32, ()>(47)),
                ready(Ok::<u32, ()>(48)),
                ready(Ok::<u32, ()>(49)),
                ready(Ok::<u32, ()>(50)),
                ready(Ok::<u32, ()>(51)),
                ready(Ok::<u32, ()>(52)),
                ready(Ok::<u32, ()>(53)),
                ready(Ok::<u32, ()>(54)),
                ready(Ok::<u32, ()>(55)),
                ready(Ok::<u32, ()>(56)),
                ready(Ok::<u32, ()>(57)),
                ready(Ok::<u32, ()>(58)),
                ready(Ok::<u32, ()>(59)),
                ready(Ok::<u32, ()>(60)),
                ready(Ok::<u32, ()>(61)),
                ready(Ok::<u32, ()>(62)),
                ready(Ok::<u32, ()>(63)),
                ready(Ok::<u32, ()>(64)),
                ready(Ok::<u32, ()>(65)),
                ready(Ok::<u32, ()>(66)),
                ready(Ok::<u32, ()>(67)),
                ready(Ok::<u32, ()>(68)),
                ready(Ok::<u32, ()>(69)),
                ready(Ok::<u32, ()>(70)),
                ready(Ok::<u32, ()>(71)),
                ready(Ok::<u32, ()>(72)),
                ready(Ok::<u32, ()>(73)),
                ready(Ok::<u32, ()>(74)),
                ready(Ok::<u32, ()>(75)),
                ready(Ok::<u32, ()>(76)),
                ready(Ok::<u32, ()>(77)),
                ready(Ok::<u32, ()>(78)),
                ready(Ok::<u32, ()>(79)),
                ready(Ok::<u32, ()>(80)),
                ready(Ok::<u32, ()>(81)),
                ready(Ok::<u32, ()>(82)),
                ready(Ok::<u32, ()>(83)),
                ready(Ok::<u32, ()>(84)),
                ready(Ok::<u32, ()>(85)),
                ready(Ok::<u32, ()>(86)),
                ready(Ok::<u32, ()>(87)),
                ready(Ok::<u32, ()>(88)),
                ready(Ok::<u32, ()>(89)),
                ready(Ok::<u32, ()>(90)),
                ready(Ok::<u32, ()>(91)),
                ready(Ok::<u32, ()>(92)),
                ready(Ok::<u32, ()>(93)),
                ready(Ok::<u32, ()>(94)),
                ready(Ok::<u32, ()>(95)),
                ready(Ok::<u32, ()>(96)),
                ready(Ok::<u32, ()>(97)),
                ready(Ok::<u32, ()>(98)),
                ready(Ok::<u32, ()>(99)),
                ready(Ok::<u32, ()>(100)),
                ready(Ok::<u32, ()>(101)),
                ready(Ok::<u32, ()>(102)),
                ready(Ok::<u32, ()>(103)),
                ready(Ok::<u32, ()>(104)),
                ready(Ok::<u32, ()>(105)),
                ready(Ok::<u32, ()>(106)),
                ready(Ok::<u32, ()>(107)),
                ready(Ok::<u32, ()>(108)),
                ready(Ok::<u32, ()>(109)),
                ready(Ok::<u32, ()>(110)),
                ready(Ok::<u32, ()>(111)),
                ready(Ok::<u32, ()>(112)),
                ready(Ok::<u32, ()>(113)),
                ready(Ok::<u32, ()>(114)),
                ready(Ok::<u32, ()>(115)),
                ready(Ok::<u32, ()>(116)),
                ready(Ok::<u32, ()>(117)),
                ready(Ok::<u32, ()>(118)),
                ready(Ok::<u32, ()>(119)),
                ready(Ok::<u32, ()>(120)),
                ready(Ok::<u32, ()>(121)),
                ready(Ok::<u32, ()>(122)),
                ready(Ok::<u32, ()>(123)),
                ready(Ok::<u32, ()>(124)),
                ready(Ok::<u32, ()>(125)),
                ready(Ok::<u32, ()>(126)),
                ready(Ok::<u32, ()>(127)),
                ready(Ok::<u32, ()>(128)),
                ready(Ok::<u32, ()>(129)),
                ready(Ok::<u32, ()>(130)),
                ready(Ok::<u32, ()>(131)),
                ready(Ok::<u32, ()>(132)),
                ready(Ok::<u32, ()>(133)),
                ready(Ok::<u32, ()>(134)),
                ready(Ok::<u32, ()>(135)),
                ready(Ok::<u32, ()>(136)),
                ready(Ok::<u32, ()>(137)),
                ready(Ok::<u32, ()>(138)),
                ready(Ok::<u32, ()>(139)),
                ready(Ok::<u32, ()>(140)),
                ready(Ok::<u32, ()>(141)),
                ready(Ok::<u32, ()>(142)),
                ready(Ok::<u32, ()>(143)),
                ready(Ok::<u32, ()>(144)),
                ready(Ok::<u32, ()>(145)),
                ready(Ok::<u32, ()>(146)),
                ready(Ok::<u32, ()>(147)),
                ready(Ok::<u32, ()>(148)),
                ready(Ok::<u32, ()>(149)),
                ready(Ok::<u32, ()>(150)),
                ready(Ok::<u32, ()>(151)),
                ready(Ok::<u32, ()>(152)),
                ready(Ok::<u32, ()>(153)),
                ready(Ok::<u32, ()>(154)),
                ready(Ok::<u32, ()>(155)),
                ready(Ok::<u32, ()>(156)),
                ready(Ok::<u32, ()>(157)),
                ready(Ok::<u32, ()>(158)),
                ready(Ok::<u32, ()>(159)),
                ready(Ok::<u32, ()>(160)),
                ready(Ok::<u32, ()>(161)),
                ready(Ok::<u32, ()>(162)),
                ready(Ok::<u32, ()>(163)),
                ready(Ok::<u32, ()>(164)),
                ready(Ok::<u32, ()>(165)),
                ready(Ok::<u32, ()>(166)),
                ready(Ok::<u32, ()>(167)),
                ready(Ok::<u32, ()>(168)),
                ready(Ok::<u32, ()>(169)),
                ready(Ok::<u32, ()>(170)),
                ready(Ok::<u32, ()>(171)),
                ready(Ok::<u32, ()>(172)),
                ready(Ok::<u32, ()>(173)),
                ready(Ok::<u32, ()>(174)),
                ready(Ok::<u32, ()>(175)),
                ready(Ok::<u32, ()>(176)),
                ready(Ok::<u32, ()>(177)),
                ready(Ok::<u32, ()>(178)),
                ready(Ok::<u32, ()>(179)),
                ready(Ok::<u32, ()>(180)),
                ready(Ok::<u32, ()>(181)),
                ready(Ok::<u32, ()>(182)),
                ready(Ok::<u32, ()>(183)),
                ready(Ok::<u32, ()>(184)),
                ready(Ok::<u32, ()>(185)),
                ready(Ok::<u32, ()>(186)),
                ready(Ok::<u32, ()>(187)),
                ready(Ok::<u32, ()>(188)),
                ready(Ok::<u32, ()>(189)),
                ready(Ok::<u32, ()>(190)),
                ready(Ok::<u32, ()>(191)),
                ready(Ok::<u32, ()>(192)),
                ready(Ok::<u32, ()>(193)),
                ready(Ok::<u32, ()>(194)),
                ready(Ok::<u32, ()>(195)),
                ready(Ok::<u32, ()>(196)),
                ready(Ok::<u32, ()>(197)),
                ready(Ok::<u32, ()>(198)),
                ready(Ok::<u32, ()>(199)),
            );
            (all.0, all.199, tried.map(|all| all.0 + all.199))
        })
        .await
        .unwrap()
    });
    assert_eq!((first, last, sum), (0, 199, Ok(199)));
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
