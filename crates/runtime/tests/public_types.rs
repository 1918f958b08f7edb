//! The public types have the auto traits and impls that tokio's counterparts have, so code
//! moves between the two: the futures and handles are `Send` (and `Sync` where tokio's are),
//! `Interval` and `JoinHandle` are `Unpin`, errors are `Send + Sync + 'static` errors, and
//! every public type implements `Debug`. Checked at compile time; the test only has to build.

use std::error::Error;
use std::fmt::Debug;
use std::future::Ready;

use escapement::task::{AbortHandle, JoinSet};
use escapement::time::error::Elapsed;
use escapement::time::{Advance, Instant, Interval, MissedTickBehavior, Sleep, Timeout};
use escapement::{Builder, EnterGuard, Handle, JoinError, JoinHandle, Runtime, TryCurrentError};

fn send_sync<T: Send + Sync>() {}
fn unpin<T: Unpin>() {}
fn debug<T: Debug>() {}
fn error<T: Error + Send + Sync + 'static>() {}

#[test]
fn auto_traits_match_tokio() {
    send_sync::<Runtime>();
    send_sync::<Handle>();
    send_sync::<Builder>();
    send_sync::<Sleep>();
    send_sync::<Timeout<Ready<()>>>();
    send_sync::<Interval>();
    send_sync::<JoinHandle<String>>();
    send_sync::<JoinSet<String>>();
    send_sync::<AbortHandle>();
    send_sync::<JoinError>();
    send_sync::<Elapsed>();
    send_sync::<Instant>();
    send_sync::<Advance>();
    unpin::<Interval>();
    unpin::<JoinHandle<()>>();
    unpin::<Instant>();
    unpin::<JoinSet<()>>();
}

#[test]
fn errors_are_std_errors() {
    error::<Elapsed>();
    error::<JoinError>();
    error::<TryCurrentError>();
}

#[test]
fn every_public_type_is_debug() {
    debug::<Runtime>();
    debug::<Handle>();
    debug::<Builder>();
    debug::<EnterGuard<'static>>();
    debug::<JoinHandle<()>>();
    debug::<JoinSet<()>>();
    debug::<AbortHandle>();
    debug::<JoinError>();
    debug::<TryCurrentError>();
    debug::<Sleep>();
    debug::<Timeout<Ready<()>>>();
    debug::<Interval>();
    debug::<MissedTickBehavior>();
    debug::<Instant>();
    debug::<Elapsed>();
    debug::<Advance>();
}
