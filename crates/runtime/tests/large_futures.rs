//! Large futures and closures: one that holds a few hundred KiB goes through every spawn and
//! `spawn_blocking` on a thread with a 2 MiB stack (std's default) without overflowing it, as
//! on tokio: the runtime boxes it where it enters rather than copying it down the calls that
//! make its task (`task/spawn.rs`). `block_on`, which pins its future in place, takes one
//! twice as large. A regression aborts this test binary ("has overflowed its stack").

use std::hint::black_box;
use std::time::Duration;

use escapement::task::{JoinSet, LocalSet};

/// The stack of the thread each case runs on.
const STACK: usize = 2 << 20;

/// The size of the state a large future holds across an await, and a large closure captures;
/// twice that for `block_on`. In an unoptimised build, before the runtime boxed them, each of
/// the four tests here that spawn overflowed [`STACK`].
const LARGE: usize = 256 << 10;

/// Runs `case` on a thread of its own with a [`STACK`] stack, and returns its value. Each
/// case makes one large value: an unoptimised build gives every temporary of a function a slot
/// of its own, so a function that made several would hold them all on its stack.
fn on_a_2_mib_stack<T: Send>(case: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(STACK)
            .spawn_scoped(scope, case)
            .expect("a thread")
            .join()
            .expect("the case returns")
    })
}

/// A future of at least [`LARGE`] bytes, which sleeps with its buffer live; its output is
/// `seed`, read back from the buffer.
fn large_future(seed: u8) -> impl std::future::Future<Output = u8> + Send + 'static {
    future_of::<LARGE>(seed)
}

/// A future of at least `N` bytes, as [`large_future`].
async fn future_of<const N: usize>(seed: u8) -> u8 {
    let mut buffer = [0u8; N];
    buffer[N - 1] = seed;
    escapement::time::sleep(Duration::from_millis(1)).await;
    black_box(&mut buffer);
    buffer[N - 1]
}

/// A closure that captures a buffer of [`LARGE`] bytes and returns its last byte.
fn large_closure(seed: u8) -> impl FnOnce() -> u8 + Send + 'static {
    let mut buffer = [0u8; LARGE];
    buffer[LARGE - 1] = seed;
    move || black_box(buffer)[LARGE - 1]
}

/// The outputs of the two tasks in `set`, smallest first.
async fn two_outputs(set: &mut JoinSet<u8>) -> [u8; 2] {
    let mut outputs = [0; 2];
    for output in &mut outputs {
        *output = set.join_next().await.expect("a task").unwrap();
    }
    outputs.sort_unstable();
    outputs
}

fn runtime() -> escapement::Runtime {
    escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime")
}

#[test]
fn the_futures_are_large() {
    assert!(size_of_val(&large_future(0)) >= LARGE);
    assert!(size_of_val(&large_closure(0)) >= LARGE);
}

#[test]
fn spawn_from_inside_and_outside_the_runtime() {
    let rt = runtime();
    let outside = on_a_2_mib_stack(|| rt.spawn(large_future(1)));
    let from_handle = on_a_2_mib_stack(|| rt.handle().spawn(large_future(2)));
    let entered = on_a_2_mib_stack(|| {
        let _guard = rt.enter();
        escapement::spawn(large_future(3))
    });
    // From a task on a worker, whose stack is 2 MiB too, in a function of its own.
    #[inline(never)]
    fn spawn_large(seed: u8) -> escapement::JoinHandle<u8> {
        escapement::spawn(large_future(seed))
    }
    let inside = rt.spawn(async { spawn_large(4).await.unwrap() });
    let outputs = rt.block_on(async {
        [
            outside.await.unwrap(),
            from_handle.await.unwrap(),
            entered.await.unwrap(),
            inside.await.unwrap(),
        ]
    });
    assert_eq!(outputs, [1, 2, 3, 4]);
}

#[test]
fn block_on_on_both_flavors_and_from_a_handle() {
    let rt = runtime();
    let current = escapement::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let outputs = [
        on_a_2_mib_stack(|| rt.block_on(future_of::<{ 2 * LARGE }>(5))),
        on_a_2_mib_stack(|| rt.handle().block_on(future_of::<{ 2 * LARGE }>(6))),
        on_a_2_mib_stack(|| current.block_on(future_of::<{ 2 * LARGE }>(7))),
    ];
    assert_eq!(outputs, [5, 6, 7]);
}

#[test]
fn spawn_blocking_by_every_path() {
    let rt = runtime();
    let from_runtime = on_a_2_mib_stack(|| rt.spawn_blocking(large_closure(8)));
    let from_handle = on_a_2_mib_stack(|| rt.handle().spawn_blocking(large_closure(9)));
    let outputs = rt.block_on(async {
        let inside = on_a_2_mib_stack(|| {
            let _guard = rt.enter();
            escapement::task::spawn_blocking(large_closure(10))
        });
        let mut set = JoinSet::new();
        on_a_2_mib_stack(|| {
            let _guard = rt.enter();
            set.spawn_blocking(large_closure(11))
        });
        on_a_2_mib_stack(|| set.spawn_blocking_on(large_closure(12), rt.handle()));
        let from_the_set = two_outputs(&mut set).await;
        [
            from_runtime.await.unwrap(),
            from_handle.await.unwrap(),
            inside.await.unwrap(),
            from_the_set[0],
            from_the_set[1],
        ]
    });
    assert_eq!(outputs, [8, 9, 10, 11, 12]);
}

#[test]
fn join_set_spawns() {
    let rt = runtime();
    let outputs = rt.block_on(async {
        let mut set = JoinSet::new();
        on_a_2_mib_stack(|| {
            let _guard = rt.enter();
            set.spawn(large_future(13))
        });
        on_a_2_mib_stack(|| set.spawn_on(large_future(14), rt.handle()));
        two_outputs(&mut set).await
    });
    assert_eq!(outputs, [13, 14]);
}

/// A `LocalSet`'s tasks are spawned on its own thread: the whole case runs on a 2 MiB stack,
/// each spawn in a function of its own.
#[test]
fn local_set_spawns() {
    #[inline(never)]
    fn onto(local: &LocalSet, seed: u8) -> escapement::JoinHandle<u8> {
        local.spawn_local(large_future(seed))
    }
    #[inline(never)]
    fn onto_the_current_set(seed: u8) -> escapement::JoinHandle<u8> {
        escapement::task::spawn_local(large_future(seed))
    }
    #[inline(never)]
    fn into_a_join_set(set: &mut JoinSet<u8>, seed: u8) {
        set.spawn_local(large_future(seed));
    }
    #[inline(never)]
    fn into_a_join_set_on(set: &mut JoinSet<u8>, local: &LocalSet, seed: u8) {
        set.spawn_local_on(large_future(seed), local);
    }

    let outputs = on_a_2_mib_stack(|| {
        let rt = runtime();
        let local = LocalSet::new();
        let mut set = JoinSet::new();
        let before = onto(&local, 15);
        into_a_join_set_on(&mut set, &local, 16);
        local.block_on(&rt, async {
            let inside = onto_the_current_set(17);
            into_a_join_set(&mut set, 18);
            let from_the_set = two_outputs(&mut set).await;
            [
                before.await.unwrap(),
                inside.await.unwrap(),
                from_the_set[0],
                from_the_set[1],
            ]
        })
    });
    assert_eq!(outputs, [15, 17, 16, 18]);
}
