//! `select!`: the first future to finish wins and the others drop; preconditions and
//! refutable patterns disable branches; `else` runs once all are disabled, and without it
//! `select!` panics; `biased;` polls in order while the default spreads the first poll over
//! the branches; handlers run after the futures are dropped and their `return`, `?`, `break`
//! and `continue` act on the code around; `mut` and `ref` bindings; `IntoFuture`; user types
//! named like the expansion's own; the futures drop in branch order; a borrowed temporary
//! lives as long as the `select!`; an `else` alone; a precondition of any type that negates
//! to `bool`; a future that never returns warns of nothing; a block handler that a user's
//! macro passes in as a fragment needs no `,` after it; the state is the futures and three
//! words, however many there are, and a mask of disabled branches as wide as they need; 64
//! branches, one a `join!` of 64 futures, spawned; user types named like the primitive types
//! the expansion uses.
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
fn the_first_to_finish_wins_and_the_others_drop() {
    paused(1).block_on(async {
        let dropped = Arc::new(AtomicUsize::new(0));
        let guard = DropCounter(dropped.clone());
        let start = Instant::now();
        let winner = escapement::select! {
            _ = sleep(Duration::from_millis(30)) => "slow",
            _ = sleep(Duration::from_millis(10)) => "fast",
            _ = async move {
                let _guard = guard;
                pending::<()>().await
            } => "never",
        };
        assert_eq!(winner, "fast");
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the losers are dropped");
    });
}

#[test]
fn a_refutable_pattern_that_fails_disables_its_branch() {
    paused(1).block_on(async {
        let value = escapement::select! {
            Some(n) = async { None::<u32> } => n,
            n = async {
                sleep(Duration::from_millis(5)).await;
                7
            } => n + 100,
        };
        assert_eq!(value, 107);
    });
}

#[test]
fn else_runs_once_every_branch_is_disabled() {
    paused(1).block_on(async {
        let ran_future = Arc::new(AtomicUsize::new(0));
        let polled = ran_future.clone();
        let value = escapement::select! {
            _ = async move { polled.fetch_add(1, Ordering::SeqCst); }, if false => 1,
            Err(()) = async { Ok::<(), ()>(()) } => 2,
            else => 3,
        };
        assert_eq!(value, 3);
        assert_eq!(
            ran_future.load(Ordering::SeqCst),
            0,
            "a disabled future is never polled"
        );
    });
}

/// As with tokio: the condition is negated as written, so a `&bool` (a flag from `iter()`) is
/// one too, and an operator in it binds before the negation.
#[test]
fn a_precondition_is_any_expression_that_negates_to_bool() {
    paused(1).block_on(async {
        let mut chosen = Vec::new();
        for enabled in [true, false].iter() {
            chosen.push(escapement::select! {
                n = ready(1), if enabled => n,
                else => 0,
            });
        }
        assert_eq!(chosen, [1, 0]);
        let (on, off) = (true, false);
        let value = escapement::select! {
            n = ready(1), if on && off => n,
            n = ready(2), if off || on => n,
        };
        assert_eq!(value, 2);
    });
}

/// A branch whose future never returns (its output is `!`) leaves code in the expansion that
/// cannot run; that is no warning here, as with tokio.
#[test]
#[deny(unreachable_code)]
fn a_future_that_never_returns_warns_of_no_unreachable_code() {
    paused(1).block_on(async {
        let value = escapement::select! {
            _ = forever() => 0,
            n = ready(1) => n,
        };
        assert_eq!(value, 1);
        let value = escapement::select! {
            biased;
            _ = forever() => 0,
            n = ready(2) => n,
        };
        assert_eq!(value, 2);
    });
}

#[test]
#[should_panic(expected = "all branches are disabled and there is no else branch")]
fn without_else_select_panics_once_every_branch_is_disabled() {
    paused(1).block_on(async {
        escapement::select! {
            Some(()) = async { None } => {}
            _ = ready(()), if false => {}
        }
    });
}

#[test]
fn biased_polls_in_order() {
    paused(1).block_on(async {
        for _ in 0..50 {
            let first = escapement::select! {
                biased;
                n = ready(1) => n,
                n = ready(2) => n,
                n = ready(3) => n,
            };
            assert_eq!(first, 1);
        }
    });
}

#[test]
fn without_biased_every_ready_branch_gets_chosen() {
    paused(1).block_on(async {
        let mut chosen = [0u32; 3];
        for _ in 0..300 {
            let index = escapement::select! {
                n = ready(0) => n,
                n = ready(1) => n,
                n = ready(2) => n,
            };
            chosen[index] += 1;
        }
        assert!(chosen.iter().all(|&n| n > 30), "{chosen:?}");
    });
}

#[test]
fn handlers_run_after_the_futures_drop_and_control_the_code_around() {
    async fn first_error(values: &mut Vec<u32>) -> Result<u32, &'static str> {
        let mut turns = 0;
        loop {
            turns += 1;
            // The future borrows `values`; the handler may use it again.
            let next = escapement::select! {
                n = async { values.pop() } => n,
            };
            match next {
                Some(0) => {
                    escapement::select! {
                        r = ready(Err("zero")) => r?,
                    }
                }
                Some(n) if n % 2 == 0 => continue,
                Some(_) => {}
                None => {
                    escapement::select! {
                        _ = ready(()) => return Ok(turns),
                    }
                }
            }
            escapement::select! {
                _ = ready(()) => {
                    values.push(0);
                    if turns > 10 {
                        break;
                    }
                }
            }
        }
        Ok(0)
    }
    paused(1).block_on(async {
        assert_eq!(first_error(&mut vec![2, 4]).await, Ok(3));
        assert_eq!(first_error(&mut vec![1]).await, Err("zero"));
    });
}

#[test]
fn mut_and_ref_bindings_and_into_future() {
    struct Later(u32);

    impl IntoFuture for Later {
        type Output = Vec<u32>;
        type IntoFuture = std::future::Ready<Vec<u32>>;

        fn into_future(self) -> Self::IntoFuture {
            ready(vec![self.0])
        }
    }

    paused(1).block_on(async {
        let grown = escapement::select! {
            mut values = Later(1) => {
                values.push(2);
                values
            }
        };
        assert_eq!(grown, [1, 2]);
        let length = escapement::select! {
            Some(ref text) = ready(Some(String::from("abc"))) => text.len(),
        };
        assert_eq!(length, 3);
        let pushed = escapement::select! {
            ref mut text = ready(String::from("a")) => {
                text.push('b');
                text.clone()
            }
        };
        assert_eq!(pushed, "ab");
        let grown = escapement::select! {
            Some(ref mut values) = ready(Some(vec![1])) => {
                values.push(2);
                values.len()
            }
        };
        assert_eq!(grown, 2);
    });
}

/// Ready at its second poll, counting its polls.
struct SecondPoll(Arc<AtomicUsize>);

impl Future for SecondPoll {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

#[test]
fn a_pending_branch_is_polled_again_when_woken() {
    paused(1).block_on(async {
        let polls = Arc::new(AtomicUsize::new(0));
        escapement::select! {
            () = SecondPoll(polls.clone()) => {}
            () = pending::<()>() => unreachable!("never ready"),
        }
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn user_types_named_like_the_expansions_own_are_untouched() {
    #[derive(Debug, PartialEq)]
    enum Out {
        A,
    }
    #[derive(Debug, PartialEq)]
    struct B0(u8);

    paused(1).block_on(async {
        let chosen = escapement::select! {
            Out::A = ready(Out::A) => {
                let out: Out = Out::A;
                out
            }
        };
        assert_eq!(chosen, Out::A);
        let wrapped = escapement::select! {
            B0(n) = ready(B0(4)) => B0(n + 1),
        };
        assert_eq!(wrapped, B0(5));
    });
}

#[test]
fn a_nested_mut_reference_pattern_binds_through_it() {
    paused(1).block_on(async {
        let mut value = 1;
        let doubled = escapement::select! {
            Some(&mut n) = ready(Some(&mut value)) => n * 2,
        };
        assert_eq!(doubled, 2);
    });
}

#[test]
fn a_top_level_reference_pattern_binds_through_the_output() {
    paused(1).block_on(async {
        let mut value = 3;
        let tripled = escapement::select! {
            &mut n = ready(&mut value) => n * 3,
        };
        assert_eq!(tripled, 9);
        // A refutable pattern under the reference still disables its branch when it fails.
        let pair = (0, Some(5));
        let picked = escapement::select! {
            &(_, Some(1)) = ready(&pair) => "one",
            &(_, Some(n)) = ready(&pair) => if n == 5 { "five" } else { "other" },
        };
        assert_eq!(picked, "five");
    });
}

#[test]
fn the_futures_drop_in_the_order_of_their_branches() {
    paused(1).block_on(async {
        let log = RefCell::new(Vec::new());
        let log = &log;
        let winner = escapement::select! {
            biased;
            _ = async move {
                let _named = Named("first", log);
                pending::<()>().await
            } => "first",
            _ = async move {
                let _named = Named("second", log);
                pending::<()>().await
            } => "second",
            _ = async move {
                let _named = Named("third", log);
                pending::<()>().await
            } => "third",
            _ = sleep(Duration::from_millis(1)) => "sleep",
        };
        assert_eq!(winner, "sleep");
        assert_eq!(*log.borrow(), ["first", "second", "third"]);
    });
}

#[test]
fn a_temporary_borrowed_by_a_branch_lives_as_long_as_the_select() {
    paused(1).block_on(async {
        let value = escapement::select! {
            x = &mut ready(1) => x,
            _ = &mut pending::<()>() => 0,
        };
        assert_eq!(value, 1);
    });
}

#[test]
fn an_else_branch_alone_is_its_handler() {
    paused(1).block_on(async {
        assert_eq!(escapement::select! { else => 1 }, 1);
        assert_eq!(escapement::select! { biased; else => 2, }, 2);
    });
}

/// Passes its handlers on as `block` fragments, with no `,` after the first.
macro_rules! first_ready {
    ($first:pat = $a:expr => $on_a:block $second:pat = $b:expr => $on_b:block) => {
        escapement::select! { biased; $first = $a => $on_a $second = $b => $on_b }
    };
}

#[test]
fn a_block_handler_passed_in_by_a_macro_needs_no_comma() {
    paused(1).block_on(async {
        let first = first_ready!(x = ready(1) => { x * 10 } y = ready(2) => { y });
        assert_eq!(first, 10);
        let second = first_ready!(x = pending::<u32>() => { x } y = ready(2) => { y * 10 });
        assert_eq!(second, 20);
    });
}

/// Stands for any future: 16 bytes of state, an 8-byte output.
async fn leaf(x: u64) -> u64 {
    x
}

/// The futures sit in one pinned value that the poll reaches through one pointer, and the
/// disabled branches in the narrowest integer with a bit for each, so an `async` block around
/// `select!` holds the futures and three words more, for any number of branches: 72 bytes for
/// three, as tokio's. (With a pinned local per future, each borrowed by the poll, and a `u64`
/// borrowed too, it was two words more per future and two for the mask: 120.)
#[test]
fn the_state_is_the_futures_and_three_words() {
    use std::mem::size_of_val;

    let words = 3 * size_of::<usize>();
    let one = size_of_val(&leaf(1));
    let three = async {
        escapement::select! {
            a = leaf(1) => a,
            b = leaf(2) => b,
            c = leaf(3) => c,
        }
    };
    assert!(
        size_of_val(&three) <= 3 * one + words,
        "{}",
        size_of_val(&three)
    );
    let nine = async {
        escapement::select! {
            biased;
            a = leaf(1) => a,
            b = leaf(2) => b,
            c = leaf(3) => c,
            d = leaf(4) => d,
            e = leaf(5) => e,
            f = leaf(6) => f,
            g = leaf(7) => g,
            h = leaf(8) => h,
            i = leaf(9) => i,
            else => 0,
        }
    };
    assert!(
        size_of_val(&nine) <= 9 * one + words,
        "{}",
        size_of_val(&nine)
    );
}

/// The mask of disabled branches is as wide as the branches need (8, 16, 32 or 64 bits):
/// at each width's edge, the last branch alone enabled is the one chosen, and with none
/// enabled `else` runs.
#[test]
fn the_mask_of_disabled_branches_fits_every_count() {
    // The branches `0 1 ..`; those whose number passes the precondition are enabled.
    macro_rules! last_of {
        ($($i:literal)*) => {{
            let last = [$($i),*].len() as u32 - 1;
            let is_last = |i: u32| i == last;
            let only_the_last = escapement::select! {
                $(value = ready($i), if is_last($i) => value,)*
                else => u32::MAX,
            };
            let never = |_: u32| false;
            let none = escapement::select! {
                $(value = ready($i), if never($i) => value,)*
                else => u32::MAX,
            };
            (only_the_last, none)
        }};
    }
    paused(1).block_on(async {
        assert_eq!(last_of!(0 1 2 3 4 5 6 7), (7, u32::MAX));
        assert_eq!(last_of!(0 1 2 3 4 5 6 7 8), (8, u32::MAX));
        assert_eq!(
            last_of!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
            (15, u32::MAX)
        );
        assert_eq!(
            last_of!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
            16
            ),
            (16, u32::MAX)
        );
        assert_eq!(
            last_of!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
            16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            ),
            (31, u32::MAX)
        );
        assert_eq!(
            last_of!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
            16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32
            ),
            (32, u32::MAX)
        );
        assert_eq!(
            last_of!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
            16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47
            48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
            ),
            (63, u32::MAX)
        );
    });
}

/// The most branches a `select!` takes, one of them a `join!` of 64 futures, in a spawned
/// task: the futures nest in balanced trees of pairs, so the compiler's checks of the type
/// (its drop, its layout, `Send`) stay within its recursion limit, which a chain of pairs one
/// level per future, nested across the two macros, passed.
#[test]
fn sixty_four_branches_around_a_join_of_sixty_four_spawned() {
    let chosen = paused(1).block_on(async {
        escapement::spawn(async {
            escapement::select! {
                value = async {
                    let all = escapement::join!(
                        ready(0u32), ready(1u32), ready(2u32), ready(3u32), ready(4u32), ready(5u32), ready(6u32), ready(7u32),
                        ready(8u32), ready(9u32), ready(10u32), ready(11u32), ready(12u32), ready(13u32), ready(14u32), ready(15u32),
                        ready(16u32), ready(17u32), ready(18u32), ready(19u32), ready(20u32), ready(21u32), ready(22u32), ready(23u32),
                        ready(24u32), ready(25u32), ready(26u32), ready(27u32), ready(28u32), ready(29u32), ready(30u32), ready(31u32),
                        ready(32u32), ready(33u32), ready(34u32), ready(35u32), ready(36u32), ready(37u32), ready(38u32), ready(39u32),
                        ready(40u32), ready(41u32), ready(42u32), ready(43u32), ready(44u32), ready(45u32), ready(46u32), ready(47u32),
                        ready(48u32), ready(49u32), ready(50u32), ready(51u32), ready(52u32), ready(53u32), ready(54u32), ready(55u32),
                        ready(56u32), ready(57u32), ready(58u32), ready(59u32), ready(60u32), ready(61u32), ready(62u32), ready(63u32),
                    );
                    all.63
                } => value,
                _ = pending::<()>() => 1,
                _ = pending::<()>() => 2,
                _ = pending::<()>() => 3,
                _ = pending::<()>() => 4,
                _ = pending::<()>() => 5,
                _ = pending::<()>() => 6,
                _ = pending::<()>() => 7,
                _ = pending::<()>() => 8,
                _ = pending::<()>() => 9,
                _ = pending::<()>() => 10,
                _ = pending::<()>() => 11,
                _ = pending::<()>() => 12,
                _ = pending::<()>() => 13,
                _ = pending::<()>() => 14,
                _ = pending::<()>() => 15,
                _ = pending::<()>() => 16,
                _ = pending::<()>() => 17,
                _ = pending::<()>() => 18,
                _ = pending::<()>() => 19,
                _ = pending::<()>() => 20,
                _ = pending::<()>() => 21,
                _ = pending::<()>() => 22,
                _ = pending::<()>() => 23,
                _ = pending::<()>() => 24,
                _ = pending::<()>() => 25,
                _ = pending::<()>() => 26,
                _ = pending::<()>() => 27,
                _ = pending::<()>() => 28,
                _ = pending::<()>() => 29,
                _ = pending::<()>() => 30,
                _ = pending::<()>() => 31,
                _ = pending::<()>() => 32,
                _ = pending::<()>() => 33,
                _ = pending::<()>() => 34,
                _ = pending::<()>() => 35,
                _ = pending::<()>() => 36,
                _ = pending::<()>() => 37,
                _ = pending::<()>() => 38,
                _ = pending::<()>() => 39,
                _ = pending::<()>() => 40,
                _ = pending::<()>() => 41,
                _ = pending::<()>() => 42,
                _ = pending::<()>() => 43,
                _ = pending::<()>() => 44,
                _ = pending::<()>() => 45,
                _ = pending::<()>() => 46,
                _ = pending::<()>() => 47,
                _ = pending::<()>() => 48,
                _ = pending::<()>() => 49,
                _ = pending::<()>() => 50,
                _ = pending::<()>() => 51,
                _ = pending::<()>() => 52,
                _ = pending::<()>() => 53,
                _ = pending::<()>() => 54,
                _ = pending::<()>() => 55,
                _ = pending::<()>() => 56,
                _ = pending::<()>() => 57,
                _ = pending::<()>() => 58,
                _ = pending::<()>() => 59,
                _ = pending::<()>() => 60,
                _ = pending::<()>() => 61,
                _ = pending::<()>() => 62,
                _ = pending::<()>() => 63,
            }
        })
        .await
        .unwrap()
    });
    assert_eq!(chosen, 63);
}

/// A user's types named `u8` and `u32` leave the expansion's own integers alone.
#[test]
fn user_types_named_like_primitive_types_are_untouched() {
    #[allow(non_camel_case_types, dead_code)]
    struct u8;
    #[allow(non_camel_case_types, dead_code)]
    struct u32;
    paused(1).block_on(async {
        let chosen = escapement::select! {
            value = ready(1) => value,
            _ = pending::<()>() => 0,
        };
        assert_eq!(chosen, 1);
        let chosen = escapement::select! {
            biased;
            _ = pending::<()>() => 0,
            value = ready(2) => value,
            else => 3,
        };
        assert_eq!(chosen, 2);
    });
}
