//! [`Builder`]: a runtime's configuration.

use std::fmt;
use std::io;
use std::time::Duration;

use super::thread_hooks::{ThreadHooks, ThreadNames};
use super::Runtime;
use crate::loom::CallbackArc;
use crate::scheduler::worker::DEFAULT_EVENT_INTERVAL;

mod build;

/// The default length of a timer tick.
const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// The finest timer tick a runtime accepts.
const MIN_TICK: Duration = Duration::from_micros(10);

/// The coarsest timer tick: a tick longer than a second would delay every timer by up to
/// that much, and one near `Duration::MAX` would fire none in a lifetime.
const MAX_TICK: Duration = Duration::from_secs(1);

/// The default cap on `spawn_blocking` threads.
const DEFAULT_MAX_BLOCKING_THREADS: usize = 512;

/// How long a `spawn_blocking` thread waits for another job by default.
const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// How many turns a current-thread runtime's worker takes between two looks at the injector
/// first (its one thread also runs the futures in `block_on`): tokio's current-thread
/// default. A multi-threaded runtime's workers tune theirs (`QueueInterval::Tuned`).
const CURRENT_THREAD_GLOBAL_QUEUE_INTERVAL: u32 = 31;

/// Configures and builds a [`Runtime`].
///
/// # Examples
///
/// ```
/// let rt = escapement::Builder::new()
///     .worker_threads(2)
///     .thread_name("my-app")
///     .build()
///     .unwrap();
/// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
/// ```
pub struct Builder {
    worker_threads: Option<usize>,
    /// Made by [`Builder::new_current_thread`]: one worker, whatever `worker_threads` says.
    current_thread: bool,
    /// The runtime's own name, which [`Handle::name`](super::Handle::name) returns.
    name: Option<String>,
    start_paused: bool,
    timer_resolution: Duration,
    metrics: bool,
    max_blocking_threads: usize,
    keep_alive: Duration,
    /// Every this many turns a worker takes from the injector before its own queue; `None`
    /// for the flavor's default (`Shared::new`).
    global_queue_interval: Option<u32>,
    /// Every this many turns a worker queues again the tasks held back after a yield, and a
    /// current-thread runtime looks at its `block_on` future.
    event_interval: u32,
    /// Names, stack size and callbacks of every thread the runtime starts.
    hooks: ThreadHooks,
}

impl Builder {
    /// A builder with the defaults: one worker per available CPU, threads named
    /// `escapement-worker-N`.
    pub fn new() -> Builder {
        Builder {
            worker_threads: None,
            current_thread: false,
            name: None,
            start_paused: false,
            timer_resolution: DEFAULT_TICK,
            metrics: true,
            max_blocking_threads: DEFAULT_MAX_BLOCKING_THREADS,
            keep_alive: DEFAULT_KEEP_ALIVE,
            global_queue_interval: None,
            event_interval: DEFAULT_EVENT_INTERVAL,
            hooks: ThreadHooks::default(),
        }
    }

    /// The same as [`Builder::new`]: a runtime with worker threads of its own. Named as
    /// tokio's, so that a builder chain ports by changing the import.
    pub fn new_multi_thread() -> Builder {
        Builder::new()
    }

    /// A builder for a current-thread runtime, as tokio's: it starts no worker thread, and
    /// its tasks and timers run on the thread in [`block_on`](Runtime::block_on), while it
    /// is in `block_on`. A task spawned from the future runs only once the future yields, so
    /// the order of events is the same from run to run. Outside `block_on` nothing runs:
    /// spawned tasks wait, and timers fire late, when a `block_on` next runs. Two threads in
    /// `block_on` at once take turns: one runs the tasks, the other polls its own future
    /// until the first returns and hands the tasks over.
    ///
    /// [`block_in_place`](crate::task::block_in_place) panics on such a runtime, as on
    /// tokio's; [`spawn_blocking`](crate::task::spawn_blocking) works as on any runtime. As
    /// with tokio's, a later [`worker_threads`](Builder::worker_threads) does not change the
    /// count (it still panics for zero). Spawned tasks must still be `Send`; a
    /// [`LocalSet`](crate::task::LocalSet) runs those that are not.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    ///
    /// let rt = escapement::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     let ran = Arc::new(AtomicBool::new(false));
    ///     let task = escapement::spawn({
    ///         let ran = ran.clone();
    ///         async move { ran.store(true, Ordering::Relaxed) }
    ///     });
    ///     // The task runs on this thread, and not before the future yields.
    ///     assert!(!ran.load(Ordering::Relaxed));
    ///     task.await.unwrap();
    ///     assert!(ran.load(Ordering::Relaxed));
    /// });
    /// ```
    pub fn new_current_thread() -> Builder {
        let mut builder = Builder::new();
        builder.worker_threads(1);
        builder.current_thread = true;
        builder
    }

    /// Does nothing: the timer driver is always on, and escapement has no I/O driver. Named
    /// as tokio's, so that a builder chain ports by changing the import.
    pub fn enable_all(&mut self) -> &mut Builder {
        self
    }

    /// Does nothing, as [`enable_all`](Builder::enable_all): the timer driver is always on.
    pub fn enable_time(&mut self) -> &mut Builder {
        self
    }

    /// Does nothing, as [`enable_all`](Builder::enable_all): escapement has no I/O driver, so
    /// tokio's I/O types do not work on it whatever the builder says. Named as tokio's, so
    /// that a chain such as `new_current_thread().enable_io().enable_time()` ports.
    pub fn enable_io(&mut self) -> &mut Builder {
        self
    }

    /// The number of worker threads. Worker 0 also drives the timers. A builder made by
    /// [`new_current_thread`](Builder::new_current_thread) keeps its one worker, as tokio's.
    ///
    /// # Panics
    ///
    /// If `count` is zero.
    #[track_caller]
    pub fn worker_threads(&mut self, count: usize) -> &mut Builder {
        assert!(count > 0, "a runtime needs at least one worker thread");
        if !self.current_thread {
            self.worker_threads = Some(count);
        }
        self
    }

    /// The most threads [`spawn_blocking`](crate::task::spawn_blocking) runs closures on at
    /// once (default 512). Beyond it, closures wait in a queue for a thread to come free.
    /// A worker that [`block_in_place`](crate::task::block_in_place) hands to a blocking
    /// thread neither waits for this cap nor counts against it.
    ///
    /// # Panics
    ///
    /// If `count` is zero.
    #[track_caller]
    pub fn max_blocking_threads(&mut self, count: usize) -> &mut Builder {
        assert!(count > 0, "max_blocking_threads must be at least 1");
        self.max_blocking_threads = count;
        self
    }

    /// How long a [`spawn_blocking`](crate::task::spawn_blocking) thread with nothing to do
    /// waits for another closure before it exits (default 10 s). `Duration::MAX` keeps idle
    /// threads until the runtime shuts down.
    pub fn thread_keep_alive(&mut self, keep_alive: Duration) -> &mut Builder {
        self.keep_alive = keep_alive;
        self
    }

    /// The threads' name: worker threads get `-N` appended, `N` their index, and
    /// [`spawn_blocking`](crate::task::spawn_blocking) threads `-blocking`. Without it they
    /// are `escapement-worker-N` and `escapement-blocking`. A worker that
    /// [`block_in_place`](crate::task::block_in_place) handed off runs on a `-blocking`
    /// thread.
    ///
    /// A later call, or one to [`thread_name_fn`](Builder::thread_name_fn), replaces it.
    ///
    /// # Panics
    ///
    /// If `name` contains a NUL byte, which no thread name can hold.
    #[track_caller]
    pub fn thread_name(&mut self, name: impl Into<String>) -> &mut Builder {
        let name: String = name.into();
        assert!(
            !name.contains('\0'),
            "escapement::Builder::thread_name: a thread name cannot contain a NUL byte"
        );
        self.hooks.names = ThreadNames::Given(CallbackArc::from(name));
        self
    }

    /// A function that names every thread the runtime starts, workers and
    /// [`spawn_blocking`](crate::task::spawn_blocking) threads alike, called once for each as
    /// it starts, as tokio's. It replaces [`thread_name`](Builder::thread_name), and a later
    /// call to either replaces it.
    ///
    /// A panic in `name` is reported by the panic hook and contained, as a panic in the other
    /// thread callbacks is: that thread gets the default name (`escapement-worker-N`,
    /// `escapement-blocking`), as it does for a name with a NUL byte, which no thread can
    /// have (the standard library panics starting such a thread). Tokio lets either unwind
    /// out of the call that started the thread (`Builder::build` for the workers,
    /// `spawn_blocking` for a blocking thread).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let rt = escapement::Builder::new()
    ///     .worker_threads(2)
    ///     .thread_name_fn(|| {
    ///         static STARTED: AtomicUsize = AtomicUsize::new(0);
    ///         format!("app-{}", STARTED.fetch_add(1, Ordering::Relaxed))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let name = rt.block_on(rt.spawn_blocking(|| {
    ///     std::thread::current().name().map(str::to_owned)
    /// }));
    /// assert_eq!(name.unwrap().as_deref(), Some("app-2"), "after the two workers");
    /// ```
    pub fn thread_name_fn<F>(&mut self, name: F) -> &mut Builder
    where
        F: Fn() -> String + Send + Sync + 'static,
    {
        self.hooks.names = ThreadNames::Callback(CallbackArc::new(name));
        self
    }

    /// The stack size, in bytes, of every thread the runtime starts: its workers and its
    /// [`spawn_blocking`](crate::task::spawn_blocking) threads. Without it they get the
    /// standard library's default (2 MiB, or `RUST_MIN_STACK`). A size below 64 KiB is
    /// raised to that: a worker's own first steps (the setup of its work-stealing queues)
    /// take about half of it in a debug build, and would overflow a smaller stack.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = escapement::Builder::new()
    ///     .thread_stack_size(8 * 1024 * 1024)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(rt.block_on(async { escapement::spawn(async { 3 }).await }).unwrap(), 3);
    /// ```
    pub fn thread_stack_size(&mut self, bytes: usize) -> &mut Builder {
        self.hooks.stack_size = Some(bytes);
        self
    }

    /// A callback every thread the runtime starts runs first, before any of the runtime's
    /// work: its workers, and its [`spawn_blocking`](crate::task::spawn_blocking) threads
    /// (which also carry workers that [`block_in_place`](crate::task::block_in_place)
    /// handed off). A later call replaces the callback. A panic in it is reported by the
    /// panic hook and otherwise ignored; the thread goes on. The runtime is the current one
    /// ([`Handle::current`](super::Handle::current) finds it) while this and the stop
    /// callback run, as in tokio.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let counter = started.clone();
    /// let rt = escapement::Builder::new()
    ///     .worker_threads(2)
    ///     .on_thread_start(move || {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// rt.block_on(rt.spawn_blocking(|| ())).unwrap();
    /// drop(rt);
    /// assert_eq!(started.load(Ordering::SeqCst), 3, "two workers and a blocking thread");
    /// ```
    pub fn on_thread_start<F>(&mut self, callback: F) -> &mut Builder
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.hooks.on_start = Some(CallbackArc::new(callback));
        self
    }

    /// A callback every thread the runtime starts runs last, as it exits, after the
    /// runtime's work (also when that work panicked): the threads of
    /// [`on_thread_start`](Builder::on_thread_start). A later call replaces the callback. A
    /// panic in it is reported by the panic hook and otherwise ignored.
    pub fn on_thread_stop<F>(&mut self, callback: F) -> &mut Builder
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.hooks.on_stop = Some(CallbackArc::new(callback));
        self
    }

    /// A callback a worker runs each time it is about to park, with no task to run, as
    /// tokio's: on the worker's thread, also when the worker then finds work and does not
    /// sleep after all. A later call replaces it. A panic in it is reported by the panic hook
    /// and otherwise ignored; the worker goes on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    ///
    /// let parks = Arc::new(AtomicUsize::new(0));
    /// let counter = parks.clone();
    /// let rt = escapement::Builder::new()
    ///     .worker_threads(1)
    ///     .on_thread_park(move || {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// rt.block_on(async { escapement::time::sleep(std::time::Duration::from_millis(5)).await });
    /// drop(rt);
    /// assert!(parks.load(Ordering::SeqCst) > 0, "the idle worker parked");
    /// ```
    pub fn on_thread_park<F>(&mut self, callback: F) -> &mut Builder
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.hooks.on_park = Some(CallbackArc::new(callback));
        self
    }

    /// A callback a worker runs each time it comes back from a park, before it looks for
    /// tasks again: after each callback of [`on_thread_park`](Builder::on_thread_park). A
    /// later call replaces it; a panic in it is contained as in `on_thread_park`.
    pub fn on_thread_unpark<F>(&mut self, callback: F) -> &mut Builder
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.hooks.on_unpark = Some(CallbackArc::new(callback));
        self
    }

    /// How many turns a worker takes between two looks at the shared queue of tasks woken
    /// or spawned outside the workers before its own queue: smaller is fairer to outside
    /// work, larger favours the worker's own tasks. By default each worker of a
    /// multi-threaded runtime tunes its own to about 200 µs of polling, by a moving average
    /// of how long its polls take, between 2 and 127 turns (61 until it has measured), as
    /// tokio's do; a [current-thread](Builder::new_current_thread) runtime's is 31, as
    /// tokio's. Setting it turns the tuning off.
    ///
    /// # Panics
    ///
    /// If `interval` is zero.
    #[track_caller]
    pub fn global_queue_interval(&mut self, interval: u32) -> &mut Builder {
        assert!(interval > 0, "global_queue_interval must be greater than 0");
        self.global_queue_interval = Some(interval);
        self
    }

    /// How many turns a worker takes between two releases of the tasks that yielded: every
    /// `interval` turns a worker of a multi-threaded runtime queues the tasks it held back
    /// after a yield again, behind its queue, even while other tasks keep it busy, and a
    /// current-thread runtime runs at most `interval` tasks between two polls of its
    /// `block_on` future, then queues its held tasks again. Default 61, as tokio's, whose
    /// workers wake the tasks they deferred at this interval. Unlike tokio's, it does not
    /// pace the look for due timers: worker 0 looks at the top of every turn, pacing its
    /// clock readings by how long its turns take, and there is no I/O driver.
    ///
    /// # Panics
    ///
    /// If `interval` is zero, as tokio's does.
    #[track_caller]
    pub fn event_interval(&mut self, interval: u32) -> &mut Builder {
        assert!(interval > 0, "event_interval must be greater than 0");
        self.event_interval = interval;
        self
    }

    /// Does nothing with a valid capacity: tokio's I/O driver takes up to `capacity` events
    /// from the system each time it polls, and escapement has no I/O driver. Named as
    /// tokio's, so that a builder chain ports by changing the import.
    ///
    /// # Panics
    ///
    /// If `capacity` is zero, as tokio's does.
    #[track_caller]
    pub fn max_io_events_per_tick(&mut self, capacity: usize) -> &mut Builder {
        assert!(capacity > 0, "max_io_events_per_tick must be non-zero");
        self
    }

    /// Does nothing with a valid capacity, as
    /// [`max_io_events_per_tick`](Builder::max_io_events_per_tick): tokio's bound on the I/O
    /// events a worker takes while it still has tasks to run.
    ///
    /// # Panics
    ///
    /// If `capacity` is zero, as tokio's does.
    #[track_caller]
    pub fn max_io_events_per_busy_tick(&mut self, capacity: usize) -> &mut Builder {
        assert!(capacity > 0, "max_io_events_per_busy_tick must be non-zero");
        self
    }

    /// The runtime's name, which [`Handle::name`](super::Handle::name) returns; the threads
    /// keep the names that [`thread_name`](Builder::thread_name) gives them.
    ///
    /// # Panics
    ///
    /// If `name` is empty or only whitespace.
    #[track_caller]
    pub fn name(&mut self, name: impl Into<String>) -> &mut Builder {
        let name = name.into();
        assert!(
            !name.trim().is_empty(),
            "a runtime's name must not be empty"
        );
        self.name = Some(name);
        self
    }

    /// Starts the runtime with its clock paused, as if [`time::pause`](crate::time::pause)
    /// ran first: time moves only by [`time::advance`](crate::time::advance), or jumps to
    /// the next timer whenever every thread of the runtime is idle.
    ///
    /// # Examples
    ///
    /// ```
    /// use escapement::time::{sleep, Duration, Instant};
    ///
    /// let rt = escapement::Builder::new().start_paused(true).build().unwrap();
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_secs(86_400)).await; // returns at once
    ///     assert_eq!(start.elapsed(), Duration::from_secs(86_400));
    /// });
    /// ```
    pub fn start_paused(&mut self, paused: bool) -> &mut Builder {
        self.start_paused = paused;
        self
    }

    /// The timer tick: timers fire at or after their deadline rounded up to a whole tick.
    /// Default 1 ms; the finest is 10 µs, the coarsest 1 s.
    ///
    /// On Linux worker 0 sleeps on a `timerfd` armed for the exact next tick, so a finer tick
    /// gives proportionally finer timers. Below 1 ms it asks to be woken half a tick early (at
    /// most 50 µs) and spins on the clock for the rest, so the kernel's delay in waking a
    /// thread does not make timers late: each such wake-up costs up to that margin of CPU.
    /// Elsewhere worker 0 sleeps with its poll's timeout, whose resolution is the platform's
    /// (milliseconds on Windows).
    ///
    /// # Examples
    ///
    /// ```
    /// use escapement::time::{sleep, Duration, Instant};
    ///
    /// let rt = escapement::Builder::new()
    ///     .timer_resolution(Duration::from_micros(100))
    ///     .build()
    ///     .unwrap();
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_micros(250)).await;
    ///     assert!(start.elapsed() >= Duration::from_micros(250));
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// If `resolution` is below 10 µs or above 1 s.
    #[track_caller]
    pub fn timer_resolution(&mut self, resolution: Duration) -> &mut Builder {
        assert!(
            resolution >= MIN_TICK,
            "timer_resolution must be at least 10 µs, got {resolution:?}"
        );
        assert!(
            resolution <= MAX_TICK,
            "timer_resolution must be at most 1 s, got {resolution:?}"
        );
        self.timer_resolution = resolution;
        self
    }

    /// Whether the runtime keeps metrics (on by default): the timer counters and the workers'
    /// parks and busy time; see [`Runtime::metrics`](crate::Runtime::metrics). Counting costs
    /// each timer operation a thread-local lookup and an uncontended write to a cache line of
    /// its own worker, and each park two clock reads. Off, every counter reads zero, while
    /// `live_timers` and `wheel_cascades`, which the wheel keeps anyway, are still reported
    /// (tokio's worker metrics cannot be turned off).
    pub fn metrics(&mut self, enabled: bool) -> &mut Builder {
        self.metrics = enabled;
        self
    }

    /// Builds the runtime and starts its worker threads.
    ///
    /// # Errors
    ///
    /// If the timer driver's poll cannot be created or a thread cannot be spawned.
    pub fn build(&mut self) -> io::Result<Runtime> {
        self.start()
    }
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("worker_threads", &self.worker_threads)
            .field("current_thread", &self.current_thread)
            .field("name", &self.name)
            .field("start_paused", &self.start_paused)
            .field("timer_resolution", &self.timer_resolution)
            .field("metrics", &self.metrics)
            .field("max_blocking_threads", &self.max_blocking_threads)
            .field("thread_keep_alive", &self.keep_alive)
            .field("global_queue_interval", &self.global_queue_interval)
            .field("event_interval", &self.event_interval)
            .field("thread_stack_size", &self.hooks.stack_size)
            .field("on_thread_start", &self.hooks.on_start.is_some())
            .field("on_thread_stop", &self.hooks.on_stop.is_some())
            .field("on_thread_park", &self.hooks.on_park.is_some())
            .field("on_thread_unpark", &self.hooks.on_unpark.is_some())
            .field("thread_names", &self.hooks.names)
            .finish()
    }
}
