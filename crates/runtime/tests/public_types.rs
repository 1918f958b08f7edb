//! The public types have the auto traits and impls that tokio's counterparts have, so code
//! moves between the two: the futures and handles are `Send` (and `Sync` where tokio's are),
//! `Interval` and `JoinHandle` are `Unpin`, `EnterGuard` is `Sync` but not `Send`, errors
//! are `Send + Sync + 'static` errors, the runtime, its handles and `JoinSet` are unwind
//! safe, and every public type implements `Debug`. Checked at compile time; those tests only
//! have to build. The others check that a runtime works after a panic unwinds out of
//! `block_on`, that an `AbortHandle` clones, and that a `Sleep` is no larger than tokio's.

use std::error::Error;
use std::fmt::Debug;
use std::future::Ready;
use std::panic::{RefUnwindSafe, UnwindSafe};

use escapement::runtime::RuntimeFlavor;
use escapement::task::coop::{Coop, RestoreOnPending};
use escapement::task::futures::{RunUntil, TaskLocalFuture};
use escapement::task::{
    AbortHandle, AccessError, Id, JoinSet, LocalEnterGuard, LocalKey, LocalSet, Unconstrained,
};
use escapement::time::error::Elapsed;
use escapement::time::{Advance, Instant, Interval, MissedTickBehavior, Sleep, Timeout};
use escapement::{Builder, EnterGuard, Handle, JoinError, JoinHandle, Runtime, TryCurrentError};

fn send_sync<T: Send + Sync>() {}
fn unpin<T: Unpin>() {}
fn debug<T: Debug>() {}
fn error<T: Error + Send + Sync + 'static>() {}
fn unwind_safe<T: UnwindSafe + RefUnwindSafe>() {}

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
    send_sync::<Unconstrained<Ready<()>>>();
    send_sync::<Coop<Ready<()>>>();
    send_sync::<Id>();
    send_sync::<RuntimeFlavor>();
    send_sync::<LocalKey<String>>();
    send_sync::<TaskLocalFuture<String, Ready<()>>>();
    send_sync::<AccessError>();
    unpin::<Interval>();
    unpin::<JoinHandle<()>>();
    unpin::<Instant>();
    unpin::<JoinSet<()>>();
    unpin::<LocalSet>();
}

#[test]
fn handles_are_unwind_safe_as_tokios() {
    // `catch_unwind(|| rt.block_on(..))` must compile, as it does with tokio.
    unwind_safe::<Runtime>();
    unwind_safe::<Handle>();
    unwind_safe::<JoinHandle<String>>();
    unwind_safe::<AbortHandle>();
    unwind_safe::<JoinSet<String>>();
    unwind_safe::<Instant>();
    unwind_safe::<Elapsed>();
    unwind_safe::<Id>();
}

#[test]
fn a_runtime_is_usable_after_a_panic_unwinds_out_of_block_on() {
    let rt = Runtime::new().unwrap();
    let caught = std::panic::catch_unwind(|| {
        rt.block_on(async {
            escapement::spawn(async {}).await.unwrap();
            panic!("out of block_on");
        })
    });
    assert!(caught.is_err());
    let answer = rt.block_on(async { escapement::spawn(async { 42 }).await.unwrap() });
    assert_eq!(answer, 42);
}

#[test]
fn abort_handles_clone() {
    let rt = Runtime::new().unwrap();
    rt.block_on(async {
        let task = escapement::spawn(std::future::pending::<()>());
        let first = task.abort_handle();
        let second = first.clone();
        drop(first);
        assert_eq!(second.id(), task.id());
        second.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        assert!(second.is_finished());
    });
}

/// Compiles only while `T` is not `Send`: were it `Send`, both impls would apply and the
/// call below could not pick one.
trait NotSend<Which> {
    fn check() {}
}
impl<T: ?Sized> NotSend<()> for T {}
impl<T: ?Sized + Send> NotSend<u8> for T {}

fn sync<T: Sync>() {}

#[test]
fn an_enter_guard_stays_on_its_thread() {
    // As tokio's: a guard sent away or held across an `.await` in a task would change the
    // context of whatever thread it ends up on. A reference to one exposes nothing, so it is
    // `Sync`, as tokio's is: a struct that holds one may be shared.
    <EnterGuard<'static> as NotSend<_>>::check();
    sync::<EnterGuard<'static>>();
}

#[test]
fn errors_are_std_errors() {
    error::<Elapsed>();
    error::<JoinError>();
    error::<TryCurrentError>();
    error::<AccessError>();
}

#[test]
fn every_public_type_is_debug() {
    debug::<Runtime>();
    debug::<Handle>();
    debug::<Builder>();
    debug::<Unconstrained<Ready<()>>>();
    debug::<Coop<Ready<()>>>();
    debug::<RestoreOnPending>();
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
    debug::<Id>();
    debug::<RuntimeFlavor>();
    debug::<LocalKey<String>>();
    debug::<TaskLocalFuture<String, Ready<()>>>();
    debug::<AccessError>();
    debug::<LocalSet>();
    debug::<LocalEnterGuard>();
    debug::<RunUntil<'static, Ready<()>>>();
}

#[test]
fn a_sleep_is_no_larger_than_tokios() {
    // tokio 1.54's `Sleep` is 112 bytes on 64-bit targets; a timer embedded in every
    // `timeout` should cost no more memory than it does there.
    #[cfg(target_pointer_width = "64")]
    assert!(
        std::mem::size_of::<Sleep>() <= 112,
        "Sleep is {} bytes",
        std::mem::size_of::<Sleep>()
    );
}
